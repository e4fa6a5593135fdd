"""The Seamless Interaction layout of the demo corpus: participant json and the metadata tables.

Part of `corpus.demo`: json holds transcript segments (one per sentence; word times spread
over the sentence in proportion to word length) and VAD segments, straight from the
timeline; the tables are `interactions.csv`, `relationships.csv`, `participants.csv`,
`filelist.csv`, `participant_genders.csv` and `_demo_truth.csv`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from omnisocial.familiarity.corpus.demo.conversations import PLACEHOLDER_PROMPT_ID, PLACEHOLDER_TEXT, Prompt
from omnisocial.familiarity.corpus.demo.design import BIG_FIVE, LABEL, Plan
from omnisocial.familiarity.corpus.demo.timeline import Piece


def participant_json(
    plan: Plan, who: int, pieces: list[Piece], rng: np.random.Generator, transcript: bool = True
) -> dict:
    own = sorted((p for p in pieces if p.speaker == who), key=lambda p: p.start)
    data: dict = {"id": plan.file_id(who)}
    if transcript:
        segments = []
        for piece in own:
            words = [
                {
                    "word": w,
                    "start": round(a, 3),
                    "end": round(b, 3),
                    "score": round(float(rng.uniform(0.55, 0.99)), 3),
                }
                for w, a, b in piece.words()
            ]
            segments.append(
                {
                    "start": round(piece.start, 3),
                    "end": round(piece.end, 3),
                    "transcript": piece.text,
                    "words": words,
                }
            )
        data["metadata:transcript"] = segments
    data["metadata:vad"] = [{"start": round(p.start, 3), "end": round(p.end, 3)} for p in own]
    return data


# --------------------------------------------------------------------------- tables


def tables(plans: list[Plan], prompts: list[Prompt], params: dict) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng([int(params["seed"]), 2])
    prompt_rows = []
    hashes = {}
    for plan in plans:
        key = "placeholder" if plan.expected == "placeholder_prompt" else plan.prompt_key
        hashes.setdefault(key, plan.prompt_hash)
    for prompt in prompts:
        if prompt.key in hashes:
            prompt_rows.append((hashes[prompt.key], prompt.prompt_id, prompt.text, prompt.text))
    if "placeholder" in hashes:
        prompt_rows.append((hashes["placeholder"], PLACEHOLDER_PROMPT_ID, PLACEHOLDER_TEXT, PLACEHOLDER_TEXT))
    prompt_rows.sort()
    interactions = pd.DataFrame(
        {
            "": [str(k) for k in range(len(prompt_rows))],
            "prompt_hash": [r[0] for r in prompt_rows],
            "prompt_id_unique": [r[1] for r in prompt_rows],
            "participant_a_prompt_text": [r[2] for r in prompt_rows],
            "participant_b_prompt_text": [r[3] for r in prompt_rows],
            "ipc_a": "",
            "ipc_b": "",
            "interaction_type": LABEL,
        }
    )
    relationships = pd.DataFrame(
        {
            "vendor_id": [p.vendor for p in plans],
            "session_id": [p.session for p in plans],
            "relationship": [p.relationship for p in plans],
            "relationship_detail": [p.detail for p in plans],
        }
    )
    people = [(plan, person) for plan in plans for person in plan.people]
    participants = pd.DataFrame(
        {trait: [f"{v:.2f}" for v in rng.uniform(1.5, 4.8, len(people))] for trait in BIG_FIVE}
    )
    participants["vendor_id"] = [plan.vendor[1:] for plan, _ in people]
    participants["participant_id"] = [person.participant_id for _, person in people]
    genders = pd.DataFrame(
        {
            "participant_id": [person.participant_id for _, person in people],
            "gender": [p.gender for _, p in people],
        }
    )
    files = []
    for plan in plans:
        for who in range(plan.n_files):
            batch, archive = plan.locations[who]
            flags = rng.random(3) < (0.2, 0.2, 0.1)
            files.append(
                (
                    plan.file_id(who),
                    LABEL,
                    plan.split,
                    str(batch),
                    str(archive),
                    *[str(bool(f)) for f in flags],
                )
            )
    filelist = pd.DataFrame(
        files,
        columns=[
            "file_id",
            "label",
            "split",
            "batch_idx",
            "archive_idx",
            "has_annotation_1p",
            "has_annotation_3p",
            "has_imitator_movement",
        ],
    )
    truth = pd.DataFrame(
        {"interaction_id": [p.interaction_id for p in plans], "expected": [p.expected for p in plans]}
    )
    return {
        "interactions.csv": interactions,
        "relationships.csv": relationships,
        "participants.csv": participants,
        "filelist.csv": filelist,
        "participant_genders.csv": genders,
        "_demo_truth.csv": truth,
    }

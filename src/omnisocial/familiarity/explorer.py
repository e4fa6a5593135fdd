"""The familiarity benchmark's items in the results explorer (omnisocial.explorer): one item per
dyad, with its stimuli (transcript, audio, video: the clips raters and models were given), the
truth, the human raters per modality (share answering familiar, the crowd's majority and its
tie), every model's label, confidence, reasoning and status (with why it gave no label), the
dyad's Rasch difficulty per modality and rater type, and its interaction's filter decisions:
F1-F5 values and a speech timeline per participant over the clip.

Flags: `models_vs_humans` when, in some modality, the best model of that modality (chosen as the
McNemar comparison chooses it: `analysis.rater_tests.best_models`) answers otherwise than the
crowd's majority (a non-answer is left out, as in the paired tests); `models_disagree` when two
models' labels differ in some modality.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from omnisocial.explorer import answer
from omnisocial.familiarity.contracts import (
    FILTER_REPORT,
    MAJORITY_VOTES,
    RASCH_DIFFICULTY,
    RESPONSES,
    SPEECH,
    STIMULI_MANIFEST,
)
from omnisocial.tables import DESIGN, PREDICTIONS, TRIALS

MODALITY_ORDER = ("text", "audio", "video")
FILTER_STEPS = (
    ("F1 prompt", "f1_prompt"),
    ("F2 turns", "f2_turns"),
    ("F3 speech", "f3_speech"),
    ("F4 tracks", "f4_tracks"),
    ("F5 amount", "f5_amount"),
    ("audit", "audit"),
)


def _read_all(contract, paths: Iterable[str | os.PathLike]) -> pd.DataFrame:
    frames = [contract.read(p) for p in paths]
    return pd.concat(frames, ignore_index=True) if frames else contract.empty()


def _optional(contract, path) -> pd.DataFrame:
    return contract.read(path) if path else contract.empty()


def _num(value):
    return None if value is None or pd.isna(value) else float(value)


def _grouped(frame: pd.DataFrame, *keys: str) -> dict[tuple, list[dict]]:
    """`frame`'s rows as records, by the values of `keys` (in the frame's order)."""
    out: dict[tuple, list[dict]] = {}
    for record in frame.to_dict("records"):
        out.setdefault(tuple(record[k] for k in keys), []).append(record)
    return out


def _reason(row) -> str:
    """Why a model call gave no label (RESPONSES: the call's error, else the parse error)."""
    if row is None:
        return ""
    return str(row.get("error") or row.get("parse_error") or "")


def explorer_items(inputs: Mapping[str, object]) -> list[dict]:
    """Items of the familiarity benchmark from its tables. `inputs`: design, manifest, trials,
    majority_votes, predictions (list), responses (list), rasch_difficulty; optional
    filter_report and speech (a released design has neither)."""
    from omnisocial.familiarity.analysis.rater_tests import best_models  # pulls in the statistics

    design = DESIGN.read(inputs["design"])
    manifest_path = Path(inputs["manifest"])
    manifest = STIMULI_MANIFEST.read(manifest_path)
    trials = TRIALS.read(inputs["trials"])
    votes = MAJORITY_VOTES.read(inputs["majority_votes"])
    predictions = _read_all(PREDICTIONS, inputs.get("predictions", []))
    responses = _read_all(RESPONSES, inputs.get("responses", []))
    rasch = _optional(RASCH_DIFFICULTY, inputs.get("rasch_difficulty"))
    report = _optional(FILTER_REPORT, inputs.get("filter_report"))
    speech = _optional(SPEECH, inputs.get("speech"))

    best = best_models(predictions)
    response_of = {(r["model"], r["modality"], r["item_id"]): r for r in responses.to_dict("records")}
    # every table grouped once, as plain records: a pandas selection per dyad costs minutes at
    # a real study's size (benchmarks/bench_explorer.py)
    preds_of = _grouped(predictions, "item_id", "modality")
    rated = trials.assign(familiar=trials["response"] == "familiar").groupby(["dyad_id", "modality"])
    counts_of = {
        key: (int(n), int(k))
        for key, n, k in zip(rated.size().index, rated.size(), rated["familiar"].sum(), strict=True)
    }
    votes_of = {(r["item_id"], r["modality"]): r for r in votes.to_dict("records")}
    rasch_of = _grouped(rasch, "dyad_id")
    media_of = _grouped(manifest, "dyad_id")
    report_of = {r["interaction_id"]: r for r in report.to_dict("records")}
    speech_of = _grouped(speech, "interaction_id")

    items = []
    for dyad in design.to_dict("records"):
        dyad_id = dyad["dyad_id"]
        start, end = _num(dyad["clip_start"]), _num(dyad["clip_end"])
        media, transcript, modalities = [], "", []
        for row in media_of.get((dyad_id,), []):
            path = manifest_path.parent / row["path"]
            modalities.append(row["modality"])
            if row["modality"] == "text":
                transcript = path.read_text(encoding="utf-8") if path.is_file() else ""
            # a stimulus is its clip already: it plays whole, from 0 to its duration
            media.append(
                {
                    "kind": row["modality"],
                    "label": f"{row['modality']} ({row['variant']})",
                    "src": str(path),
                    "start": 0.0,
                    "end": _num(row["duration_s"]),
                }
            )
        answers, flags = [], {"models_vs_humans": False, "models_disagree": False}
        facts = [
            ("interaction", dyad["interaction_id"]),
            ("cell", dyad["cell"]),
            (
                "clip",
                f"{start} - {end} s ({dyad['position'] or 'position not given'})"
                if start is not None and end is not None
                else "not given (a released design)",
            ),
        ]
        for modality in MODALITY_ORDER:
            n, n_familiar = counts_of.get((dyad_id, modality), (0, 0))
            vote = votes_of.get((dyad_id, modality))
            if n or vote:
                share = n_familiar / n if n else None
                answers.append(
                    answer(
                        "humans",
                        "crowd",
                        modality,
                        vote["label"] if vote else "",
                        correct=bool(vote["label"] == dyad["relationship"]) if vote else None,
                        status="answered" if vote else "",
                        reason="tie, broken by a seeded coin" if vote and vote["tie"] else "",
                        score=_num(share),
                        text=f"{n_familiar} of {n} raters"
                        " answered familiar" + (f" (share {share:.2f})" if share is not None else ""),
                    )
                )
            labels = set()
            for pred in preds_of.get((dyad_id, modality), []):
                response = response_of.get((pred["model"], modality, dyad_id))
                status = response["status"] if response else ("answered" if pred["label"] else "unparsed")
                if pred["label"]:
                    labels.add(pred["label"])
                reasoning = response["rationale"] if response else ""
                raw = response["raw_reply"] if response else ""
                # the reasoning of a parsed answer; the raw reply where no label was read from it
                answers.append(
                    answer(
                        pred["model"],
                        "model",
                        modality,
                        pred["label"],
                        correct=bool(pred["label"] == pred["truth"]) if pred["label"] else None,
                        status=status,
                        reason=_reason(response),
                        confidence=_num(pred["confidence"]),
                        text=reasoning if status == "answered" else raw,
                    )
                )
                # a non-answer is no disagreement: the paired tests leave it out of the pair too
                best_answer = pred["model"] == best.get(modality) and pred["label"]
                if vote and best_answer and pred["label"] != vote["label"]:
                    flags["models_vs_humans"] = True
            if len(labels) > 1:
                flags["models_disagree"] = True
        difficulty = None
        for row in rasch_of.get((dyad_id,), []):
            facts.append(
                (
                    f"Rasch difficulty, {row['modality']}, {row['rater_type']}",
                    f"{row['difficulty']:.2f} (sd {row['sd']:.2f}, {row['n_responses']} responses)",
                )
            )
            if row["rater_type"] == "human":
                difficulty = (
                    max(difficulty, row["difficulty"]) if difficulty is not None else row["difficulty"]
                )
        if difficulty is not None:
            facts.append(("difficulty (hardest modality, humans)", f"{difficulty:.2f}"))
        filtered = report_of.get(dyad["interaction_id"])
        if filtered:
            for name, prefix in FILTER_STEPS:
                value = filtered[f"{prefix}_value"]
                verdict = "pass" if filtered[f"{prefix}_pass"] else "fail"
                facts.append((f"filter {name}", f"{verdict}: {'' if pd.isna(value) else value}"))
        timeline = None
        spoken = speech_of.get((dyad["interaction_id"],))
        if spoken and start is not None and end is not None:
            tracks = []
            for speaker, source in sorted({(r["speaker"], r["source"]) for r in spoken}):
                participant = dyad["participant_a"] if speaker == "a" else dyad["participant_b"]
                spans = [
                    [max(r["start"], start) - start, min(r["end"], end) - start, "speech", "speech"]
                    for r in spoken
                    if r["speaker"] == speaker
                    and r["source"] == source
                    and r["end"] > start
                    and r["start"] < end
                ]
                tracks.append({"label": f"{speaker}: {participant} ({source})", "spans": spans})
            timeline = {"start": 0.0, "end": end - start, "tracks": tracks, "marks": []}
        items.append(
            {
                "id": f"familiarity:{dyad_id}",
                "benchmark": "familiarity",
                "title": f"{dyad_id}: {dyad['relationship']} dyad, {dyad['gender_mix']}, {dyad['site']}",
                "truth": dyad["relationship"],
                "modalities": sorted(set(modalities), key=MODALITY_ORDER.index),
                "media": media,
                "transcript": transcript,
                "answers": answers,
                "timeline": timeline,
                "facts": facts,
                "difficulty": difficulty,
                "flags": flags,
            }
        )
    return items

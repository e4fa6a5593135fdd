"""Model inference and offline baselines of the familiarity study (docs/benchmarks/familiarity.md#inference).

Requests
--------
`build_requests` makes one request per (dyad, modality, prompt variant) of a registry entry
(a `baseline` entry reads no prompt: one request per dyad and modality, an empty prompt, the
model named without a variant and an empty `prompt_variant`):
the modalities are those the entry supports and the study asks for (`inference.modalities`),
the prompt is `prompts/familiarity/{modality}/{variant}.txt` (the text template gets the
stimulus transcript in its `{transcript}` field), and the media are the stimuli of the
manifest: `audio` = the mono mix, `video` = the side-by-side video with the mixed audio, text =
none. Every request asks for the JSON answer of section 1.7 (`settings.response_schema`, which
the API backends turn into their JSON mode); decoding settings come from the entry
(temperature 0 and seed 42 by default). The request's item id is the dyad id.

Results
-------
`run_inference` stores every call in a resumable JSON-lines cache and returns one record per
request; `tables_from_results` turns them into a PREDICTIONS table (model named
`{name}@{variant}`, so prompt variants are compared as models; a baseline is `{name}`) and a
RESPONSES table (one row per call with the prompt and media hashes, the model fingerprint, the
raw reply and what was parsed). A failed call (transport error, timeout, missing media) never
becomes a label: its prediction is a non-answer (empty label) and its response row has status `failed` and the
reason in `error`; a reply without a valid label is a non-answer with status `unparsed` and the
reason in `parse_error`. A rerun calls only the failed keys again.

Baselines
---------
`behavioural_table` measures turn-taking and prosody per dyad (`familiarity.baselines`) on the stereo
stimulus (participant a left, b right; the mono mix when stereo stimuli were not rendered) and
the transcript segments inside the clip window, in clip time. `baseline_tables` adds the
cross-validated behavioural model, chance and majority predictions (`baseline_predictions`).
A registry entry `{backend: baseline, model: behavioural}` without `options.predictions` reads
those predictions (`with_baseline_predictions`), so the behavioural baseline can also run
through the same inference path as any model.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from omnisocial.familiarity.contracts import (
    FEATURES_TABLE,
    MODALITIES,
    RESPONSES,
    SEGMENTS,
    STIMULI_MANIFEST,
    variant_name,
)
from omnisocial.models.base import Backend, Request
from omnisocial.models.parsing import FAMILIARITY_SCHEMA, parse_familiarity
from omnisocial.models.registry import RegistryError, build_backend, load_entries
from omnisocial.models.runner import FailurePolicy, run_inference
from omnisocial.prompt_templates import render_prompt
from omnisocial.tables import DESIGN, PREDICTIONS

log = logging.getLogger(__name__)

TASK = "familiarity"
RESERVED_NAMES = ("baselines",)  # predictions/baselines.csv belongs to the offline baselines
MEDIA_VARIANTS = {"text": "transcript", "audio": "mix", "video": "side_by_side"}
STEREO_VARIANTS = ("stereo", "mix")  # the behavioural features' audio, in order of preference
BASELINE_MODALITY = "audio"  # the behavioural features come from the audio and its transcript


# --- registry -----------------------------------------------------------------------------


def _merge_gap(value) -> float:
    """filters.turn_gap_s as the baseline's merge gap: null (merge whatever the pause) is infinite."""
    return float("inf") if value is None else float(value)


def load_models(entries: Sequence[Mapping]) -> dict[str, dict]:
    """The validated registry (`models.registry.load_entries`), names checked against file names.

    Raises RegistryError naming the entry and key for a broken entry, and for a reserved name.
    """
    registry = load_entries(list(entries))
    for position, name in enumerate(registry):
        if name in RESERVED_NAMES:
            raise RegistryError(
                f"model entry {name!r} (models[{position}]): name: {name!r} is reserved "
                f"(predictions/{name}.csv holds the offline baselines); pick another name"
            )
    return registry


def study_modalities(entry: Mapping, modalities: Iterable[str]) -> list[str]:
    """The modalities an entry runs on in this study, in the study's order."""
    supported = set(entry.get("modalities") or ())
    return [m for m in modalities if m in supported]


def is_baseline(entry: Mapping) -> bool:
    """An offline baseline entry: it reads no prompt, so it runs once, not once per prompt variant."""
    return entry.get("backend") == "baseline"


def needs_baseline_predictions(entry: Mapping) -> bool:
    """A behavioural baseline entry that should read this study's cross-validated predictions."""
    options = entry.get("options") or {}
    return (
        entry.get("backend") == "baseline"
        and entry.get("model") == "behavioural"
        and not options.get("predictions")
    )


def with_baseline_predictions(entry: Mapping, predictions_csv: str | os.PathLike) -> dict:
    """`entry` with `options.predictions` pointing at `predictions_csv` when it needs one."""
    out = json.loads(json.dumps(dict(entry)))
    if needs_baseline_predictions(entry):
        out.setdefault("options", {})["predictions"] = str(predictions_csv)
    return out


# --- requests -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Planned:
    """What a request stands for: the rows it becomes in PREDICTIONS and RESPONSES."""

    model: str
    name: str
    modality: str
    variant: str
    item_id: str
    truth: str
    template_sha256: str


def stimulus_paths(manifest: pd.DataFrame, manifest_dir: str | os.PathLike) -> dict[tuple[str, str], Path]:
    """(dyad_id, variant) -> absolute stimulus path (manifest paths are relative to its folder)."""
    frame = STIMULI_MANIFEST.validate(manifest)
    root = Path(manifest_dir)
    return {(row.dyad_id, row.variant): (root / row.path).resolve() for row in frame.itertuples(index=False)}


def build_requests(
    entry: Mapping,
    manifest: pd.DataFrame,
    design: pd.DataFrame,
    manifest_dir: str | os.PathLike,
    modalities: Sequence[str],
    variants: Sequence[str],
) -> list[tuple[Planned, Request]]:
    """One (Planned, Request) per dyad x modality x prompt variant (module docstring).

    Order: dyad, then modality (study order), then variant (config order). Raises
    FileNotFoundError / ValueError naming the dyad when a stimulus is missing.
    """
    frame = DESIGN.validate(design).sort_values("dyad_id", kind="stable")
    paths = stimulus_paths(manifest, manifest_dir)
    chosen = study_modalities(entry, modalities)
    name = str(entry["name"])
    # a baseline reads no prompt: one request per dyad x modality, named without a variant
    no_prompt = is_baseline(entry)
    variants = [""] if no_prompt else list(variants)
    settings = {"response_schema": FAMILIARITY_SCHEMA}
    out = []
    for dyad in frame.itertuples(index=False):
        for modality in chosen:
            path = paths.get((dyad.dyad_id, MEDIA_VARIANTS[modality]))
            if path is None:
                raise ValueError(
                    f"dyad {dyad.dyad_id}: the stimuli manifest has no {modality} stimulus "
                    f"(variant {MEDIA_VARIANTS[modality]})"
                )
            for variant in variants:
                if no_prompt:
                    prompt, digest = "", ""
                    media = {} if modality == "text" else {modality: path}
                elif modality == "text":
                    if not path.is_file():
                        raise FileNotFoundError(f"dyad {dyad.dyad_id}: transcript {path} does not exist")
                    transcript = path.read_text(encoding="utf-8").strip() or "(no speech in this clip)"
                    prompt, digest = render_prompt(TASK, modality, variant, transcript=transcript)
                    media = {}
                else:
                    prompt, digest = render_prompt(TASK, modality, variant)
                    media = {modality: path}
                planned = Planned(
                    model=name if no_prompt else variant_name(name, variant),
                    name=name,
                    modality=modality,
                    variant=variant,
                    item_id=str(dyad.dyad_id),
                    truth=str(dyad.relationship),
                    template_sha256=digest,
                )
                out.append(
                    (planned, Request(str(dyad.dyad_id), prompt, media=media, settings=dict(settings)))
                )
    return out


# --- results ------------------------------------------------------------------------------


def _json(value) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {}, sort_keys=True, default=str)


def _text(value) -> str:
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def tables_from_results(
    planned: Sequence[Planned], results: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(PREDICTIONS, RESPONSES) from `run_inference`'s frame, one row per request in order."""
    records = results.to_dict("records")
    if len(records) != len(planned):
        raise ValueError(f"{len(planned)} requests but {len(records)} results")
    rows = []
    for plan, record in zip(planned, records, strict=True):
        ok = bool(record.get("ok"))
        text = _text(record.get("text")) if ok else ""
        if ok:
            parsed = parse_familiarity(text)
            label = parsed["relationship_label"]
            status = "answered" if label else "unparsed"
            error = ""
        else:
            parsed = {"relationship_label": "", "confidence": None, "rationale": "", "parse_error": ""}
            label, status = "", "failed"
            error = _text(record.get("error")) or "the call failed without a reason"
        confidence = parsed["confidence"] if label else None
        rows.append(
            {
                "model": plan.model,
                "name": plan.name,
                "modality": plan.modality,
                "prompt_variant": plan.variant,
                "item_id": plan.item_id,
                "truth": plan.truth,
                "prompt_hash": _text(record.get("prompt_hash")),
                "template_sha256": plan.template_sha256,
                "media_hashes": _json(record.get("media_hashes")),
                "model_fingerprint": _text(record.get("model_fingerprint")),
                "model_version": _text(record.get("model_version")),
                "settings": _json(record.get("settings")),
                "cache_key": _text(record.get("key")),
                "status": status,
                "raw_reply": text,
                "label": label,
                "confidence": np.nan if confidence is None else float(confidence),
                "rationale": parsed["rationale"] if label else "",
                "parse_error": parsed["parse_error"],
                "error": error,
                "attempts": int(record.get("attempts") or 0),
                "finish_reason": _text(record.get("finish_reason")),
                "audio_path": _text(record.get("audio_path")),
            }
        )
    responses = RESPONSES.validate(pd.DataFrame(rows, columns=RESPONSES.names)) if rows else RESPONSES.empty()
    predictions = responses[PREDICTIONS.names] if rows else PREDICTIONS.empty()
    return PREDICTIONS.validate(predictions), responses


def _close(backend) -> None:
    close = getattr(backend, "close", None)
    if callable(close):
        close()


def infer_model(
    entry: Mapping,
    manifest: pd.DataFrame,
    design: pd.DataFrame,
    manifest_dir: str | os.PathLike,
    modalities: Sequence[str],
    variants: Sequence[str],
    cache_path: str | os.PathLike,
    backend: Backend | None = None,
    progress: bool = True,
    policy: FailurePolicy | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run one registry entry on every stimulus it supports: (PREDICTIONS, RESPONSES).

    `backend` defaults to `models.registry.build_backend(entry)` (closed afterwards); the
    resumable result store lives at `cache_path` and is kept between runs. `progress` draws
    a progress bar with rate and ETA on stderr (the rule's log in the workflow). `policy`
    (the workflow passes the config's) fails the job on an unreachable backend, a run of
    failed calls or too large a share of failures, after every finished call is cached.
    """
    if not variants:
        raise ValueError("inference.prompt_variants is empty")
    planned_requests = build_requests(entry, manifest, design, manifest_dir, modalities, variants)
    if not planned_requests:
        log.warning(
            "model %s supports none of the study's modalities (%s): no requests",
            entry.get("name"),
            ", ".join(modalities),
        )
        return PREDICTIONS.empty(), RESPONSES.empty()
    own = backend is None
    backend = build_backend(entry) if own else backend
    try:
        results = run_inference(
            backend,
            [request for _, request in planned_requests],
            cache_path,
            progress=progress,
            policy=policy,
        )
    finally:
        if own:
            _close(backend)
    predictions, responses = tables_from_results([plan for plan, _ in planned_requests], results)
    counts = responses["status"].value_counts().to_dict()
    log.info("%s: %d responses %s", entry.get("name"), len(responses), counts)
    for row in responses[responses["status"] == "failed"].head(5).itertuples(index=False):
        log.warning("%s %s %s failed: %s", row.model, row.modality, row.item_id, row.error)
    return predictions, responses


# --- offline baselines --------------------------------------------------------------------


def clip_segments(
    segments: pd.DataFrame, interaction_id: str, clip_start: float, clip_end: float
) -> pd.DataFrame:
    """The interaction's segments overlapping the clip, cut to it, in clip time (0 = clip start)."""
    frame = segments[segments["interaction_id"].astype(str) == str(interaction_id)]
    frame = frame[(frame["start"] < clip_end) & (frame["end"] > clip_start)]
    out = pd.DataFrame(
        {
            "speaker": frame["speaker"].astype(str).to_numpy(),
            "start": np.maximum(frame["start"].to_numpy(float), clip_start) - clip_start,
            "end": np.minimum(frame["end"].to_numpy(float), clip_end) - clip_start,
            "text": frame["text"].astype(str).to_numpy(),
        }
    )
    return out.sort_values(["start", "end"], kind="mergesort").reset_index(drop=True)


def behavioural_table(
    manifest: pd.DataFrame,
    design: pd.DataFrame,
    segments: pd.DataFrame,
    manifest_dir: str | os.PathLike,
    merge_gap_s: float = 0.3,
) -> pd.DataFrame:
    """FEATURES_TABLE: turn-taking and prosody per dyad (module docstring), sorted by dyad."""
    from omnisocial.familiarity.baselines import FEATURES, features_from_stimulus

    frame = DESIGN.validate(design).sort_values("dyad_id", kind="stable")
    segment_frame = SEGMENTS.validate(segments)
    paths = stimulus_paths(manifest, manifest_dir)
    root = Path(manifest_dir).resolve()
    rows = []
    for dyad in frame.itertuples(index=False):
        audio = next((paths[(dyad.dyad_id, v)] for v in STEREO_VARIANTS if (dyad.dyad_id, v) in paths), None)
        if audio is None:
            raise ValueError(f"dyad {dyad.dyad_id}: the stimuli manifest has no audio stimulus")
        own = clip_segments(segment_frame, dyad.interaction_id, dyad.clip_start, dyad.clip_end)
        values = features_from_stimulus(audio, own, merge_gap_s=merge_gap_s)
        rows.append(
            {
                "item_id": dyad.dyad_id,
                "modality": BASELINE_MODALITY,
                "truth": dyad.relationship,
                "stimulus": os.path.relpath(audio, root),
                "n_segments": len(own),
                **{name: values.get(name, np.nan) for name in FEATURES},
            }
        )
    if not rows:
        return FEATURES_TABLE.empty()
    return FEATURES_TABLE.validate(pd.DataFrame(rows))


def baseline_tables(
    manifest: pd.DataFrame,
    design: pd.DataFrame,
    segments: pd.DataFrame,
    manifest_dir: str | os.PathLike,
    params: Mapping,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(behavioural features, PREDICTIONS of the behavioural, chance and majority baselines).

    params: `seed`, `n_splits` (folds, or "loo"), `C` (inverse L2 strength), `merge_gap_s`.
    """
    from omnisocial.familiarity.baselines import baseline_predictions

    features = behavioural_table(
        manifest, design, segments, manifest_dir, _merge_gap(params.get("merge_gap_s", 0.3))
    )
    truth = dict(zip(features["item_id"], features["truth"], strict=True))
    predictions = baseline_predictions(
        features.drop(columns=["truth"]),
        truth,
        {
            "seed": int(params.get("seed", 42)),
            "n_splits": params.get("n_splits", 10),
            "C": float(params.get("C", 1.0)),
            "modality": BASELINE_MODALITY,
        },
    )
    return features, predictions


__all__ = [
    "MODALITIES",
    "Planned",
    "baseline_tables",
    "behavioural_table",
    "build_requests",
    "infer_model",
    "load_models",
    "tables_from_results",
    "variant_name",
    "with_baseline_predictions",
]

"""A released data set (FriendBench and alike) as the familiarity study's design, stimuli and predictions.

With `study.design_source: release` the workflow builds no corpus: rule import_release reads the
release's dyad table and writes the same DESIGN and STIMULI_MANIFEST tables the pipeline writes
(so models, ratings, statistics and figures run unchanged); rule import_release_predictions
turns released model predictions into a PREDICTIONS table that sits beside the registry
models' files. Human ratings go through the survey import (`ratings.source: exports`,
`ratings.mapping`, see `familiarity.ratings.importing`); a release that holds every modality
in one file is read once per modality with `require: {<modality column>: [<value>]}`.

Files are read alike whatever their format (`omnisocial.io.read_table_strings`: CSV, TSV, JSON,
JSON lines, parquet). Column names come from a mapping in config; no FriendBench column name
is assumed beyond the defaults below, which any mapping key overrides:

- `DESIGN_MAPPING` (release.mapping): `dyad_id` and `relationship` are required columns;
  `relationship_values` maps the release's labels onto familiar / stranger (trimmed,
  case-insensitive); `site`, `gender_mix`, `interaction_id`, `participant_a`,
  `participant_b`, `position`, `clip_start`, `clip_end`, `n_turns` and the stimulus columns
  `text`, `audio`, `video` (paths relative to `release.root`) are optional: a key set to ""
  or naming a column the file lacks is "not in the release" (an empty site / gender_mix,
  interaction_id = dyad_id, no stimulus), except that a key the config names explicitly must
  exist. A stimulus file that is named but missing is an error naming the dyad.
- `PREDICTIONS_MAPPING` (release.predictions.mapping): `model`, `modality`, `item_id` and
  `label` are required columns, `confidence` optional; `label_values` and `modality_values`
  map the release's spellings; `empty_values` are codes of a non-answer (empty label);
  `model_prefix` is put before every model name (e.g. "release:") so released and registry
  models never share a name.

A missing required column raises ValueError naming the file and the mapping key. Every row is
accounted for in an import report (`RELEASE_REPORT`): design rows are imported, duplicate (the
first is kept), missing_dyad_id or invalid_label; prediction rows are imported, unknown_dyad,
duplicate, invalid_modality, invalid_label or invalid_confidence. Invalid design rows stop the
import (the design is the truth); invalid prediction rows are counted and left out.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from omnisocial.io import read_table_strings, sha256_file
from omnisocial.stats.sdt import NON_ANSWER, truth_map
from omnisocial.tables import DESIGN, PREDICTIONS, RELATIONSHIPS, STIMULI_MANIFEST, Column, Contract

MODALITIES = ("text", "audio", "video")
# the stimulus variant each modality's file stands for (models.inference.MEDIA_VARIANTS)
STIMULUS_VARIANTS = {"text": "transcript", "audio": "mix", "video": "side_by_side"}

DESIGN_MAPPING = {
    "dyad_id": "dyad_id",
    "relationship": "relationship",
    "relationship_values": {
        "familiar": ["familiar", "friends", "friend"],
        "stranger": ["stranger", "strangers"],
    },
    "site": "site",
    "gender_mix": "gender_mix",
    "interaction_id": "interaction_id",
    "participant_a": "participant_a",
    "participant_b": "participant_b",
    "position": "position",
    "clip_start": "clip_start",
    "clip_end": "clip_end",
    "n_turns": "n_turns",
    "text": "text",
    "audio": "audio",
    "video": "video",
}
DESIGN_REQUIRED = ("dyad_id", "relationship")

PREDICTIONS_MAPPING = {
    "model": "model",
    "modality": "modality",
    "item_id": "item_id",
    "label": "label",
    "confidence": "confidence",
    "label_values": {"familiar": ["familiar"], "stranger": ["stranger"]},
    "modality_values": {"text": ["text"], "audio": ["audio"], "video": ["video"]},
    "empty_values": [],
    "model_prefix": "",
}
PREDICTIONS_REQUIRED = ("model", "modality", "item_id", "label")

TABLES = ("design", "predictions")
REASONS = (
    "imported",
    "missing_dyad_id",
    "unknown_dyad",
    "duplicate",
    "invalid_modality",
    "invalid_label",
    "invalid_confidence",
)
RELEASE_REPORT = Contract(
    "release_import_report",
    (
        Column("table", allowed=TABLES),
        Column("file"),
        Column("reason", allowed=REASONS),
        Column("n", "int", doc="rows with this outcome"),
        Column("example", doc="the first such row: file row and its values"),
    ),
    key=("table", "reason"),
)


def _norm(value) -> str:
    return str(value).strip().casefold()


def _merged(mapping: Mapping | None, defaults: Mapping, what: str) -> dict:
    given = dict(mapping or {})
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ValueError(f"{what}: unknown key(s) {', '.join(unknown)}; known: {', '.join(defaults)}")
    return {**defaults, **given}


def _lookup(values: Mapping, labels: tuple[str, ...], what: str) -> dict[str, str]:
    if set(values) != set(labels):
        raise ValueError(f"{what} needs exactly the keys {labels}, got {sorted(values)}")
    lookup: dict[str, str] = {}
    for label, spellings in values.items():
        for spelling in [spellings] if isinstance(spellings, str) else spellings:
            key = _norm(spelling)
            if lookup.get(key, label) != label:
                raise ValueError(f"{what}: {spelling!r} maps to two labels")
            lookup[key] = label
    return lookup


def _columns(raw: pd.DataFrame, spec: dict, given: Mapping, keys, required, source: str, what: str) -> dict:
    """{mapping key: column} of the keys present; a required or explicitly named absent column raises."""
    found = {}
    for key in keys:
        column = spec[key]
        if column and column in raw.columns:
            found[key] = column
        elif key in required or (column and key in given):
            raise ValueError(
                f"{source}: no column {column!r} for {what}.{key}; "
                f"the file has {', '.join(map(repr, raw.columns[:20]))}"
            )
    return found


def _report(table: str, source: str, reason: pd.Series, raw: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for name in REASONS:
        hits = np.flatnonzero((reason == name).to_numpy())
        example = ""
        if len(hits):
            first = raw.iloc[int(hits[0])]
            example = f"row {int(hits[0]) + 2}: " + ", ".join(f"{k}={v!r}" for k, v in first.items())[:300]
        rows.append({"table": table, "file": source, "reason": name, "n": len(hits), "example": example})
    return RELEASE_REPORT.validate(pd.DataFrame(rows))


def _float_or_nan(values: pd.Series) -> pd.Series:
    return pd.to_numeric(values.replace("", np.nan), errors="raise").astype(float)


def import_design(
    metadata: str | os.PathLike, mapping: Mapping | None = None, root: str | os.PathLike | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(DESIGN, STIMULI_MANIFEST, RELEASE_REPORT rows of the design) from a release's dyad table.

    Stimulus paths in the manifest are absolute (the manifest's readers join them to its folder,
    which leaves an absolute path as it is); their sha256 is the file's.
    """
    source = str(metadata)
    spec = _merged(mapping, DESIGN_MAPPING, "release.mapping")
    raw = read_table_strings(metadata)
    keys = [k for k in DESIGN_MAPPING if k != "relationship_values"]
    cols = _columns(raw, spec, dict(mapping or {}), keys, DESIGN_REQUIRED, source, "release.mapping")
    lookup = _lookup(spec["relationship_values"], RELATIONSHIPS, "release.mapping.relationship_values")

    dyad = raw[cols["dyad_id"]].str.strip()
    label = raw[cols["relationship"]].map(_norm).map(lookup)
    reason = pd.Series(
        np.select([dyad == "", label.isna()], ["missing_dyad_id", "invalid_label"], default="imported"),
        index=raw.index,
    )
    valid = reason == "imported"
    reason[(dyad.duplicated(keep="first") & valid).to_numpy()] = "duplicate"
    report = _report("design", source, reason, raw)
    bad = report[(report["reason"] != "imported") & (report["n"] > 0)]
    if len(bad):
        lines = "; ".join(f"{r.n} {r.reason} (e.g. {r.example})" for r in bad.itertuples())
        raise ValueError(f"{source}: the design table has rows that cannot be imported: {lines}")

    def column(key: str, default=""):
        return raw[cols[key]].str.strip() if key in cols else pd.Series(default, index=raw.index)

    site, gender = column("site"), column("gender_mix")
    interaction = column("interaction_id")
    design = pd.DataFrame(
        {
            "dyad_id": dyad,
            "interaction_id": interaction.where(interaction != "", dyad),
            "cell": site + "|" + label + "|" + gender,
            "site": site,
            "relationship": label,
            "gender_mix": gender,
            "position": column("position").str.casefold(),
            "clip_start": _float_or_nan(column("clip_start")),
            "clip_end": _float_or_nan(column("clip_end")),
            "n_turns": column("n_turns"),
            "participant_a": column("participant_a"),
            "participant_b": column("participant_b"),
        }
    )
    design = DESIGN.validate(design, source=source)

    folder = Path(root) if root else Path(metadata).parent
    rows = []
    for position, dyad_id in enumerate(design["dyad_id"]):
        for modality in MODALITIES:
            name = raw[cols[modality]].iloc[position].strip() if modality in cols else ""
            if not name:
                continue
            path = (folder / name).resolve()
            if not path.is_file():
                raise ValueError(f"{source}: dyad {dyad_id}: {modality} stimulus {path} does not exist")
            rows.append(
                {
                    "dyad_id": dyad_id,
                    "modality": modality,
                    "variant": STIMULUS_VARIANTS[modality],
                    "path": str(path),
                    "duration_s": np.nan,
                    "sha256": sha256_file(path),
                    "clip_start": design["clip_start"].iloc[position],
                    "clip_end": design["clip_end"].iloc[position],
                }
            )
    manifest = STIMULI_MANIFEST.validate(pd.DataFrame(rows)) if rows else STIMULI_MANIFEST.empty()
    return design, manifest, report


def import_predictions(
    path: str | os.PathLike, mapping: Mapping | None, design: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(PREDICTIONS, RELEASE_REPORT rows of the predictions) from released model predictions.

    `truth` comes from the design; every row is imported or counted under one reason, the
    first of a repeated (model, modality, item) is kept. A confidence outside 0..1 or not a
    number is `invalid_confidence`.
    """
    source = str(path)
    spec = _merged(mapping, PREDICTIONS_MAPPING, "release.predictions.mapping")
    raw = read_table_strings(path)
    keys = [*PREDICTIONS_REQUIRED, "confidence"]
    cols = _columns(
        raw, spec, dict(mapping or {}), keys, PREDICTIONS_REQUIRED, source, "release.predictions.mapping"
    )
    labels = _lookup(spec["label_values"], RELATIONSHIPS, "release.predictions.mapping.label_values")
    modalities = _lookup(spec["modality_values"], MODALITIES, "release.predictions.mapping.modality_values")
    empty = {_norm(v) for v in spec["empty_values"]} | {""}
    truth = truth_map(design)

    model = spec["model_prefix"] + raw[cols["model"]].str.strip()
    item = raw[cols["item_id"]].str.strip()
    modality = raw[cols["modality"]].map(_norm).map(modalities)
    value = raw[cols["label"]].map(_norm)
    label = value.map(labels).where(~value.isin(empty), NON_ANSWER)
    confidence = raw[cols["confidence"]] if "confidence" in cols else pd.Series("", index=raw.index)
    number = pd.to_numeric(confidence.replace("", np.nan), errors="coerce")
    bad_confidence = (confidence.str.strip() != "") & ~number.between(0.0, 1.0)
    reason = pd.Series(
        np.select(
            [~item.isin(set(truth)), modality.isna(), label.isna(), bad_confidence],
            ["unknown_dyad", "invalid_modality", "invalid_label", "invalid_confidence"],
            default="imported",
        ),
        index=raw.index,
    )
    valid = reason == "imported"
    repeated = pd.DataFrame({"m": model, "x": modality, "i": item})[valid].duplicated(keep="first")
    reason[repeated[repeated].index] = "duplicate"
    report = _report("predictions", source, reason, raw)

    keep = reason == "imported"
    frame = pd.DataFrame(
        {
            "model": model[keep],
            "modality": modality[keep],
            "item_id": item[keep],
            "truth": item[keep].map(truth),
            "label": label[keep],
            "confidence": number[keep],
        }
    ).sort_values(["model", "modality", "item_id"], kind="stable")
    predictions = PREDICTIONS.validate(frame, source=source) if len(frame) else PREDICTIONS.empty()
    return predictions, report

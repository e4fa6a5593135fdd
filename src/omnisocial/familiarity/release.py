"""A released data set (FriendBench and alike) as the familiarity study's design, stimuli and predictions.

With `study.design_source: release` the workflow builds no corpus: rule import_release reads the
release's dyad table and writes the same DESIGN and STIMULI_MANIFEST tables the pipeline writes
(so models, ratings, statistics and figures run unchanged); rule import_release_predictions
turns released model predictions into a PREDICTIONS table that sits beside the registry
models' files (their rows say `source: release` in every analysis table, `contracts.RELEASE_SOURCE`).
Human ratings go through the survey import (`ratings.source: exports`, `ratings.mapping`, see
`familiarity.ratings.importing`); a release that holds every modality in one file is read once
per modality with `require: {<modality column>: [<value>]}`.

Files are read alike whatever their format (`omnisocial.io.read_table_strings`: CSV, TSV, JSON,
JSON lines, parquet). Column names come from a mapping in config, and no column is read unless
the mapping names it (a metadata column that happens to be called `position` is not the clip
position): every column key defaults to "" (not in the release). The schema
(`workflow/schemas/config.schema.yaml`) checks the mappings' keys and types at startup.

- `DESIGN_MAPPING` (release.mapping): `dyad_id` and `relationship` must be named;
  `relationship_values` maps the release's labels onto familiar / stranger (trimmed,
  case-insensitive); `site`, `gender_mix`, `interaction_id`, `participant_a`,
  `participant_b`, `position`, `clip_start`, `clip_end`, `n_turns` and the stimulus columns
  `text`, `audio`, `video` (paths relative to `release.root`) are optional: unnamed is "not in
  the release" (an empty site / gender_mix, interaction_id = dyad_id, no stimulus). A stimulus
  file that is named but missing is an error naming the dyad.
- `PREDICTIONS_MAPPING` (release.predictions.mapping): `item_id` and `label` must be named,
  `model` and `modality` too unless every file gives them as constants (`prediction_files`);
  `model` may be a list of columns joined by `model_separator` (e.g. [model, reasoning] ->
  "o3-high"; empty parts are left out); `confidence` is optional, read on `confidence_scale`
  probability (0..1) or percent (0..100), as the confidence in the given label or, with
  `confidence_of: familiar`, as P(familiar), converted to the confidence in the given label
  (1 - p for a stranger answer); `dyad_pattern` (one or a list, e.g. "video/{dyad_id}.mp4")
  says how an id is written; `case_insensitive_ids` matches ids to the design's whatever their
  case (the design's spelling is kept); `label_values` and `modality_values` map the
  release's spellings; `empty_values` are codes of a non-answer (empty label); `model_prefix`
  is put before every model name (e.g. "release:") so released and registry models never
  share a name.

Released predictions may be several files (`prediction_files`): a path, a glob, a folder of
table files (parquet shards), or a list of these, where an entry may also be
{path, model, modality} giving the whole file's model and / or modality (one file per model or
per modality).

A missing column raises ValueError naming the file and the mapping key. Every row is
accounted for in an import report (`RELEASE_REPORT`, one row per file and reason; a row is
"row N" of a CSV / TSV, the line number, and "record N", 1-based, of JSON, JSONL and parquet):
design rows are imported, duplicate (the first is kept), missing_dyad_id or invalid_label;
prediction rows are imported, missing_model, unknown_dyad, duplicate or conflict (the first in
file order is kept; a conflict answers otherwise), invalid_modality, invalid_label or
invalid_confidence. Invalid design rows stop the
import (the design is the truth); invalid prediction rows are counted and left out.

`prediction_files` runs while Snakemake parses the workflow (familiarity/common.smk), in every
job: this module imports no scipy at module level (`truth_map` is imported where it is used).
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from omnisocial.familiarity.contracts import STIMULI_MANIFEST
from omnisocial.familiarity.patterns import pattern_regex
from omnisocial.io import TABLE_FORMATS, read_table_strings, record_label, sha256_file
from omnisocial.tables import DESIGN, NON_ANSWER, PREDICTIONS, RELATIONSHIPS, Column, Contract

MODALITIES = ("text", "audio", "video")
# the stimulus variant each modality's file stands for (models.inference.MEDIA_VARIANTS)
STIMULUS_VARIANTS = {"text": "transcript", "audio": "mix", "video": "side_by_side"}

DESIGN_COLUMNS = (
    "dyad_id",
    "relationship",
    "site",
    "gender_mix",
    "interaction_id",
    "participant_a",
    "participant_b",
    "position",
    "clip_start",
    "clip_end",
    "n_turns",
    "text",
    "audio",
    "video",
)
DESIGN_MAPPING = {
    **dict.fromkeys(DESIGN_COLUMNS, ""),
    "relationship_values": {
        "familiar": ["familiar", "friends", "friend"],
        "stranger": ["stranger", "strangers"],
    },
}
DESIGN_REQUIRED = ("dyad_id", "relationship")

PREDICTIONS_MAPPING = {
    "model": "",
    "model_separator": "-",
    "modality": "",
    "item_id": "",
    "label": "",
    "confidence": "",
    "confidence_scale": "probability",
    "confidence_of": "label",
    "dyad_pattern": "{dyad_id}",
    "case_insensitive_ids": False,
    "label_values": {"familiar": ["familiar"], "stranger": ["stranger"]},
    "modality_values": {"text": ["text"], "audio": ["audio"], "video": ["video"]},
    "empty_values": [],
    "model_prefix": "",
}
PREDICTIONS_REQUIRED = ("item_id", "label")
CONFIDENCE_SCALES = {"probability": 1.0, "percent": 100.0}

TABLES = ("design", "predictions")
DESIGN_REASONS = ("imported", "missing_dyad_id", "duplicate", "invalid_label")
PREDICTION_REASONS = (
    "imported",
    "missing_model",
    "unknown_dyad",
    "duplicate",
    "conflict",
    "invalid_modality",
    "invalid_label",
    "invalid_confidence",
)
# every prediction reason but these loses a released answer (an identical repeat loses nothing)
KEPT_PREDICTION_REASONS = ("imported", "duplicate")
REASONS = tuple(dict.fromkeys((*DESIGN_REASONS, *PREDICTION_REASONS)))


def _first_reason(checks: Mapping[str, pd.Series], index: pd.Index) -> pd.Series:
    """Per row the first reason (in `checks`' order) whose check holds, else "imported": each reason
    is named once, beside its check."""
    return pd.Series(np.select(list(checks.values()), list(checks), default="imported"), index=index)


RELEASE_REPORT = Contract(
    "release_import_report",
    (
        Column("table", allowed=TABLES),
        Column("file"),
        Column("reason", allowed=REASONS),
        Column("n", "int", doc="rows with this outcome"),
        Column("example", doc="the first such row: row (CSV, TSV) or record number and its values"),
    ),
    key=("table", "file", "reason"),
)


# The FriendBench release has been seen in two layouts (issue 49); each has its preset config.
# (name, the files that identify it, the optional files it may hold, its preset, what it holds)
LAYOUTS = (
    (
        "val/ (JSON lines)",
        ("val/metadata.jsonl", "val/human_responses.jsonl"),
        (),
        "config/friendbench_val.example.yaml",
        "dyad metadata and human ratings; no model predictions (a ratings-only study)",
    ),
    (
        "validation/ (CSV)",
        ("validation/data/metadata.csv",),
        (
            # without human ratings: a models-only study (ratings.raters_per_modality: {})
            "validation/ratings/human_ratings.csv",
            "validation/ratings/model_predictions.csv",
            "validation/baselines/results.csv",
        ),
        "config/friendbench_release.example.yaml",
        "dyad metadata, human ratings, model predictions and the released baselines",
    ),
)


def detect_layout(root, metadata=None) -> tuple[str | None, str]:
    """(the layout's name or None, a sentence saying which FriendBench layout `root` holds, the
    files found and the preset that reads it). A folder holding both layouts (the generated
    release: `omnisocial.familiarity.release_demo`) is named by the one whose metadata file is
    `metadata` (the config's release.metadata), when given."""
    root = Path(root)
    layouts = sorted(LAYOUTS, key=lambda layout: not _is_metadata(root / layout[1][0], metadata))
    for name, needed, optional, preset, holds in layouts:
        if all((root / path).is_file() for path in needed):
            found = [path for path in (*needed, *optional) if (root / path).is_file()]
            absent = [path for path in optional if not (root / path).is_file()]
            return name, (
                f"release.root {root} holds the FriendBench layout {name}: {', '.join(found)}"
                + (f" (not there: {', '.join(absent)})" if absent else "")
                + f"; {holds}; preset {preset}"
                + (f"; {GENERATED_NOTE}" if (root / GENERATED_MARK).is_file() else "")
            )
    shapes = "; or ".join(" + ".join(needed) for _, needed, _, _, _ in LAYOUTS)
    return None, (
        f"release.root {root} holds neither FriendBench layout ({shapes}): the release.* and "
        "ratings.* paths and mappings of the config are read as they are"
    )


# the file the generated release (omnisocial friendbench-demo) marks itself with
GENERATED_MARK = "GENERATED_BY_OMNISOCIAL.json"
GENERATED_NOTE = "a small GENERATED release (omnisocial friendbench-demo), not the real data"


def _is_metadata(path: Path, metadata) -> bool:
    return bool(metadata) and Path(metadata).resolve() == path.resolve()


def layouts_expected() -> str:
    """What each FriendBench layout holds and which preset reads it, for an error message."""
    return "; ".join(
        f"the {name} layout: {' + '.join(needed)}"
        + (f" (and optionally {', '.join(optional)})" if optional else "")
        + f", read by {preset}"
        for name, needed, optional, preset, _ in LAYOUTS
    )


def release_problem(root, metadata) -> str | None:
    """Why the configured release cannot be read (its metadata table is not there), saying what
    release.root holds and what each layout expects; None when the table is there."""
    if Path(metadata).is_file():
        return None
    root = Path(root) if root else Path(metadata).parent
    if not root.is_dir():
        found = f"release.root {root} is not a folder"
    else:
        entries = sorted(p.name + ("/" if p.is_dir() else "") for p in root.iterdir())
        found = f"release.root {root} holds {', '.join(entries[:12]) or 'nothing'}" + (
            ", ..." if len(entries) > 12 else ""
        )
        name, _ = detect_layout(root)
        if name:
            table = next(needed[0] for layout, needed, *_ in LAYOUTS if layout == name)
            found += f" (the {name} layout: point release.metadata at {root / table})"
    return (
        f"release.metadata: {metadata} not found; {found}. The FriendBench release comes in two "
        f"layouts: {layouts_expected()}. Download the release into release.root "
        "(docs/friendbench-release.md), or generate a small one in both layouts with "
        "`omnisocial friendbench-demo data/friendbench`"
    )


def release_problems(config: Mapping) -> list[str]:
    """A release design's metadata table and rating exports (they are files of the release), for
    `config.check_inputs`'s `benchmark_problems`; none for a study that designs its own."""
    if config["study"]["design_source"] != "release" or not config["release"]["metadata"]:
        return []
    release = config["release"]
    problem = release_problem(release["root"], release["metadata"])
    if problem:
        return [problem]  # the exports are files of the same missing release
    ratings = config["ratings"]
    if ratings["source"] != "exports":
        return []
    return [
        f"ratings.exports.{modality}: {path} not found: set it to the release's human ratings file"
        for modality, path in sorted(ratings["exports"].items())
        if path and not Path(path).is_file()
    ]


def _norm(value) -> str:
    return str(value).strip().casefold()


def _merged(mapping: Mapping | None, defaults: Mapping, what: str) -> dict:
    given = dict(mapping or {})
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ValueError(f"{what}: unknown key(s) {', '.join(unknown)}; known: {', '.join(defaults)}")
    return {**defaults, **given}


def _lookup(values: Mapping, labels: tuple[str, ...], what: str, exact: bool = True) -> dict[str, str]:
    """{normalised spelling: label}; `exact`: values must name every label (else a subset)."""
    if (set(values) != set(labels)) if exact else not (values and set(values) <= set(labels)):
        raise ValueError(
            f"{what} needs {'exactly' if exact else 'some of'} the keys {labels}, got {sorted(values)}"
        )
    lookup: dict[str, str] = {}
    for label, spellings in values.items():
        for spelling in [spellings] if isinstance(spellings, str) else spellings:
            key = _norm(spelling)
            if lookup.get(key, label) != label:
                raise ValueError(f"{what}: {spelling!r} maps to two labels")
            lookup[key] = label
    return lookup


def _names(value) -> list[str]:
    """The column(s) a mapping key names: "" -> none, a string -> one, a list -> each."""
    if isinstance(value, str):
        return [value] if value else []
    return [str(v) for v in value or []]


def _columns(raw: pd.DataFrame, spec: dict, keys, required, source: str, what: str) -> dict[str, list[str]]:
    """{mapping key: its column(s)} of the named keys; an unnamed required key or an absent column raises."""
    found = {}
    for key in keys:
        names = _names(spec[key])
        if not names:
            if key in required:
                raise ValueError(f"{source}: {what}.{key} names no column (it is required)")
            continue
        missing = [name for name in names if name not in raw.columns]
        if missing:
            raise ValueError(
                f"{source}: no column {missing[0]!r} for {what}.{key}; "
                f"the file has {', '.join(map(repr, raw.columns[:20]))}"
            )
        found[key] = names
    return found


def _report(table: str, source: str, reason: pd.Series, raw: pd.DataFrame, reasons) -> pd.DataFrame:
    rows = []
    for name in reasons:
        hits = np.flatnonzero((reason == name).to_numpy())
        example = ""
        if len(hits):
            first = raw.iloc[int(hits[0])]
            values = ", ".join(f"{k}={v!r}" for k, v in first.items())
            example = f"{record_label(source, int(hits[0]))}: {values}"[:300]
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
    cols = {
        key: names[0]
        for key, names in _columns(
            raw, spec, DESIGN_COLUMNS, DESIGN_REQUIRED, source, "release.mapping"
        ).items()
    }
    lookup = _lookup(spec["relationship_values"], RELATIONSHIPS, "release.mapping.relationship_values")

    dyad = raw[cols["dyad_id"]].str.strip()
    label = raw[cols["relationship"]].map(_norm).map(lookup)
    reason = _first_reason({"missing_dyad_id": dyad == "", "invalid_label": label.isna()}, raw.index)
    valid = reason == "imported"
    reason[(dyad.duplicated(keep="first") & valid).to_numpy()] = "duplicate"
    report = _report("design", source, reason, raw, DESIGN_REASONS)
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


# --- released predictions ---------------------------------------------------------------------


def _expand(path: str, where: str) -> list[str]:
    """The files of one path: itself, a glob's matches or a folder's table files, sorted."""
    if Path(path).is_file():  # a file is itself, even when its name holds glob characters
        files = [path]
    elif glob.has_magic(path):
        files = sorted(p for p in glob.glob(path, recursive=True) if Path(p).is_file())
    elif Path(path).is_dir():
        # table files only; hidden and _-prefixed ones (_SUCCESS, .crc: writers' bookkeeping) left out
        files = sorted(
            str(p)
            for p in Path(path).iterdir()
            if p.is_file() and p.suffix.lower() in TABLE_FORMATS and not p.name.startswith((".", "_"))
        )
    else:
        files = [path]  # a plain file: Snakemake says so when it does not exist
    if not files:
        raise ValueError(
            f"{where}: {path!r} matches no file (a glob or a folder of CSV, TSV, JSON, JSONL or parquet)"
        )
    return files


def prediction_files(path, mapping: Mapping | None = None) -> list[dict]:
    """release.predictions.path as [{path, model, modality}], one entry per file, in order.

    `path` is "" (none), a path, a glob or a folder of table files (parquet shards), or a list of
    these, where an entry may be {path, model, modality}: that model and / or modality for the
    whole file (its column is then not read). Raises ValueError naming the key when a glob or
    folder matches nothing, a file is listed twice, or a file has neither a `model` (`modality`)
    constant nor a mapped column.
    """
    entries = path if isinstance(path, list) else ([path] if path else [])
    spec = _merged(mapping, PREDICTIONS_MAPPING, "release.predictions.mapping")
    files: list[dict] = []
    for position, entry in enumerate(entries):
        where = "release.predictions.path" + (f"[{position}]" if isinstance(path, list) else "")
        given = dict(entry) if isinstance(entry, Mapping) else {"path": str(entry)}
        for file in _expand(str(given["path"]), where):
            files.append(
                {
                    "path": file,
                    "model": str(given.get("model", "")),
                    "modality": str(given.get("modality", "")),
                }
            )
            for key in ("model", "modality"):
                if not files[-1][key] and not _names(spec[key]):
                    raise ValueError(
                        f"{where}: {file} has no {key}: name its column (release.predictions.mapping.{key}) "
                        f"or give the file's {key} ({{path: ..., {key}: ...}})"
                    )
    seen = [f["path"] for f in files]
    twice = sorted({p for p in seen if seen.count(p) > 1})
    if twice:
        raise ValueError(f"release.predictions.path: {', '.join(twice)} listed more than once")
    return files


def _dyad_ids(item: pd.Series, patterns: Sequence[str], design_ids, case_insensitive: bool) -> pd.Series:
    """The design's dyad id of each raw id through the first `dyad_pattern` it matches; "" for none."""
    known = {_norm(d) if case_insensitive else d: d for d in design_ids}
    if case_insensitive and len(known) < len(set(design_ids)):
        raise ValueError(
            "release.predictions.mapping.case_insensitive_ids: the design has ids that differ only in case"
        )
    found = pd.Series("", index=item.index, dtype=object)
    for pattern in patterns:
        regex = pattern_regex(pattern)
        extracted = item.str.extract(f"^(?:{regex.pattern})$", flags=re.IGNORECASE if case_insensitive else 0)
        extracted = extracted["dyad_id"].fillna("")
        key = extracted.map(_norm) if case_insensitive else extracted
        found = found.where(found != "", key.map(known).fillna(""))
    return found


def _import_file(file: Mapping, spec: dict, truth: Mapping[str, str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the file's prediction rows with their reason, the file as read) of one `prediction_files` entry."""
    source = file["path"]
    raw = read_table_strings(source)
    keys = [key for key in ("model", "modality", "item_id", "label", "confidence") if not file.get(key)]
    cols = _columns(raw, spec, keys, PREDICTIONS_REQUIRED, source, "release.predictions.mapping")
    labels = _lookup(spec["label_values"], RELATIONSHIPS, "release.predictions.mapping.label_values")
    modalities = _lookup(
        spec["modality_values"], MODALITIES, "release.predictions.mapping.modality_values", exact=False
    )
    empty = {_norm(v) for v in spec["empty_values"]} | {""}

    def text(key: str) -> pd.Series:
        return raw[cols[key][0]].str.strip()

    if file.get("model"):
        name = pd.Series(file["model"], index=raw.index, dtype=object)
    else:  # one column, or several joined (model + reasoning effort -> one model), empty parts left out
        parts = zip(*(raw[column].str.strip() for column in cols["model"]), strict=True)
        name = pd.Series(
            [spec["model_separator"].join(p for p in row if p) for row in parts], index=raw.index
        )
    model = (spec["model_prefix"] + name).where(name != "", "")
    patterns = _names(spec["dyad_pattern"])
    item = _dyad_ids(text("item_id"), patterns, truth, bool(spec["case_insensitive_ids"]))
    modality = (
        pd.Series(file["modality"], index=raw.index)
        if file.get("modality")
        else text("modality").map(_norm).map(modalities)
    )
    value = text("label").map(_norm)
    label = value.map(labels).where(~value.isin(empty), NON_ANSWER)

    confidence = text("confidence") if "confidence" in cols else pd.Series("", index=raw.index)
    scale = CONFIDENCE_SCALES[spec["confidence_scale"]]
    number = pd.to_numeric(confidence.replace("", np.nan), errors="coerce") / scale
    bad_confidence = (confidence != "") & ~number.between(0.0, 1.0)
    if spec["confidence_of"] == "familiar":  # P(familiar) -> the confidence in the label given
        number = number.where(label == "familiar", (1.0 - number).where(label == "stranger"))
    checks = {
        "missing_model": model == "",
        "unknown_dyad": item == "",
        "invalid_modality": modality.isna(),
        "invalid_label": label.isna(),
        "invalid_confidence": bad_confidence,
    }
    reason = _first_reason(checks, raw.index)
    rows = pd.DataFrame(
        {
            "model": model,
            "modality": modality,
            "item_id": item,
            "label": label,
            "confidence": number,
            "reason": reason,
        }
    )
    return rows, raw


def import_predictions(
    path, mapping: Mapping | None, design: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(PREDICTIONS, RELEASE_REPORT rows of the predictions) from released model predictions.

    `path` is what `prediction_files` takes (a path, a glob, a folder, a list) or what it returns.
    `truth` comes from the design; every row is imported or counted under one reason, the
    first of a repeated (model, modality, item) in file order is kept (within and across
    files): a repeat with the same answer is a `duplicate`, one with another label or
    confidence a `conflict`. A confidence outside its scale or not a number is
    `invalid_confidence`.
    """
    spec = _merged(mapping, PREDICTIONS_MAPPING, "release.predictions.mapping")
    files = prediction_files(str(path) if isinstance(path, os.PathLike) else path, spec)  # idempotent
    from omnisocial.stats.sdt import truth_map  # scipy: not while Snakemake parses (module doc)

    truth = truth_map(design)
    parts = [(file["path"], *_import_file(file, spec, truth)) for file in files]
    if not parts:
        return PREDICTIONS.empty(), RELEASE_REPORT.empty()
    rows = pd.concat([part for _, part, _ in parts], keys=range(len(parts)), names=["file", "row"])
    # a repeated (model, modality, item): the first is kept; a repeat that answers otherwise (label
    # or confidence) is a conflict, not a harmless copy
    key = ["model", "modality", "item_id"]
    valid = rows[rows["reason"] == "imported"]
    repeated = valid.duplicated(key, keep="first")
    kept = valid[~repeated].set_index(key).loc[pd.MultiIndex.from_frame(valid.loc[repeated, key])]
    again = valid[repeated]
    differs = (again["label"].to_numpy() != kept["label"].to_numpy()) | ~np.isclose(
        again["confidence"].to_numpy(float), kept["confidence"].to_numpy(float), equal_nan=True
    )
    rows.loc[again.index, "reason"] = np.where(differs, "conflict", "duplicate")
    report = pd.concat(
        [
            _report("predictions", source, rows.loc[position, "reason"], raw, PREDICTION_REASONS)
            for position, (source, _, raw) in enumerate(parts)
        ],
        ignore_index=True,
    )
    keep = rows[rows["reason"] == "imported"]
    frame = pd.DataFrame(
        {
            "model": keep["model"],
            "modality": keep["modality"],
            "item_id": keep["item_id"],
            "truth": keep["item_id"].map(truth),
            "label": keep["label"],
            "confidence": keep["confidence"].astype(float),
        }
    ).sort_values(["model", "modality", "item_id"], kind="stable")
    predictions = PREDICTIONS.validate(frame.reset_index(drop=True)) if len(frame) else PREDICTIONS.empty()
    return predictions, RELEASE_REPORT.validate(report)


class PredictionLossError(ValueError):
    """Released predictions lost more rows than `release.predictions.max_lost_share` allows."""


def check_prediction_losses(report: pd.DataFrame, max_lost_share: float = 0.0) -> None:
    """Raise PredictionLossError when the import's lost share is over budget or a file imported nothing.

    The lost share is the rows under a reason other than KEPT_PREDICTION_REASONS over all rows
    of all files (shards of one release are one import); the message names each file with a
    loss, its reason counts and first examples.
    """
    if not 0 <= max_lost_share <= 1:
        raise ValueError(f"release.predictions.max_lost_share must be within [0, 1], got {max_lost_share!r}")
    rows = report[(report["table"] == "predictions") & (report["n"] > 0)]
    lost = rows[~rows["reason"].isin(KEPT_PREDICTION_REASONS)]
    share = lost["n"].sum() / rows["n"].sum() if len(rows) else 0.0
    imported = rows[rows["reason"] == "imported"].groupby("file")["n"].sum()
    empty = [source for source in rows["file"].unique() if imported.get(source, 0) == 0]
    if share <= max_lost_share and not empty:
        return
    lines = []
    for source, part in rows.groupby("file", sort=False):
        if source not in empty and source not in set(lost["file"]):
            continue
        counts = ", ".join(f"{r.reason} {int(r.n)}" for r in part.itertuples(index=False))
        why = "no row imported; " if source in empty else ""
        lines.append(f"  {source}: {why}reasons: {counts}")
        lines += [f"    first {r.reason}: {r.example}" for r in lost[lost["file"] == source].itertuples()]
    raise PredictionLossError(
        f"released predictions import failed: {share:.1%} of {int(rows['n'].sum())} rows lost "
        f"(release.predictions.max_lost_share = {max_lost_share:g})"
        + (f", and {len(empty)} file(s) imported no row" if empty else "")
        + "\n"
        + "\n".join(lines)
        + "\n  check release.predictions.mapping (model, item_id, dyad_pattern, modality_values, "
        "label_values, confidence_scale) against the files"
    )

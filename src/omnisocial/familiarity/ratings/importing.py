"""Survey exports and rater questionnaires into trials (see `omnisocial.familiarity.ratings`, Import).

Exports are CSV, TSV, JSON, JSON lines or parquet, read alike (`omnisocial.io.read_table_strings`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from omnisocial.familiarity.patterns import pattern_regex
from omnisocial.familiarity.ratings.design import MODALITIES
from omnisocial.io import read_table_strings, record_label
from omnisocial.stats.sdt import truth_map
from omnisocial.tables import RELATIONSHIPS, TRIALS, Column, Contract

REASONS = (
    "imported",
    "not_shown",
    "filtered",
    "practice",
    "unanswered",
    "no_consent",
    "playback_flagged",
    "missing_rater_id",
    "unknown_dyad",
    "empty_response",
    "invalid_response",
    "duplicate",
    "conflict",
)
# Outcomes the study expects (planned-missing blanks, `require` filters, declared practice
# trials, a rater's non-answer, a repeat of the kept answer); the others lose an answer
# someone gave, and `check_losses` fails the import when they exceed their budget.
LOST_REASONS = ("missing_rater_id", "unknown_dyad", "invalid_response", "conflict")
# not part of a modality's trials at all (the share of lost trials is taken without them)
OUTSIDE_REASONS = ("not_shown", "filtered", "practice", "unanswered", "no_consent")
# the reasons an export's `exclude_column` may name: an answer stored without consent (never
# part of the study) and a clip played faster than real time or seeked (an answer given, not
# lost, but not to a stimulus heard as recorded)
EXCLUDE_REASONS = ("no_consent", "playback_flagged")
KEEP_RULES = ("first", "last", "error")
IMPORT_REPORT = Contract(
    "import_report",
    (
        Column("modality", allowed=MODALITIES),
        Column("reason", allowed=REASONS),
        Column("n", "int", doc="trials (export records, or wide cells) with this outcome"),
        Column(
            "lost", "bool", doc="an answer given but not imported (LOST_REASONS), counted by check_losses"
        ),
        Column("example", doc="the first such trial: file row / record, rater, dyad, response"),
    ),
    key=("modality", "reason"),
)

DEFAULT_MAPPING = {
    "rater_id": "ResponseId",
    "dyad_id": "stimulus",  # long exports: the column naming the dyad
    "response": "answer",  # long exports: the column holding the answer
    "response_values": {"familiar": ["Know each other", "familiar"], "stranger": ["Strangers", "just met"]},
    "dyad_pattern": "{dyad_id}",  # how a dyad id is written in the dyad column, e.g. "video/{dyad_id}.mp4"
    "wide": False,
    "column_pattern": "{dyad_id}",  # wide exports: the answer columns, e.g. "{dyad_id}_rating"
    "ignore_columns": [],  # wide exports: other columns the pattern would match (StartDate, ...)
    "empty_values": [],  # codes for a shown but unanswered trial, e.g. "-99"
    "practice_dyads": [],  # practice / attention-check stimuli (as written or as dyad id): `practice`
    "skip_rows": 0,  # rows under the header to skip (Qualtrics: 2)
    "require": {},  # {column: [accepted values]}: other rows are `filtered`
    "answered_column": "",  # a column that is false on a trial an incomplete session never reached
    "exclude_column": "",  # a column naming why an answer is not imported (EXCLUDE_REASONS), else empty
    "keep": "first",  # a (rater, dyad) rated twice: keep the first or last valid rating, or error
}


def _norm(value) -> str:
    return str(value).strip().casefold()


def _values(values) -> list:
    """A config value that may be one value or a list of them (YAML may give ints: 1, 0)."""
    return list(values) if isinstance(values, (list, tuple, set)) else [values]


def _response_lookup(response_values: Mapping) -> dict[str, str]:
    if set(response_values) != set(RELATIONSHIPS):
        raise ValueError(
            f"response_values needs exactly the keys {RELATIONSHIPS}, got {sorted(response_values)}"
        )
    lookup: dict[str, str] = {}
    for label, values in response_values.items():
        for value in _values(values):
            key = _norm(value)
            if not key:
                raise ValueError(f"response_values[{label}] holds an empty value")
            if lookup.get(key, label) != label:
                raise ValueError(f"response value {value!r} maps to both familiar and stranger")
            lookup[key] = label
    return lookup


def _merged_mapping(mapping: Mapping | None) -> dict:
    merged = {**DEFAULT_MAPPING, **(dict(mapping) if mapping else {})}
    unknown = sorted(set(merged) - set(DEFAULT_MAPPING))
    if unknown:
        raise ValueError(f"unknown mapping key(s): {', '.join(unknown)}; known: {', '.join(DEFAULT_MAPPING)}")
    if merged["keep"] not in KEEP_RULES:
        raise ValueError(f"mapping keep must be one of {', '.join(KEEP_RULES)}, got {merged['keep']!r}")
    return merged


def applicable_reasons(mapping: Mapping | None) -> tuple[str, ...]:
    """The REASONS an export read with `mapping` can produce (its import report lists only these)."""
    spec = _merged_mapping(mapping)
    skip = set()
    if not spec["wide"]:
        skip.add("not_shown")  # a long export has no blank cells of unshown dyads
    elif not spec["empty_values"]:
        skip.add("empty_response")  # a wide export's blank cell is `not_shown`
    if not spec["require"]:
        skip.add("filtered")
    if not spec["practice_dyads"]:
        skip.add("practice")
    if not spec["answered_column"]:
        skip.add("unanswered")
    if not spec["exclude_column"]:
        skip |= set(EXCLUDE_REASONS)
    if spec["keep"] == "error":
        skip |= {"duplicate", "conflict"}  # a repeat raises instead
    return tuple(reason for reason in REASONS if reason not in skip)


def _need_columns(raw: pd.DataFrame, columns: Sequence[str], source: str) -> None:
    missing = [c for c in columns if c not in raw.columns]
    if missing:
        raise ValueError(
            f"{source}: export lacks column(s) {', '.join(map(repr, missing))} named in the mapping; "
            f"it has {', '.join(map(repr, raw.columns[:20]))}"
        )


def _export_trials(raw: pd.DataFrame, mapping: dict, source: str) -> pd.DataFrame:
    """One row per trial: file position, answer column (wide), rater, dyad and response (raw text)."""
    rater_col = mapping["rater_id"]
    if not mapping["wide"]:
        _need_columns(raw, [rater_col, mapping["dyad_id"], mapping["response"]], source)
        return pd.DataFrame(
            {
                "position": raw.index,
                "column": "",
                "rater": raw[rater_col].to_numpy(),
                "dyad": raw[mapping["dyad_id"]].to_numpy(),
                "response": raw[mapping["response"]].to_numpy(),
                "column_dyad": False,
            }
        )
    _need_columns(raw, [rater_col], source)
    regex = pattern_regex(mapping["column_pattern"])
    # the rater column, `require` columns and `ignore_columns` are never answer columns
    skip = {rater_col, *dict(mapping["require"]), *mapping["ignore_columns"]}
    columns = [(c, m.group("dyad_id")) for c in raw.columns if c not in skip and (m := regex.fullmatch(c))]
    if not columns:
        raise ValueError(f"{source}: no column matches column_pattern {mapping['column_pattern']!r}")
    parts = [
        pd.DataFrame(
            {
                "position": raw.index,
                "column": column,
                "rater": raw[rater_col].to_numpy(),
                "dyad": dyad,
                "response": raw[column].to_numpy(),
                "column_dyad": True,
            }
        )
        for column, dyad in columns
    ]
    # trials in file order: by row, then by column order within the row
    return pd.concat(parts, ignore_index=True).sort_values("position", kind="stable").reset_index(drop=True)


def _where(source: str, trial) -> str:
    where = record_label(source, int(trial.position))
    return f"{where}, column {trial.column!r}" if trial.column else where


def _example(source: str, trial) -> str:
    return f"{_where(source, trial)}: rater={trial.rater!r} dyad={trial.dyad!r} response={trial.response!r}"


def import_ratings(
    export_csv, mapping: Mapping | None, modality: str, design_truth, alias=None, dyad_map=None
) -> tuple:
    """Read one experiment's survey export into (TRIALS frame, IMPORT_REPORT frame).

    `mapping` overrides `DEFAULT_MAPPING` (keys explained there and in the module docstring);
    `design_truth` is a dyad -> familiar/stranger mapping, Series or DESIGN frame. Every trial
    of the export is either imported or excluded and counted under one reason of the report,
    with the first offending trial as its example ("row N" in CSV / TSV, header = row 1;
    "record N", from 1, in JSON, JSON lines and parquet); the report lists the reasons that
    can apply to this export (`applicable_reasons`) and `sum(report.n)` is the number of
    trials in the export. TRIALS rows are sorted by rater_id then dyad_id; correct =
    response == truth. `keep: error` raises ValueError on a (rater, dyad) rated twice.
    `alias` turns the export's rater ids into the rater ids of every output, report examples
    included (frozen.pseudonymizer); `dyad_map` turns the export's dyad labels into the
    current design's dyad ids through what they showed (frozen.export_dyad_map; labels it does
    not name are kept).
    """
    if modality not in MODALITIES:
        raise ValueError(f"modality must be one of {MODALITIES}, got {modality!r}")
    spec = _merged_mapping(mapping)
    truth = truth_map(design_truth)
    lookup = _response_lookup(spec["response_values"])
    empty_codes = {_norm(v) for v in _values(spec["empty_values"])}
    practice = {str(v).strip() for v in _values(spec["practice_dyads"])} - {""}  # a blank dyad stays lost
    if practice & set(truth):
        raise ValueError(f"mapping practice_dyads names design dyad(s) {sorted(practice & set(truth))}")
    dyad_regex = pattern_regex(spec["dyad_pattern"])
    source = str(export_csv)

    raw = read_table_strings(export_csv)
    if raw.columns.empty and not spec["wide"]:
        # JSON (lines) or parquet without a record names no column: an export without trials
        raw = pd.DataFrame(columns=[spec["rater_id"], spec["dyad_id"], spec["response"], *spec["require"]])
    raw = raw.iloc[int(spec["skip_rows"]) :]
    trials = _export_trials(raw, spec, source)
    if alias is not None:
        trials["rater"] = trials["rater"].map(lambda value: alias("" if pd.isna(value) else value))

    if spec["answered_column"]:
        _need_columns(raw, [spec["answered_column"]], source)
        unanswered = raw[spec["answered_column"]].map(_norm).isin({"false", "0", "no"})
    else:
        unanswered = pd.Series(False, index=raw.index)
    excluded = pd.Series("", index=raw.index)
    if spec["exclude_column"]:
        _need_columns(raw, [spec["exclude_column"]], source)
        excluded = raw[spec["exclude_column"]].fillna("").astype(str).str.strip()
        unknown = sorted(set(excluded) - {"", *EXCLUDE_REASONS})
        if unknown:
            raise ValueError(
                f"{source}: column {spec['exclude_column']!r} holds {unknown}; allowed: "
                f"{', '.join(EXCLUDE_REASONS)} or empty"
            )
    passes = pd.Series(True, index=raw.index)
    for column, accepted in dict(spec["require"]).items():
        _need_columns(raw, [column], source)
        allowed = {_norm(v) for v in _values(accepted)}
        passes &= raw[column].map(_norm).isin(allowed)

    rater = trials["rater"].astype(str).str.strip()
    value = trials["response"].astype(str).str.strip().str.casefold()
    raw_dyad = trials["dyad"].astype(str).str.strip()
    extracted = raw_dyad.str.extract(f"^(?:{dyad_regex.pattern})$")["dyad_id"].fillna("")
    dyad = raw_dyad.where(trials["column_dyad"], extracted)
    if dyad_map:
        dyad = dyad.map(lambda label: dyad_map.get(label, label))
    known = set(truth)
    conditions = [
        trials["column_dyad"] & (value == ""),
        ~trials["position"].map(passes).astype(bool),
        raw_dyad.isin(practice) | dyad.isin(practice),
        trials["position"].map(unanswered).astype(bool),
        trials["position"].map(excluded) == "no_consent",
        trials["position"].map(excluded) == "playback_flagged",
        rater == "",
        ~dyad.isin(known),
        (value == "") | value.isin(empty_codes),
        ~value.isin(set(lookup)),
    ]
    names = [
        "not_shown",
        "filtered",
        "practice",
        "unanswered",
        "no_consent",
        "playback_flagged",
        "missing_rater_id",
        "unknown_dyad",
        "empty_response",
        "invalid_response",
    ]
    reason = pd.Series(np.select(conditions, names, default="imported"), index=trials.index)
    label = value.map(lookup)
    examples: dict[str, str] = {}
    valid = reason == "imported"
    pairs = pd.DataFrame({"rater": rater, "dyad": dyad, "label": label})[valid]
    repeated = pairs.duplicated(["rater", "dyad"], keep=False)
    if repeated.any() and spec["keep"] == "error":
        first = pairs[repeated].iloc[0]
        same = pairs[repeated & (pairs["rater"] == first.rater) & (pairs["dyad"] == first.dyad)].index
        raise ValueError(
            f"{source}: {int(repeated.sum())} ratings repeat a (rater, dyad) pair and the mapping says "
            f"keep: error; e.g. rater {first.rater!r} dyad {first.dyad!r} at "
            + ", ".join(
                f"{_where(source, t)} ({t.response!r})" for t in trials.loc[same].itertuples(index=False)
            )
            + " (keep: first or last keeps one of them)"
        )
    if repeated.any():
        keep = "first" if spec["keep"] == "first" else "last"
        again = pairs.duplicated(["rater", "dyad"], keep=keep)
        kept = pairs[~again]
        kept_at = pd.Series(kept.index, index=pd.MultiIndex.from_frame(kept[["rater", "dyad"]]))
        dropped = pairs[again]
        kept_of = pd.Series(
            kept_at.reindex(pd.MultiIndex.from_frame(dropped[["rater", "dyad"]])).to_numpy(),
            index=dropped.index,
        )
        # a repeat of the kept answer loses nothing; a different answer is a conflict
        differs = dropped["label"].to_numpy() != label.loc[kept_of.to_numpy()].to_numpy()
        reason[dropped.index] = np.where(differs, "conflict", "duplicate")
        for name, hits in (("duplicate", dropped.index[~differs]), ("conflict", dropped.index[differs])):
            if len(hits):
                trial, other = (
                    next(trials.loc[[i]].itertuples(index=False)) for i in (hits[0], kept_of[hits[0]])
                )
                examples[name] = (
                    f"{_example(source, trial)} (kept {_where(source, other)}: {other.response!r})"
                )
    trials["reason"] = reason

    report_rows = []
    for name in applicable_reasons(spec):
        hits = trials[trials["reason"] == name]
        example = examples.get(name) or (
            _example(source, next(hits.itertuples(index=False))) if len(hits) else ""
        )
        report_rows.append(
            {
                "modality": modality,
                "reason": name,
                "n": len(hits),
                "lost": name in LOST_REASONS,
                "example": example,
            }
        )
    report = IMPORT_REPORT.validate(pd.DataFrame(report_rows))

    imported = trials["reason"] == "imported"
    out = pd.DataFrame(
        {
            "rater_id": rater[imported].to_numpy(dtype=object),
            "dyad_id": dyad[imported].to_numpy(dtype=object),
            "modality": modality,
            "response": label[imported].to_numpy(dtype=object),
        }
    )
    out["correct"] = out["response"].to_numpy() == out["dyad_id"].map(truth).to_numpy()
    out = out.sort_values(["rater_id", "dyad_id"], kind="stable")
    return (TRIALS.empty() if out.empty else TRIALS.validate(out)), report


def import_experiments(
    exports: Mapping[str, object], mappings: Mapping, design_truth, alias=None, dyad_maps=None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Import one export per modality; concatenated (TRIALS, IMPORT_REPORT), modalities in order.

    `mappings` is one mapping for every export, or {modality: mapping}; `alias` and
    `dyad_maps` ({modality: dyad_map}) as in `import_ratings`.
    """
    per_modality = set(mappings) <= set(MODALITIES) and bool(mappings)
    trials, reports = [], []
    for modality in [m for m in MODALITIES if m in exports]:
        mapping = mappings[modality] if per_modality else mappings
        dyad_map = (dyad_maps or {}).get(modality)
        got, report = import_ratings(exports[modality], mapping, modality, design_truth, alias, dyad_map)
        trials.append(got)
        reports.append(report)
    unknown = sorted(set(exports) - set(MODALITIES))
    if unknown:
        raise ValueError(f"unknown modality key(s) {unknown}")
    if not trials:
        return TRIALS.empty(), IMPORT_REPORT.empty()
    return TRIALS.validate(pd.concat(trials, ignore_index=True)), pd.concat(reports, ignore_index=True)


class ImportLossError(ValueError):
    """A ratings import lost more answers than `ratings.max_lost_share` allows, or imported none."""


def loss_summary(report: pd.DataFrame) -> pd.DataFrame:
    """Per modality: imported, lost and considered trials (all but OUTSIDE_REASONS) and the lost share."""
    rows = []
    for modality, part in report.groupby("modality", sort=False):
        n = dict(zip(part["reason"], part["n"].astype(int), strict=True))
        considered = sum(v for k, v in n.items() if k not in OUTSIDE_REASONS)
        lost = sum(n.get(k, 0) for k in LOST_REASONS)
        rows.append(
            {
                "modality": modality,
                "imported": n.get("imported", 0),
                "lost": lost,
                "considered": considered,
                "lost_share": lost / considered if considered else 0.0,
            }
        )
    return pd.DataFrame(rows, columns=["modality", "imported", "lost", "considered", "lost_share"])


def check_losses(report: pd.DataFrame, max_lost_share: float = 0.0, exports: Mapping | None = None) -> None:
    """Raise ImportLossError when a modality's lost share exceeds `max_lost_share` or it imported nothing.

    The lost share is the LOST_REASONS trials over the modality's trials without
    OUTSIDE_REASONS (planned-missing blanks, `require` filters, practice trials). The message
    gives every failing modality's reason counts and the first example of each lost reason
    (of each other reason when nothing was lost), and `exports` ({modality: path}) names the files.
    """
    if not 0 <= max_lost_share <= 1:
        raise ValueError(f"ratings.max_lost_share must be within [0, 1], got {max_lost_share!r}")
    failing = []
    for row in loss_summary(report).itertuples(index=False):
        if row.imported > 0 and row.lost_share <= max_lost_share:
            continue
        part = report[(report["modality"] == row.modality) & (report["n"] > 0)]
        counts = ", ".join(f"{r.reason} {int(r.n)}" for r in part.itertuples(index=False))
        where = f" ({exports[row.modality]})" if exports and row.modality in exports else ""
        why = "no trial imported" if row.imported == 0 else f"{row.lost_share:.1%} lost"
        lines = [
            f"  {row.modality}{where}: {why}; {row.lost} of {row.considered} trial(s) lost",
            f"    reasons: {counts or 'the export holds no trial'}",
        ]
        shown = part[part["lost"].astype(bool)]
        if shown.empty:
            shown = part[part["reason"] != "imported"]
        lines += [f"    first {r.reason}: {r.example}" for r in shown.itertuples(index=False)]
        failing.append((row.modality, lines))
    if failing:
        raise ImportLossError(
            f"ratings import of {', '.join(m for m, _ in failing)} failed: more answers lost than "
            f"ratings.max_lost_share = {max_lost_share:g} allows, or none imported\n"
            + "\n".join(line for _, lines in failing for line in lines)
            + f"\n  lost = {', '.join(LOST_REASONS)}; check ratings.mapping (rater_id, dyad_id, "
            "dyad_pattern, response, response_values, keep) against the export"
        )


# --------------------------------------------------------------------------------------------
# Rater covariates
# --------------------------------------------------------------------------------------------


def _numeric(raw: pd.DataFrame, column: str, item_values: Mapping[str, float], source: str) -> pd.Series:
    """A questionnaire column as floats: numbers, labels from item_values, blank -> NaN."""
    values = []
    for position, text in zip(raw.index, raw[column], strict=True):
        key = _norm(text)
        if key == "":
            values.append(math.nan)
        elif key in item_values:
            values.append(float(item_values[key]))
        else:
            try:
                values.append(float(key))
            except ValueError:
                raise ValueError(
                    f"{source} {record_label(source, position)} column {column}: {text!r} is neither "
                    f"a number nor one of the mapping's item_values"
                ) from None
    return pd.Series(values, index=raw.index, dtype=float)


def import_covariates(csv, mapping: Mapping, alias=None) -> pd.DataFrame:
    """Rater covariates [rater_id, one column per scale, one per copied item].

    mapping: `rater_id` (column), optional `skip_rows`, `item_values` ({label: number}, matched
    trimmed and case-insensitively), `scales` ({name: {items: [...], reverse: [...], min, max,
    min_items}}) and `columns` ({name: column}). A scale score is the mean of its answered items
    after reverse-keying (min + max - x), NaN when fewer than `min_items` (default: all) were
    answered. Rows without a rater id are skipped and a repeated rater id keeps its first row;
    both with a warning saying how many. A value that is not a number raises ValueError naming
    row and column. `alias` turns the rater ids into those of the trials (frozen.pseudonymizer).
    """
    source = str(csv)
    raw = read_table_strings(csv).iloc[int(mapping.get("skip_rows", 0)) :]
    rater_col = mapping["rater_id"]
    scales = dict(mapping.get("scales") or {})
    columns = dict(mapping.get("columns") or {})
    clash = sorted(set(scales) & set(columns) | ({"rater_id"} & (set(scales) | set(columns))))
    if clash:
        raise ValueError(f"covariate name(s) {clash} used twice")
    needed = [rater_col, *columns.values(), *(i for s in scales.values() for i in s["items"])]
    _need_columns(raw, list(dict.fromkeys(needed)), source)
    item_values = {_norm(k): float(v) for k, v in dict(mapping.get("item_values") or {}).items()}

    rater = raw[rater_col].map(lambda v: str(v).strip())
    if alias is not None:
        rater = rater.map(alias)
    blank = rater == ""
    if blank.any():
        warnings.warn(f"{source}: {int(blank.sum())} row(s) without a rater id skipped", stacklevel=2)
    repeated = rater.duplicated() & ~blank
    if repeated.any():
        warnings.warn(
            f"{source}: {int(repeated.sum())} repeated rater id(s) (e.g. {rater[repeated].iloc[0]!r}); "
            "the first row of each is kept",
            stacklevel=2,
        )
    keep = ~blank & ~repeated
    raw, out = raw[keep], pd.DataFrame({"rater_id": rater[keep].to_numpy()})
    for name, scale in scales.items():
        items = list(scale["items"])
        reverse = set(scale.get("reverse") or [])
        if reverse - set(items):
            raise ValueError(
                f"scale {name}: reverse item(s) {sorted(reverse - set(items))} are not its items"
            )
        if reverse and ("min" not in scale or "max" not in scale):
            raise ValueError(f"scale {name}: reverse-keyed items need the scale's min and max")
        scored = []
        for item in items:
            values = _numeric(raw, item, item_values, source).to_numpy()
            scored.append(scale["min"] + scale["max"] - values if item in reverse else values)
        matrix = np.column_stack(scored)
        answered = (~np.isnan(matrix)).sum(axis=1)
        min_items = int(scale.get("min_items", len(items)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            score = np.nanmean(matrix, axis=1)
        out[name] = np.where(answered >= max(min_items, 1), score, np.nan)
    for name, column in columns.items():
        out[name] = _numeric(raw, column, item_values, source).to_numpy()
    return out.reset_index(drop=True)

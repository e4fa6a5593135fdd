"""Human ratings of the familiarity study (benchmarks.md 1.6): design, import, rater differences.

Three separate experiments, one per modality. The planned-missing design splits the sampled
dyads into blocks; every rater rates `blocks_per_rater` blocks (6 blocks of 16 and 2 blocks per
rater: 32 of 96 dyads), so about 90 raters give every dyad 30 ratings.

Design
------
- `block_design`: every design cell's dyads are shuffled (seeded) and dealt round-robin over the
  blocks. The deal runs on from cell to cell, cells taken by relationship then cell name, so
  every block holds every cell within one dyad, the blocks' sizes differ by at most one, and
  so do their numbers of familiar and of stranger dyads. Within a cell the shuffled dyads are
  dealt early clips first, so clip positions spread over blocks too.
- `rater_assignments`: raters are dealt the C(n_blocks, blocks_per_rater) block combinations in
  cycles; a full cycle uses every combination once, so after each full cycle every block (and
  so every dyad) has the same number of raters. For pairs of an even number of blocks a cycle
  is a round-robin schedule (the "circle method"): n_blocks - 1 rounds of n_blocks / 2 disjoint
  pairs, so after each round every block has one more rater and at any point the raters per
  dyad differ by at most one. Otherwise each rater takes the unused combination whose blocks
  have the fewest raters (seeded ties), and the spread never exceeds one cycle's worth
  (`blocks_per_rater * C(n_blocks, blocks_per_rater) / n_blocks`).
- `survey_table` / `survey_lists` / `write_survey_lists`: one list per rater and modality, the
  rater's dyads in an order drawn from `numpy.random.default_rng([seed, crc32(modality),
  crc32(rater_id)])`, so a rater's order does not change when other raters are added; written
  as `{surveys_dir}/{modality}/{rater_id}.csv` with columns order, dyad_id, stimulus.

Import
------
`import_ratings` reads one survey export (a CSV per experiment) through a column mapping
(`DEFAULT_MAPPING` lists every key). Long exports hold one row per trial; wide exports
(`wide: true`) one row per rater and one column per dyad named by `column_pattern`, where
`{dyad_id}` stands for the dyad id (a blank cell there is a dyad the rater was not shown: the
planned-missing design, counted as `not_shown`, not as an exclusion). Every column matching the
pattern is an answer column, except the rater id, `require` and `ignore_columns` columns, so a
matching column of an unknown dyad (e.g. `D999_rating`) shows up as `unknown_dyad`. Every trial of the export
lands in exactly one row of the import report (`IMPORT_REPORT`), checked in this order:

  not_shown         wide exports only: a blank cell;
  filtered          the row fails a `require` condition (e.g. Finished must be True);
  missing_rater_id  blank rater id;
  unknown_dyad      the dyad id (after `dyad_pattern`) is blank or not in the design truth;
  empty_response    blank response (long exports), or a value listed in `empty_values`;
  invalid_response  a response that is none of `response_values` (matched trimmed and
                    case-insensitively);
  duplicate         a second or later valid rating of the same (rater, dyad) in the export:
                    the first valid rating in file order is kept;
  imported          the trials returned.

Nothing is dropped silently and no bad row raises; a mapping that names a column the export
lacks (a configuration error) raises ValueError naming it.

Rater covariates and individual differences
-------------------------------------------
`import_covariates` scores questionnaire scales (mean of the answered items after
reverse-keying, NaN when fewer than `min_items` were answered) and copies single items.
`individual_differences` relates every covariate to each rater's accuracy, d' and c
(`stats.crowds.per_rater_sdt`), per modality: Pearson and Spearman r with p-values on the raters
with both values. It adds one OLS (statsmodels) of per-rater accuracy on all covariates together
with modality fixed effects (intercept plus a dummy per non-reference modality), listwise
complete raters; standard errors are HC3 when every rater is in one experiment and clustered by
rater when a rater appears in several.

Simulated panel (demo)
----------------------
`simulate_panel` draws a rater panel from a logistic model and writes it as survey exports in
the shape `SIMULATED_MAPPING` reads, then imports them, so the import path runs end to end.
For rater r, dyad d with truth y (+1 familiar, -1 stranger) in modality m:

    P(response "familiar") = logistic(y * (mu_m + skill_r - difficulty_d - difficulty_dm) - bias_r)

so P(correct) = logistic(mu_m + skill_r - difficulty_d -/+ bias_r) and bias_r > 0 leans toward
"stranger" (c > 0). skill ~ N(0, skill_sd), bias ~ N(0, bias_sd), difficulty_d ~ N(0, dyad_sd)
shared by the modalities, difficulty_dm ~ N(0, dyad_modality_sd). A rater id is one person
across modalities. The questionnaire's latent trait is covariate_r * skill / skill_sd +
sqrt(1 - covariate_r^2) * noise; the social information processing items (1-7, the last one
reverse-keyed) load on it, the cue-use items (1-5) are unrelated. Every output carries
`SIMULATED_LABEL` in a `source` column, and written files have `simulated` in their names.
"""

from __future__ import annotations

import itertools
import math
import re
import tempfile
import warnings
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from omnisocial.io import read_csv_strings, write_csv
from omnisocial.stats.crowds import per_rater_sdt
from omnisocial.stats.sdt import NOISE, SIGNAL, truth_map
from omnisocial.tables import DESIGN, RELATIONSHIPS, TRIALS, Column, Contract

MODALITIES = ("text", "audio", "video")
SIMULATED_LABEL = "simulated rater panel (demo)"
# Stimulus paths as stimuli.py writes them, relative to the stimuli folder.
STIMULUS_PATTERNS = {
    "text": "text/{dyad_id}.txt",
    "audio": "audio/{dyad_id}.wav",
    "video": "video/{dyad_id}.mp4",
}

BLOCKS = Contract("blocks", (Column("dyad_id"), Column("block", "int")), key=("dyad_id",))
ASSIGNMENTS = Contract(
    "rater_assignments", (Column("rater_id"), Column("block", "int")), key=("rater_id", "block")
)
SURVEY_LIST = Contract(
    "survey_list",
    (Column("order", "int"), Column("dyad_id"), Column("stimulus", doc="stimulus path for the survey")),
    key=("order",),
)
REASONS = (
    "imported",
    "not_shown",
    "filtered",
    "missing_rater_id",
    "unknown_dyad",
    "empty_response",
    "invalid_response",
    "duplicate",
)
IMPORT_REPORT = Contract(
    "import_report",
    (
        Column("modality", allowed=MODALITIES),
        Column("reason", allowed=REASONS),
        Column("n", "int", doc="trials (export rows, or wide cells) with this outcome"),
        Column("example", doc="the first such trial: file row, rater, dyad, response"),
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
    "skip_rows": 0,  # rows under the header to skip (Qualtrics: 2)
    "require": {},  # {column: [accepted values]}: other rows are `filtered`
}

SIMULATED_MAPPING = {
    **DEFAULT_MAPPING,
    "response_values": {"familiar": ["Know each other"], "stranger": ["Strangers"]},
    "column_pattern": "{dyad_id}_rating",
    "require": {"Finished": ["True"]},
}
SIMULATED_COVARIATE_MAPPING = {
    "rater_id": "ResponseId",
    "scales": {
        "sip": {
            "items": ["SIP_1", "SIP_2", "SIP_3", "SIP_4", "SIP_5", "SIP_6"],
            "reverse": ["SIP_6"],
            "min": 1,
            "max": 7,
        }
    },
    "columns": {"cue_voice": "CUE_voice", "cue_face": "CUE_face", "cue_words": "CUE_words"},
}
DEFAULT_PANEL_PARAMS = {
    "modality_effects": {"text": 0.1, "audio": 0.3, "video": 0.4},
    "skill_sd": 0.5,
    "bias_sd": 0.3,
    "dyad_sd": 0.5,
    "dyad_modality_sd": 0.2,
    "covariate_r": 0.6,
    "p_blank": 0.0,
    "export_format": "long",
}


def _stable_int(text: str) -> int:
    return zlib.crc32(str(text).encode("utf-8"))


# --------------------------------------------------------------------------------------------
# Planned-missing design
# --------------------------------------------------------------------------------------------


def block_design(design: pd.DataFrame, n_blocks: int = 6, seed: int = 0) -> pd.DataFrame:
    """Blocks 1..n_blocks for the sampled dyads, balanced over design cells (module docstring).

    Returns a BLOCKS frame [dyad_id, block] sorted by dyad_id. Draws: one seeded permutation
    per cell, cells in (relationship, cell) order, from `numpy.random.default_rng(seed)`.
    """
    frame = DESIGN.validate(design)
    n_blocks = int(n_blocks)
    if n_blocks < 1:
        raise ValueError(f"n_blocks must be >= 1, got {n_blocks}")
    if n_blocks > len(frame):
        raise ValueError(f"{n_blocks} blocks for {len(frame)} dyads: some blocks would be empty")
    rng = np.random.default_rng(seed)
    position_rank = {"early": 0, "late": 1}
    cells = frame[["relationship", "cell"]].drop_duplicates().sort_values(["relationship", "cell"])
    rows, pointer = [], 0
    for cell in cells["cell"]:
        members = frame[frame["cell"] == cell].sort_values("dyad_id")
        shuffled = members.iloc[rng.permutation(len(members))]
        ranks = shuffled["position"].map(position_rank)
        dealt = shuffled.assign(_rank=ranks.to_numpy()).sort_values("_rank", kind="stable")
        for offset, dyad in enumerate(dealt["dyad_id"]):
            rows.append((dyad, (pointer + offset) % n_blocks + 1))
        pointer = (pointer + len(dealt)) % n_blocks
    out = pd.DataFrame(rows, columns=["dyad_id", "block"]).sort_values("dyad_id")
    return BLOCKS.validate(out)


def _round_robin_cycle(block_ids: Sequence[int], rng: np.random.Generator) -> list[tuple[int, int]]:
    """All pairs of an even number of blocks as rounds of disjoint pairs (circle method), seeded."""
    labels = [block_ids[i] for i in rng.permutation(len(block_ids))]
    n = len(labels)
    rounds = []
    for r in range(n - 1):
        ring = [labels[0], *[labels[1 + (i + r) % (n - 1)] for i in range(n - 1)]]
        pairs = [tuple(sorted((ring[i], ring[n - 1 - i]))) for i in range(n // 2)]
        rounds.append([pairs[i] for i in rng.permutation(len(pairs))])
    return [pair for i in rng.permutation(len(rounds)) for pair in rounds[i]]


def _greedy_cycle(
    combos: list[tuple[int, ...]], counts: dict[int, int], rng: np.random.Generator
) -> list[tuple[int, ...]]:
    """Every combination once; each next one has the least-rated blocks (seeded ties)."""
    left = list(combos)
    priority = dict(zip(left, rng.random(len(left)), strict=True))
    cycle = []
    while left:
        best = min(
            left,
            key=lambda c: (max(counts[b] for b in c), sum(counts[b] for b in c), priority[c]),
        )
        left.remove(best)
        cycle.append(best)
        for block in best:
            counts[block] += 1
    return cycle


def rater_assignments(
    blocks: pd.DataFrame, n_raters: int, blocks_per_rater: int = 2, seed: int = 0, prefix: str = "R"
) -> pd.DataFrame:
    """Blocks per rater, rotating over the block combinations (module docstring).

    Returns an ASSIGNMENTS frame [rater_id, block], `blocks_per_rater` rows per rater, rater ids
    `{prefix}001`, `{prefix}002`, ... (wider when n_raters needs it), sorted by rater then block.
    Give each experiment its own prefix (e.g. T, A, V) when its raters are different people.
    """
    frame = BLOCKS.validate(blocks)
    block_ids = sorted(int(b) for b in frame["block"].unique())
    k, n_raters = int(blocks_per_rater), int(n_raters)
    if not 1 <= k <= len(block_ids):
        raise ValueError(f"blocks_per_rater must be in 1..{len(block_ids)}, got {blocks_per_rater}")
    if n_raters < 1:
        raise ValueError(f"n_raters must be >= 1, got {n_raters}")
    rng = np.random.default_rng(seed)
    combos = list(itertools.combinations(block_ids, k))
    circle = k == 2 and len(block_ids) % 2 == 0
    counts = dict.fromkeys(block_ids, 0)
    sequence: list[tuple[int, ...]] = []
    while len(sequence) < n_raters:
        sequence.extend(_round_robin_cycle(block_ids, rng) if circle else _greedy_cycle(combos, counts, rng))
    width = max(3, len(str(n_raters)))
    rows = [
        (f"{prefix}{i + 1:0{width}d}", block)
        for i, combo in enumerate(sequence[:n_raters])
        for block in combo
    ]
    return ASSIGNMENTS.validate(
        pd.DataFrame(rows, columns=["rater_id", "block"]).sort_values(["rater_id", "block"])
    )


def raters_per_dyad(assignments: pd.DataFrame, blocks: pd.DataFrame) -> pd.DataFrame:
    """[dyad_id, n_raters]: how many raters each dyad gets from an assignment."""
    per_block = ASSIGNMENTS.validate(assignments).groupby("block").size()
    frame = BLOCKS.validate(blocks)
    n = frame["block"].map(per_block).fillna(0).astype("int64")
    return pd.DataFrame({"dyad_id": frame["dyad_id"], "n_raters": n})


def survey_table(
    assignments: pd.DataFrame,
    blocks: pd.DataFrame,
    modality: str,
    seed: int = 0,
    stimulus_pattern: str | None = None,
) -> pd.DataFrame:
    """Every rater's survey list in one frame [rater_id, order, dyad_id, stimulus].

    A rater's dyads are those of their blocks, in an order drawn from
    `default_rng([seed, crc32(modality), crc32(rater_id)])`. `stimulus` fills
    `stimulus_pattern` (default `STIMULUS_PATTERNS[modality]`, the stimuli folder layout).
    Rows are sorted by rater_id, then order (1..n per rater).
    """
    if modality not in MODALITIES:
        raise ValueError(f"modality must be one of {MODALITIES}, got {modality!r}")
    pattern = stimulus_pattern or STIMULUS_PATTERNS[modality]
    assigned = ASSIGNMENTS.validate(assignments)
    frame = BLOCKS.validate(blocks)
    unknown = sorted(set(assigned["block"]) - set(frame["block"]))
    if unknown:
        raise ValueError(f"assignments name block(s) {unknown} that the block design lacks")
    dyads_of = {block: sorted(group["dyad_id"]) for block, group in frame.groupby("block")}
    raters, orders, dyads_out = [], [], []
    for rater, group in assigned.groupby("rater_id", sort=True):
        dyads = sorted(d for block in group["block"] for d in dyads_of[block])
        rng = np.random.default_rng([int(seed), _stable_int(modality), _stable_int(rater)])
        dyads_out.extend(dyads[i] for i in rng.permutation(len(dyads)))
        raters.extend([str(rater)] * len(dyads))
        orders.extend(range(1, len(dyads) + 1))
    return pd.DataFrame(
        {
            "rater_id": pd.Series(raters, dtype=object),
            "order": pd.Series(orders, dtype="int64"),
            "dyad_id": pd.Series(dyads_out, dtype=object),
            "stimulus": pd.Series(
                [pattern.format(dyad_id=d, modality=modality) for d in dyads_out], dtype=object
            ),
        }
    )


def survey_lists(
    assignments: pd.DataFrame,
    blocks: pd.DataFrame,
    modality: str,
    seed: int = 0,
    stimulus_pattern: str | None = None,
) -> dict[str, pd.DataFrame]:
    """rater_id -> SURVEY_LIST frame [order, dyad_id, stimulus] (order 1..n), one experiment.

    The lists of `survey_table` (same arguments), split by rater.
    """
    table = survey_table(assignments, blocks, modality, seed, stimulus_pattern)
    columns = SURVEY_LIST.names
    return {
        str(rater): group[columns].reset_index(drop=True)
        for rater, group in table.groupby("rater_id", sort=True)
    }


_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def write_survey_lists(lists: Mapping[str, pd.DataFrame], surveys_dir, modality: str) -> list[Path]:
    """Write `{surveys_dir}/{modality}/{rater_id}.csv` per rater (atomically); return the paths.

    CSVs in that folder that belong to no rater of `lists` (an earlier, larger panel) are
    removed, so the folder holds exactly this experiment's lists.
    """
    if modality not in MODALITIES:
        raise ValueError(f"modality must be one of {MODALITIES}, got {modality!r}")
    folder = Path(surveys_dir) / modality
    paths = []
    for rater in sorted(lists):
        if not _SAFE_NAME.match(rater):
            raise ValueError(f"rater id {rater!r} is not usable as a file name")
        path = folder / f"{rater}.csv"
        SURVEY_LIST.write(path, lists[rater])
        paths.append(path)
    keep = {path.name for path in paths}
    for stale in sorted(folder.glob("*.csv")):
        if stale.name not in keep:
            stale.unlink()
    return paths


# --------------------------------------------------------------------------------------------
# Import of survey exports
# --------------------------------------------------------------------------------------------


def _pattern_regex(pattern: str) -> re.Pattern:
    if pattern.count("{dyad_id}") != 1:
        raise ValueError(f"pattern {pattern!r} must hold {{dyad_id}} exactly once")
    before, after = pattern.split("{dyad_id}")
    return re.compile(f"{re.escape(before)}(?P<dyad_id>.+?){re.escape(after)}")


def _norm(value) -> str:
    return str(value).strip().casefold()


def _response_lookup(response_values: Mapping) -> dict[str, str]:
    if set(response_values) != set(RELATIONSHIPS):
        raise ValueError(
            f"response_values needs exactly the keys {RELATIONSHIPS}, got {sorted(response_values)}"
        )
    lookup: dict[str, str] = {}
    for label, values in response_values.items():
        for value in [values] if isinstance(values, str) else values:
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
    return merged


def _need_columns(raw: pd.DataFrame, columns: Sequence[str], source: str) -> None:
    missing = [c for c in columns if c not in raw.columns]
    if missing:
        raise ValueError(
            f"{source}: export lacks column(s) {', '.join(map(repr, missing))} named in the mapping; "
            f"it has {', '.join(map(repr, raw.columns[:20]))}"
        )


def _export_trials(raw: pd.DataFrame, mapping: dict, source: str) -> pd.DataFrame:
    """One row per trial: file row, rater, dyad (raw text), response (raw text), wide flag."""
    rater_col = mapping["rater_id"]
    if not mapping["wide"]:
        _need_columns(raw, [rater_col, mapping["dyad_id"], mapping["response"]], source)
        return pd.DataFrame(
            {
                "row": raw.index + 2,
                "rater": raw[rater_col].to_numpy(),
                "dyad": raw[mapping["dyad_id"]].to_numpy(),
                "response": raw[mapping["response"]].to_numpy(),
                "column_dyad": False,
            }
        )
    _need_columns(raw, [rater_col], source)
    regex = _pattern_regex(mapping["column_pattern"])
    # the rater column, `require` columns and `ignore_columns` are never answer columns
    skip = {rater_col, *dict(mapping["require"]), *mapping["ignore_columns"]}
    columns = [(c, m.group("dyad_id")) for c in raw.columns if c not in skip and (m := regex.fullmatch(c))]
    if not columns:
        raise ValueError(f"{source}: no column matches column_pattern {mapping['column_pattern']!r}")
    parts = [
        pd.DataFrame(
            {
                "row": raw.index + 2,
                "rater": raw[rater_col].to_numpy(),
                "dyad": dyad,
                "response": raw[column].to_numpy(),
                "column_dyad": True,
            }
        )
        for column, dyad in columns
    ]
    # trials in file order: by row, then by column order within the row
    return pd.concat(parts, ignore_index=True).sort_values("row", kind="stable").reset_index(drop=True)


def _example(trial) -> str:
    return f"row {trial.row}: rater={trial.rater!r} dyad={trial.dyad!r} response={trial.response!r}"


def import_ratings(export_csv, mapping: Mapping | None, modality: str, design_truth) -> tuple:
    """Read one experiment's survey export into (TRIALS frame, IMPORT_REPORT frame).

    `mapping` overrides `DEFAULT_MAPPING` (keys explained there and in the module docstring);
    `design_truth` is a dyad -> familiar/stranger mapping, Series or DESIGN frame. Every trial
    of the export is either imported or excluded and counted under one reason of the report,
    with the first offending trial as its example; `sum(report.n)` is the number of trials in
    the export. TRIALS rows are sorted by rater_id then dyad_id; correct = response == truth.
    """
    if modality not in MODALITIES:
        raise ValueError(f"modality must be one of {MODALITIES}, got {modality!r}")
    spec = _merged_mapping(mapping)
    truth = truth_map(design_truth)
    lookup = _response_lookup(spec["response_values"])
    empty_codes = {_norm(v) for v in spec["empty_values"]}
    dyad_regex = _pattern_regex(spec["dyad_pattern"])
    source = str(export_csv)

    raw = read_csv_strings(export_csv)
    raw = raw.iloc[int(spec["skip_rows"]) :]
    trials = _export_trials(raw, spec, source)

    passes = pd.Series(True, index=raw.index)
    for column, accepted in dict(spec["require"]).items():
        _need_columns(raw, [column], source)
        allowed = {_norm(v) for v in ([accepted] if isinstance(accepted, str) else accepted)}
        passes &= raw[column].map(_norm).isin(allowed)
    row_passes = dict(zip(raw.index + 2, passes.to_numpy(), strict=True))

    rater = trials["rater"].astype(str).str.strip()
    value = trials["response"].astype(str).str.strip().str.casefold()
    raw_dyad = trials["dyad"].astype(str).str.strip()
    extracted = raw_dyad.str.extract(f"^(?:{dyad_regex.pattern})$")["dyad_id"].fillna("")
    dyad = raw_dyad.where(trials["column_dyad"], extracted)
    known = set(truth)
    conditions = [
        trials["column_dyad"] & (value == ""),
        ~trials["row"].map(row_passes).astype(bool),
        rater == "",
        ~dyad.isin(known),
        (value == "") | value.isin(empty_codes),
        ~value.isin(set(lookup)),
    ]
    names = [
        "not_shown",
        "filtered",
        "missing_rater_id",
        "unknown_dyad",
        "empty_response",
        "invalid_response",
    ]
    reason = pd.Series(np.select(conditions, names, default="imported"), index=trials.index)
    valid = reason == "imported"
    # duplicates among valid ratings: the first in file order is kept
    repeated = pd.DataFrame({"rater": rater, "dyad": dyad})[valid].duplicated(keep="first")
    reason[repeated[repeated].index] = "duplicate"
    trials["reason"] = reason

    report_rows = []
    for name in REASONS:
        hits = trials[trials["reason"] == name]
        example = _example(next(hits.itertuples(index=False))) if len(hits) else ""
        report_rows.append({"modality": modality, "reason": name, "n": len(hits), "example": example})
    report = IMPORT_REPORT.validate(pd.DataFrame(report_rows))

    imported = trials["reason"] == "imported"
    out = pd.DataFrame(
        {
            "rater_id": rater[imported].to_numpy(dtype=object),
            "dyad_id": dyad[imported].to_numpy(dtype=object),
            "modality": modality,
            "response": value[imported].map(lookup).to_numpy(dtype=object),
        }
    )
    out["correct"] = out["response"].to_numpy() == out["dyad_id"].map(truth).to_numpy()
    out = out.sort_values(["rater_id", "dyad_id"], kind="stable")
    return (TRIALS.empty() if out.empty else TRIALS.validate(out)), report


def import_experiments(
    exports: Mapping[str, object], mappings: Mapping, design_truth
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Import one export per modality; concatenated (TRIALS, IMPORT_REPORT), modalities in order.

    `mappings` is one mapping for every export, or {modality: mapping}.
    """
    per_modality = set(mappings) <= set(MODALITIES) and bool(mappings)
    trials, reports = [], []
    for modality in [m for m in MODALITIES if m in exports]:
        mapping = mappings[modality] if per_modality else mappings
        got, report = import_ratings(exports[modality], mapping, modality, design_truth)
        trials.append(got)
        reports.append(report)
    unknown = sorted(set(exports) - set(MODALITIES))
    if unknown:
        raise ValueError(f"unknown modality key(s) {unknown}")
    if not trials:
        return TRIALS.empty(), IMPORT_REPORT.empty()
    return TRIALS.validate(pd.concat(trials, ignore_index=True)), pd.concat(reports, ignore_index=True)


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
                    f"{source} row {position + 2} column {column}: {text!r} is neither a number "
                    f"nor one of the mapping's item_values"
                ) from None
    return pd.Series(values, index=raw.index, dtype=float)


def import_covariates(csv, mapping: Mapping) -> pd.DataFrame:
    """Rater covariates [rater_id, one column per scale, one per copied item].

    mapping: `rater_id` (column), optional `skip_rows`, `item_values` ({label: number}, matched
    trimmed and case-insensitively), `scales` ({name: {items: [...], reverse: [...], min, max,
    min_items}}) and `columns` ({name: column}). A scale score is the mean of its answered items
    after reverse-keying (min + max - x), NaN when fewer than `min_items` (default: all) were
    answered. Rows without a rater id are skipped and a repeated rater id keeps its first row;
    both with a warning saying how many. A value that is not a number raises ValueError naming
    row and column.
    """
    source = str(csv)
    raw = read_csv_strings(csv).iloc[int(mapping.get("skip_rows", 0)) :]
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


_NOT_COVARIATES = {"rater_id", "modality", "source"}
DIFFERENCE_COLUMNS = [
    "analysis",
    "modality",
    "outcome",
    "covariate",
    "n",
    "pearson_r",
    "pearson_p",
    "spearman_r",
    "spearman_p",
    "estimate",
    "std_error",
    "ci_low",
    "ci_high",
    "p_value",
    "r_squared",
    "se_type",
]


def _correlations(x: np.ndarray, y: np.ndarray) -> dict:
    keep = ~np.isnan(x) & ~np.isnan(y)
    x, y = x[keep], y[keep]
    out = {"n": int(keep.sum()), "pearson_r": math.nan, "pearson_p": math.nan}
    out.update(spearman_r=math.nan, spearman_p=math.nan)
    if len(x) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
        pearson = stats.pearsonr(x, y)
        spearman = stats.spearmanr(x, y)
        out.update(pearson_r=float(pearson.statistic), pearson_p=float(pearson.pvalue))
        out.update(spearman_r=float(spearman.statistic), spearman_p=float(spearman.pvalue))
    return out


def individual_differences(
    trials: pd.DataFrame,
    covariates: pd.DataFrame,
    truth,
    outcomes: Sequence[str] = ("accuracy", "d_prime", "criterion"),
) -> pd.DataFrame:
    """Covariates vs rater accuracy and bias (module docstring), one tidy frame.

    analysis "correlation": one row per (modality, outcome, covariate) with n, pearson_r/p,
    spearman_r/p (NaN under 3 raters or for a constant variable). analysis "ols": one row per
    covariate of `accuracy ~ modality fixed effects + all covariates` (modality "all") with
    estimate, std_error, 95% ci_low/ci_high, p_value, the model's n and r_squared and se_type
    (HC3, or cluster by rater). Covariates are the numeric columns of `covariates` other than
    rater_id/modality/source; they join on rater_id, and on modality too when `covariates`
    has that column. A `source` column in `covariates` or `trials` is carried into the result.
    """
    import statsmodels.api as sm

    per_rater = per_rater_sdt(trials, truth)
    names = [
        c
        for c in covariates.columns
        if c not in _NOT_COVARIATES and pd.api.types.is_numeric_dtype(covariates[c])
    ]
    if not names:
        raise ValueError("covariates hold no numeric column besides rater_id/modality/source")
    keys = ["rater_id", "modality"] if "modality" in covariates.columns else ["rater_id"]
    if covariates.duplicated(keys).any():
        raise ValueError(f"covariates repeat a ({', '.join(keys)}) key")
    joined = per_rater.merge(covariates[keys + names], on=keys, how="left")
    rows = []
    for modality, group in joined.groupby("modality", sort=True):
        for outcome, name in itertools.product(outcomes, names):
            values = _correlations(group[name].to_numpy(float), group[outcome].to_numpy(float))
            rows.append(
                {
                    "analysis": "correlation",
                    "modality": modality,
                    "outcome": outcome,
                    "covariate": name,
                    **values,
                }
            )

    complete = joined.dropna(subset=["accuracy", *names]).sort_values(["modality", "rater_id"])
    levels = sorted(complete["modality"].unique())
    design = pd.DataFrame({"const": 1.0}, index=complete.index)
    for level in levels[1:]:
        design[f"modality[{level}]"] = (complete["modality"] == level).astype(float)
    for name in names:
        design[name] = complete[name].astype(float)
    clustered = complete["rater_id"].duplicated().any()
    se_type = "cluster(rater)" if clustered else "HC3"
    fit = None
    if len(complete) > design.shape[1] and np.linalg.matrix_rank(design.to_numpy()) == design.shape[1]:
        model = sm.OLS(complete["accuracy"].to_numpy(float), design)
        if clustered:
            groups = pd.factorize(complete["rater_id"])[0]
            fit = model.fit(cov_type="cluster", cov_kwds={"groups": groups})
        else:
            fit = model.fit(cov_type="HC3")
    for name in names:
        row = {"analysis": "ols", "modality": "all", "outcome": "accuracy", "covariate": name}
        row.update(n=len(complete), se_type=se_type)
        if fit is not None:
            low, high = fit.conf_int().loc[name]
            row.update(
                estimate=float(fit.params[name]),
                std_error=float(fit.bse[name]),
                ci_low=float(low),
                ci_high=float(high),
                p_value=float(fit.pvalues[name]),
                r_squared=float(fit.rsquared),
            )
        rows.append(row)
    table = pd.DataFrame(rows, columns=DIFFERENCE_COLUMNS)
    table["n"] = table["n"].astype("int64")
    sources = sorted(
        {str(s) for f in (covariates, trials) if "source" in f.columns for s in f["source"].unique()}
    )
    if sources:
        table["source"] = "; ".join(sources)
    return table


# --------------------------------------------------------------------------------------------
# Simulated rater panel (demo)
# --------------------------------------------------------------------------------------------


def _logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


def _panel_params(params: Mapping | None) -> dict:
    merged = {**DEFAULT_PANEL_PARAMS, **(dict(params) if params else {})}
    unknown = sorted(set(merged) - set(DEFAULT_PANEL_PARAMS))
    if unknown:
        raise ValueError(f"unknown panel parameter(s): {', '.join(unknown)}")
    if not -1 <= float(merged["covariate_r"]) <= 1:
        raise ValueError("covariate_r must lie in [-1, 1]")
    if merged["export_format"] not in ("long", "wide"):
        raise ValueError("export_format must be 'long' or 'wide'")
    return merged


def simulate_exports(
    design: pd.DataFrame,
    assignments_by_modality: Mapping[str, pd.DataFrame],
    params: Mapping | None,
    seed: int,
    blocks: pd.DataFrame,
) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """The simulated panel as survey exports: ({modality: export frame}, covariate export frame).

    Exports have the columns `SIMULATED_MAPPING` reads (ResponseId, Finished, trial, stimulus,
    answer in long form; ResponseId, Finished and one `{dyad_id}_rating` column per dyad in wide
    form), the covariate export those of `SIMULATED_COVARIATE_MAPPING`. Trial order follows
    `survey_lists(..., seed)`. Random draws from `default_rng(seed)`, in this order: per person
    (sorted rater ids) skill, bias, trait noise; per dyad (sorted) shared difficulty; then per
    modality (text, audio, video) dyad deviations, blanks and responses in trial order; last the
    questionnaire items.
    """
    p = _panel_params(params)
    truth = truth_map(DESIGN.validate(design))
    dyads = sorted(truth)
    modalities = [m for m in MODALITIES if m in assignments_by_modality]
    unknown = sorted(set(assignments_by_modality) - set(MODALITIES))
    if unknown:
        raise ValueError(f"unknown modality key(s) {unknown}")
    missing = [m for m in modalities if m not in p["modality_effects"]]
    if missing:
        raise ValueError(f"params.modality_effects lacks {missing}")
    block_frame = BLOCKS.validate(blocks)
    if set(block_frame["dyad_id"]) != set(dyads):
        raise ValueError("blocks and design hold different dyads")
    assigned = {m: ASSIGNMENTS.validate(assignments_by_modality[m]) for m in modalities}
    people = sorted({r for frame in assigned.values() for r in frame["rater_id"]})

    rng = np.random.default_rng(seed)
    skill_sd = float(p["skill_sd"])
    skill = dict(zip(people, rng.normal(0.0, skill_sd, len(people)), strict=True))
    bias = dict(zip(people, rng.normal(0.0, float(p["bias_sd"]), len(people)), strict=True))
    noise = rng.normal(0.0, 1.0, len(people))
    difficulty = dict(zip(dyads, rng.normal(0.0, float(p["dyad_sd"]), len(dyads)), strict=True))
    words = SIMULATED_MAPPING["response_values"]

    exports = {}
    for modality in modalities:
        deviation = dict(zip(dyads, rng.normal(0.0, float(p["dyad_modality_sd"]), len(dyads)), strict=True))
        table = survey_table(assigned[modality], block_frame, modality, seed)
        raters, shown = table["rater_id"], table["dyad_id"]
        sign = np.where(shown.map(truth) == SIGNAL, 1.0, -1.0)
        eta = (
            float(p["modality_effects"][modality])
            + raters.map(skill).to_numpy(float)
            - shown.map(difficulty).to_numpy(float)
            - shown.map(deviation).to_numpy(float)
        )
        shift = raters.map(bias).to_numpy(float)
        blank = rng.random(len(table)) < float(p["p_blank"])
        says_familiar = rng.random(len(table)) < _logistic(sign * eta - shift)
        answers = np.where(blank, "", np.where(says_familiar, words[SIGNAL][0], words[NOISE][0]))
        long = pd.DataFrame(
            {
                "ResponseId": raters.to_numpy(dtype=object),
                "Finished": "True",
                "trial": table["order"].to_numpy(),
                "stimulus": shown.to_numpy(dtype=object),
                "answer": answers.astype(object),
            }
        )
        if p["export_format"] == "wide":
            wide = long.pivot(index="ResponseId", columns="stimulus", values="answer").reindex(columns=dyads)
            wide = wide.fillna("").rename(columns=lambda d: f"{d}_rating").reset_index()
            wide.insert(1, "Finished", "True")
            wide.columns.name = None
            exports[modality] = wide
        else:
            exports[modality] = long

    items = SIMULATED_COVARIATE_MAPPING["scales"]["sip"]["items"]
    r = float(p["covariate_r"])
    z_skill = np.array([skill[x] / skill_sd if skill_sd > 0 else 0.0 for x in people])
    trait = r * z_skill + math.sqrt(1 - r * r) * noise
    covariates = pd.DataFrame({"ResponseId": people})
    for item in items:
        score = np.clip(np.rint(4 + 1.2 * trait + rng.normal(0.0, 0.8, len(people))), 1, 7)
        covariates[item] = (
            8 - score if item in SIMULATED_COVARIATE_MAPPING["scales"]["sip"]["reverse"] else score
        )
        covariates[item] = covariates[item].astype(int).astype(str)
    for column in SIMULATED_COVARIATE_MAPPING["columns"].values():
        covariates[column] = rng.integers(1, 6, len(people)).astype(str)
    return exports, covariates


def simulate_panel(
    design: pd.DataFrame,
    assignments_by_modality: Mapping[str, pd.DataFrame],
    params: Mapping | None = None,
    seed: int = 0,
    *,
    blocks: pd.DataFrame | None = None,
    out_dir=None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A simulated rater panel, imported through the survey-export path: (trials, covariates).

    Writes `simulated_{modality}_export.csv`, `simulated_covariates_export.csv` and
    `simulated_import_report.csv` under `out_dir` (a temporary folder when None), imports them
    with `SIMULATED_MAPPING` / `SIMULATED_COVARIATE_MAPPING`, and returns the TRIALS columns
    plus `source` and the covariates plus `source`, both `SIMULATED_LABEL`. `blocks` defaults to
    the design's `block` column. `params` overrides `DEFAULT_PANEL_PARAMS` (module docstring).
    """
    if blocks is None:
        if "block" not in design.columns:
            raise ValueError("give blocks= (a block_design frame) or a design with a block column")
        blocks = design[["dyad_id", "block"]]
    exports, covariate_export = simulate_exports(design, assignments_by_modality, params, seed, blocks)
    mapping = {**SIMULATED_MAPPING, "wide": _panel_params(params)["export_format"] == "wide"}
    with tempfile.TemporaryDirectory(prefix="simulated_panel_") as scratch:
        folder = Path(out_dir) if out_dir is not None else Path(scratch)
        paths = {}
        for modality, frame in exports.items():
            paths[modality] = folder / f"simulated_{modality}_export.csv"
            write_csv(paths[modality], frame)
        covariate_path = folder / "simulated_covariates_export.csv"
        write_csv(covariate_path, covariate_export)
        trials, report = import_experiments(paths, mapping, DESIGN.validate(design))
        write_csv(folder / "simulated_import_report.csv", report.assign(source=SIMULATED_LABEL))
        covariates = import_covariates(covariate_path, SIMULATED_COVARIATE_MAPPING)
    return trials.assign(source=SIMULATED_LABEL), covariates.assign(source=SIMULATED_LABEL)

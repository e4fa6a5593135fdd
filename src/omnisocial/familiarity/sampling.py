"""The stratified, fully crossed dyad design (docs/benchmarks/familiarity.md#design).

A passing interaction with an empty stratum value (a participant missing from the gender
table) is never dropped silently: `sample_design` stops naming it, or, with
`unknown_stratum: level`, samples it in the explicit level `unknown`.

Clip selection (1.3) is `omnisocial.familiarity.clips.clip_candidates`; the filters judge its
windows (F2 turns, F3 speech) and `sample_design` draws the dyads from the interactions
that pass every filter.
"""

from __future__ import annotations

import itertools
import logging
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from omnisocial.tables import DESIGN, POSITIONS, RELATIONSHIPS

log = logging.getLogger(__name__)

UNKNOWN_LEVEL = "unknown"
UNKNOWN_POLICIES = ("error", "level")
DEFAULT_STRATA = ("site", "relationship", "gender_mix")
# Pass columns of FILTER_REPORT, in the order a failure is reported.
FILTER_PASS_COLUMNS = (
    "ingest_pass",
    "f1_prompt_pass",
    "f2_turns_pass",
    "f3_speech_pass",
    "f4_tracks_pass",
    "f5_amount_pass",
    "audit_pass",
)
# Randomized greedy passes before the design is solved exactly as a 0/1 program.
GREEDY_TRIES = 200
MILP_TIME_LIMIT_S = 120.0


class DesignError(ValueError):
    """The design cannot be filled; the message names the cell and what excluded its candidates."""


# --------------------------------------------------------------------------------------------
# Stratified design
# --------------------------------------------------------------------------------------------


def _text(value) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _pool(filter_report: pd.DataFrame, interactions: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """filter_report rows with `columns` taken from interactions (or the report when absent)."""
    pool = filter_report.copy()
    pool["interaction_id"] = pool["interaction_id"].astype(str)
    by_id = interactions.assign(interaction_id=interactions["interaction_id"].astype(str)).set_index(
        "interaction_id"
    )
    for column in columns:
        if column in by_id.columns:
            pool[column] = pool["interaction_id"].map(by_id[column])
        elif column not in pool.columns:
            raise ValueError(f"stratum column {column!r} is in neither interactions nor the filter report")
        pool[column] = pool[column].map(_text)
    return pool


def _as_bool(series: pd.Series) -> pd.Series:
    return series.map(lambda v: bool(v) if not pd.isna(v) else False).astype(bool)


def _cell_exclusions(pool: pd.DataFrame, mask: pd.Series) -> str:
    """'ingest: 1 (missing wav for P0100), f2_turns: 2' for the interactions of one cell that fail:
    one never ingested counts once, under ingest with its reason (its filters were not evaluated),
    and each filter counts the ingested interactions it failed."""
    cell_rows = pool[mask]
    ingested = _as_bool(cell_rows["ingest_pass"]) if "ingest_pass" in cell_rows.columns else None
    parts = []
    for column in FILTER_PASS_COLUMNS:
        if column not in cell_rows.columns:
            continue
        failing = ~_as_bool(cell_rows[column])
        if column == "ingest_pass":
            if failing.any():
                reasons = cell_rows.loc[failing, "reasons"] if "reasons" in cell_rows.columns else pd.Series()
                said = sorted(
                    {m for text in reasons.astype(str) for m in re.findall(r"ingest: ([^;|]+)", text)}
                )
                shown = ", ".join(s.strip() for s in said[:3]) + (
                    f", ... ({len(said)} reasons)" if len(said) > 3 else ""
                )
                parts.append(f"ingest: {int(failing.sum())}" + (f" ({shown})" if said else ""))
            continue
        if ingested is not None:
            failing &= ingested
        if failing.any():
            parts.append(f"{column.removesuffix('_pass')}: {int(failing.sum())}")
    return ", ".join(parts) if parts else "none"


Pool = dict[str, list[tuple[str, frozenset]]]


def _people(participant_a: str, participant_b: str, vendor: str) -> frozenset:
    """The participants of one interaction as identities: `vendor/participant` when the
    vendor is known (Seamless numbers participants per vendor), else the bare id."""
    return frozenset(f"{vendor}/{p}" if vendor else p for p in (participant_a, participant_b) if p)


def _greedy(order: list[str], pools: Pool, n: int, rng: np.random.Generator) -> tuple[dict | None, str]:
    """One randomized greedy pass: cells in `order`, each cell's candidates in a fresh seeded
    random order, taking every candidate disjoint from the participants taken so far.
    Returns (picks, "") or (None, the cell that could not be filled)."""
    used: set = set()
    picks: dict[str, list[str]] = {}
    for cell in order:
        candidates = pools[cell]
        chosen = []
        for index in rng.permutation(len(candidates)):
            interaction_id, people = candidates[index]
            if not people & used:
                chosen.append(interaction_id)
                used |= people
                if len(chosen) == n:
                    break
        if len(chosen) < n:
            return None, cell
        picks[cell] = chosen
    return picks, ""


def _exact(order: list[str], pools: Pool, n: int, rng: np.random.Generator) -> dict | None:
    """An exact solve as a 0/1 program (scipy's HiGHS MILP): n per cell, every participant
    at most once, maximizing seeded random weights (so the design is still a seeded draw).
    Returns None when no design exists; raises DesignError past MILP_TIME_LIMIT_S."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import lil_matrix

    entries = [(cell, interaction_id, people) for cell in order for interaction_id, people in pools[cell]]
    weights = rng.random(len(entries))
    by_person: dict[str, list[int]] = {}
    for column, (_, _, people) in enumerate(entries):
        for person in sorted(people):
            by_person.setdefault(person, []).append(column)
    shared = [columns for _, columns in sorted(by_person.items()) if len(columns) > 1]
    matrix = lil_matrix((len(order) + len(shared), len(entries)))
    for column, (cell, _, _) in enumerate(entries):
        matrix[order.index(cell), column] = 1
    for row, columns in enumerate(shared, start=len(order)):
        for column in columns:
            matrix[row, column] = 1
    lower = np.r_[np.full(len(order), n), np.zeros(len(shared))]
    upper = np.r_[np.full(len(order), n), np.ones(len(shared))]
    result = milp(
        -weights,
        integrality=np.ones(len(entries)),
        bounds=Bounds(0, 1),
        constraints=[LinearConstraint(matrix.tocsr(), lower, upper)],
        options={"time_limit": MILP_TIME_LIMIT_S, "presolve": True},
    )
    if result.status == 1:  # a time-limited answer would not be reproducible
        raise DesignError(
            f"the exact design search over {len(entries)} candidates hit its {MILP_TIME_LIMIT_S:g} s limit "
            f"without proving a design exists or not: {result.message}"
        )
    if result.status != 0 or result.x is None:
        return None
    picks: dict[str, list[str]] = {cell: [] for cell in order}
    for column in np.flatnonzero(result.x > 0.5):
        cell, interaction_id, _ = entries[column]
        picks[cell].append(interaction_id)
    return picks


def _draw(order: list[str], pools: Pool, n: int, rng: np.random.Generator) -> tuple[dict | None, str]:
    """Seeded randomized greedy with GREEDY_TRIES retries, then the exact MILP.

    Returns (picks, "") or (None, the cell the greedy passes failed on most often)."""
    failures = dict.fromkeys(order, 0)
    for _ in range(GREEDY_TRIES):
        picks, stuck = _greedy(order, pools, n, rng)
        if picks is not None:
            return picks, ""
        failures[stuck] += 1
    picks = _exact(order, pools, n, rng)
    if picks is not None:
        return picks, ""
    return None, max(order, key=lambda cell: (failures[cell], -order.index(cell)))


def _missing_genders(interaction_id: str, interactions: pd.DataFrame) -> str:
    """' (no gender for P0003)' when interactions name the participants lacking a gender, else ''."""
    if not {"gender_a", "gender_b", "participant_a", "participant_b"} <= set(interactions.columns):
        return ""
    row = interactions[interactions["interaction_id"].astype(str) == interaction_id]
    if row.empty:
        return ""
    record = row.iloc[0]
    missing = [
        _text(record[f"participant_{s}"]) or f"participant {s}"
        for s in ("a", "b")
        if not _text(record[f"gender_{s}"])
    ]
    return f" (no gender for {', '.join(missing)})" if missing else ""


def _unknown_strata(
    pool: pd.DataFrame, candidates: pd.Series, strata: list[str], interactions: pd.DataFrame, policy: str
) -> None:
    """Raise DesignError for candidates with an empty stratum value, or (policy 'level') set it
    to UNKNOWN_LEVEL in `pool`; a relationship other than familiar/stranger always raises."""
    problems = []
    bad_relationship = candidates & ~pool["relationship"].isin(RELATIONSHIPS)
    for interaction_id, value in pool.loc[bad_relationship, ["interaction_id", "relationship"]].itertuples(
        index=False
    ):
        problems.append(f"{interaction_id}: relationship {value!r} is not one of {'/'.join(RELATIONSHIPS)}")
    for column in strata:
        if column == "relationship":
            continue
        empty = candidates & (pool[column] == "")
        if not empty.any():
            continue
        ids = pool.loc[empty, "interaction_id"].tolist()
        if policy == "level":
            pool.loc[empty, column] = UNKNOWN_LEVEL
            log.warning(
                "%d passing interaction(s) without %s sampled as the level %r, e.g. %s%s",
                len(ids),
                column,
                UNKNOWN_LEVEL,
                ids[0],
                _missing_genders(ids[0], interactions) if column == "gender_mix" else "",
            )
            continue
        for interaction_id in ids:
            why = _missing_genders(interaction_id, interactions) if column == "gender_mix" else ""
            problems.append(f"{interaction_id}: empty {column}{why}")
    if problems:
        more = f"; ... and {len(problems) - 10} more" if len(problems) > 10 else ""
        shown = "; ".join(problems[:10]) + more
        raise DesignError(
            f"{len(problems)} passing interaction(s) have no usable stratum value: {shown}. Supply the "
            f"missing values (e.g. the gender table), or set sampling.unknown_stratum: level to sample "
            f"them as the explicit level {UNKNOWN_LEVEL!r}"
        )


def sample_design(
    filter_report: pd.DataFrame,
    clip_candidates: pd.DataFrame,
    interactions: pd.DataFrame,
    sampling_params: Mapping,
) -> pd.DataFrame:
    """Draw a fully crossed, participant-disjoint, position-counterbalanced design (DESIGN frame).

    `sampling_params`: seed, n_per_cell, strata (default site, relationship, gender_mix),
    unknown_stratum ('error', the default, or 'level').

    - Candidates: interactions with `passed` True in the filter report that have both an
      early and a late clip candidate. Stratum values and participants come from
      `interactions` (the report's copy when interactions lacks the column).
      'gender_mix' is dropped from the strata when every passing interaction has it empty
      (no gender table).
    - A candidate with an empty stratum value (e.g. one participant missing from the gender
      table) is never dropped silently: with unknown_stratum 'error' a DesignError names
      every such interaction, the stratum and, for gender_mix, the participant(s) without a
      gender; with 'level' the value becomes the explicit level 'unknown', which is crossed
      with the other strata like any level (so it needs n dyads in each of its cells) and
      shows in the cell names and stratum columns of the design. A candidate whose
      relationship is not familiar/stranger always raises (no design cell can hold it).
    - Cells: every combination of the levels observed among the candidates, named by
      joining the stratum values with '|'. Each cell gets exactly n_per_cell dyads.
    - No participant appears in two sampled dyads; a participant is identified by
      interactions' vendor_id plus participant id when that column exists (Seamless
      participant ids are per vendor), else by the participant id alone. Draws use
      numpy.random.default_rng(seed) on candidates sorted by id. Randomized greedy first:
      cells ordered by scarcity (fewest candidates first), each cell's candidates in a
      seeded random order, taking each one whose participants are still free; up to
      GREEDY_TRIES passes. When every pass fails
      (heavy participant sharing), the design is solved exactly as a 0/1 program (n per
      cell, each participant at most once, seeded random weights maximized; scipy HiGHS),
      so a design is found whenever one exists.
    - Positions: within each cell (cells sorted by name), floor(n/2) dyads are early and
      as many late; with odd n the extra dyad is early in every other cell, starting from a
      seeded coin flip. Which dyads get early is a seeded shuffle. The clip window and
      n_turns are that position's candidate.
    - dyad_id D001, D002, ... in order of (cell, interaction_id).

    Raises DesignError naming the cell that cannot be filled (every cell with fewer than
    n candidates; else the cell the greedy passes ran short in most often), its candidate count,
    the number of its interactions failing each filter and passing without both clip
    windows, and, as the participant-overlap loss, how many of its candidates share a
    participant with another candidate.
    """
    n = int(sampling_params["n_per_cell"])
    seed = int(sampling_params["seed"])
    if n < 1:
        raise ValueError(f"n_per_cell must be at least 1, got {n}")
    pool, passed, strata = _sampling_pool(filter_report, interactions, sampling_params)
    policy = str(sampling_params.get("unknown_stratum") or "error")
    if policy not in UNKNOWN_POLICIES:
        raise ValueError(f"unknown_stratum must be one of {', '.join(UNKNOWN_POLICIES)}, got {policy!r}")

    windows = {
        (str(row.interaction_id), row.position): row for row in clip_candidates.itertuples(index=False)
    }
    has_clips = pool["interaction_id"].map(lambda i: all((i, p) in windows for p in POSITIONS))
    _unknown_strata(pool, passed & has_clips, strata, interactions, policy)
    known = _known_strata(pool, strata)
    eligible = pool[passed & has_clips & known]
    if eligible.empty:
        raise _no_candidates(pool, passed, has_clips, known, strata)

    cells, cell_of = _design_cells(pool, eligible, strata)
    eligible_cell = cell_of[eligible.index]

    rng = np.random.default_rng(seed)
    pools = _cell_pools(eligible, eligible_cell, cells)

    everyone = Counter(person for entries in pools.values() for _, people in entries for person in people)

    def describe(cell: str) -> str:
        in_cell = cell_of == cell
        no_clip = int((in_cell & passed & known & ~has_clips).sum())
        shared = sum(1 for _, people in pools[cell] if any(everyone[p] > 1 for p in people))
        return (
            f"cell {cell!r} needs {n} dyad(s) but has {len(pools[cell])} candidate(s) "
            f"({int(in_cell.sum())} interaction(s) in the cell; failing filters: "
            f"{_cell_exclusions(pool, in_cell)}; passed without both clip windows: {no_clip}; "
            f"lost to participant overlap: {shared} candidate(s) share a participant with another)"
        )

    short = [cell for cell in cells if len(pools[cell]) < n]
    if short:
        raise _short_cells(short, [describe(cell) for cell in short], pools, n)

    order = sorted(cells, key=lambda cell: (len(pools[cell]), cell))
    picks, stuck = _draw(order, pools, n, rng)
    if picks is None:
        raise DesignError("design cannot be filled without reusing a participant: " + describe(stuck))

    rows = _counterbalanced(sorted(cells), picks, n, rng, windows, eligible.set_index("interaction_id"))
    design = pd.DataFrame(rows).sort_values(["cell", "interaction_id"], kind="mergesort")
    width = max(3, len(str(len(design))))
    design.insert(0, "dyad_id", [f"D{i:0{width}d}" for i in range(1, len(design) + 1)])
    return DESIGN.validate(design)


def _sampling_pool(filter_report: pd.DataFrame, interactions: pd.DataFrame, sampling_params: Mapping):
    """(every reported interaction with its strata, participants and vendor; which passed every
    filter; the strata sampled: `gender_mix` dropped when no passing interaction has one)."""
    strata = list(sampling_params.get("strata") or DEFAULT_STRATA)
    if len(set(strata)) != len(strata):
        raise ValueError(f"strata repeat a column: {strata}")
    needed = list(dict.fromkeys([*strata, *DEFAULT_STRATA, "participant_a", "participant_b"]))
    pool = _pool(filter_report, interactions, needed)
    has_vendor = "vendor_id" in interactions.columns
    pool["_vendor"] = _pool(filter_report, interactions, ["vendor_id"])["vendor_id"] if has_vendor else ""
    passed = _as_bool(pool["passed"])
    unknown = sorted(
        set(pool.loc[passed, "interaction_id"]) - set(interactions["interaction_id"].astype(str))
    )
    if unknown:
        raise ValueError(
            f"{len(unknown)} passing interaction(s) missing from interactions, e.g. {unknown[0]}"
        )
    if "gender_mix" in strata and (pool.loc[passed, "gender_mix"] == "").all():
        strata.remove("gender_mix")
    return pool, passed, strata


def _short_cells(short: list[str], described: list[str], pools: Mapping, n: int) -> DesignError:
    """The error when cells hold fewer than n candidates: each described, and what to change."""
    return DesignError(
        "design cannot be filled: "
        + "; ".join(described)
        + f". Lower sampling.n_per_cell (now {n}) to at most the smallest cell's candidates "
        f"({min(len(pools[cell]) for cell in short)}), or loosen the failing filters (filters.*); "
        "every interaction's reasons are in the filter report"
    )


def _design_cells(pool: pd.DataFrame, eligible: pd.DataFrame, strata: list[str]):
    """(every combination of the eligible interactions' stratum levels, named by joining them
    with '|'; each interaction's cell name)."""
    levels = [sorted(eligible[column].unique()) for column in strata]
    cells = ["|".join(combo) for combo in itertools.product(*levels)]
    cell_of = pool[strata].apply(lambda row: "|".join(row), axis=1) if len(pool) else pd.Series(dtype=str)
    return cells, cell_of


def _known_strata(pool: pd.DataFrame, strata: list[str]) -> pd.Series:
    """Per interaction: every stratum value given and a relationship a design cell can hold."""
    known = pd.Series(True, index=pool.index)
    for column in strata:
        known &= pool[column] != ""
    return known & pool["relationship"].isin(RELATIONSHIPS)


def _no_candidates(pool, passed: pd.Series, has_clips: pd.Series, known: pd.Series, strata) -> DesignError:
    """The error when no interaction can be sampled, counting why at each step."""
    return DesignError(
        f"no candidate interactions: {int(passed.sum())} of {len(pool)} passed every filter; "
        f"of those, {int((passed & ~has_clips).sum())} lack an early or late clip window and "
        f"{int((passed & ~known).sum())} have an empty stratum value ({', '.join(strata)}) or a "
        f"relationship other than {'/'.join(RELATIONSHIPS)}; failing filters: "
        f"{_cell_exclusions(pool, pd.Series(True, index=pool.index))}"
    )


def _cell_pools(eligible: pd.DataFrame, eligible_cell: pd.Series, cells: list[str]):
    """{cell: [(interaction_id, its participants), ...] sorted by id} of the eligible interactions."""
    pools: dict[str, list[tuple[str, frozenset]]] = {}
    for cell in cells:
        members = eligible[eligible_cell == cell].sort_values("interaction_id")
        pools[cell] = [
            (iid, _people(pa, pb, vendor))
            for iid, pa, pb, vendor in zip(
                members["interaction_id"],
                members["participant_a"],
                members["participant_b"],
                members["_vendor"],
                strict=True,
            )
        ]
    return pools


def _counterbalanced(cells: list[str], picks: Mapping, n: int, rng, windows: Mapping, lookup) -> list[dict]:
    """DESIGN rows of the picked interactions, cell by cell (sorted): floor(n/2) early and as
    many late, with odd n the extra dyad early in every other cell from a seeded coin flip;
    which dyads are early is a seeded shuffle. The clip window is that position's candidate."""
    parity = int(rng.integers(2))
    rows = []
    for index, cell in enumerate(cells):
        chosen = sorted(picks[cell])
        n_early = n // 2 + (1 if n % 2 and (index + parity) % 2 == 0 else 0)
        shuffled = [chosen[i] for i in rng.permutation(len(chosen))]
        for rank, interaction_id in enumerate(shuffled):
            position = "early" if rank < n_early else "late"
            clip = windows[(interaction_id, position)]
            info = lookup.loc[interaction_id]
            rows.append(
                {
                    "interaction_id": interaction_id,
                    "cell": cell,
                    "site": info["site"],
                    "relationship": info["relationship"],
                    "gender_mix": info["gender_mix"],
                    "position": position,
                    "clip_start": float(clip.clip_start),
                    "clip_end": float(clip.clip_end),
                    "n_turns": int(clip.n_turns),
                    "participant_a": info["participant_a"],
                    "participant_b": info["participant_b"],
                }
            )
    return rows

"""Rating design of the familiarity study: blocks, raters, survey lists.

The specification: docs/benchmarks/familiarity.md#ratings.

The algorithms are described in `omnisocial.familiarity.ratings` (section Design);
`rating_design` builds every configured experiment (rule rating_design): the sampled dyads
are dealt into `n_blocks` blocks (`block_design`); each modality is its own experiment with its
own raters (ids prefixed T, A, V: three separate panels, as in the published study), every rater
rating `blocks_per_rater` blocks (`rater_assignments`), with a survey list per rater
(`survey_table`; stimulus paths relative to the stimuli's `media/` folder). A design with fewer
dyads than `n_blocks` (the workflow test's four dyads) gets one block per dyad, and the log
says so.
"""

from __future__ import annotations

import itertools
import logging
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from omnisocial.familiarity.contracts import MODALITY_ASSIGNMENTS
from omnisocial.tables import DESIGN, Column, Contract

log = logging.getLogger(__name__)

MODALITIES = ("text", "audio", "video")
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


RATER_PREFIX = {"text": "T", "audio": "A", "video": "V"}
SURVEY_TABLE = Contract(
    "survey_table",
    (Column("modality", allowed=MODALITIES), Column("rater_id"), *SURVEY_LIST.columns),
    key=("modality", "rater_id", "order"),
)


@dataclass
class RatingDesign:
    blocks: pd.DataFrame  # BLOCKS [dyad_id, block]
    assignments: pd.DataFrame  # MODALITY_ASSIGNMENTS [modality, rater_id, block]
    surveys: pd.DataFrame  # SURVEY_TABLE [modality, rater_id, order, dyad_id, stimulus]

    def assignments_by_modality(self) -> dict[str, pd.DataFrame]:
        return assignments_by_modality(self.assignments)

    def survey_lists(self, modality: str) -> dict[str, pd.DataFrame]:
        """rater_id -> SURVEY_LIST of one experiment (for `write_survey_lists`)."""
        own = self.surveys[self.surveys["modality"] == modality]
        columns = SURVEY_LIST.names
        return {str(r): g[columns].reset_index(drop=True) for r, g in own.groupby("rater_id", sort=True)}


def assignments_by_modality(assignments: pd.DataFrame) -> dict[str, pd.DataFrame]:
    frame = MODALITY_ASSIGNMENTS.validate(assignments)
    return {
        modality: ASSIGNMENTS.validate(group[ASSIGNMENTS.names])
        for modality, group in frame.groupby("modality", sort=False)
    }


def rating_design(
    design: pd.DataFrame,
    n_blocks: int,
    blocks_per_rater: int,
    raters_per_modality: Mapping[str, int],
    seed: int,
) -> RatingDesign:
    """Blocks, rater assignments and survey lists of every configured experiment."""
    frame = DESIGN.validate(design)
    unknown = sorted(set(raters_per_modality) - set(MODALITIES))
    if unknown:
        raise ValueError(f"ratings.raters_per_modality: unknown modality {unknown}")
    used_blocks = min(int(n_blocks), len(frame))
    if used_blocks < int(n_blocks):
        log.warning(
            "%d dyads: %d blocks instead of %d (one block per dyad)", len(frame), used_blocks, n_blocks
        )
    blocks = block_design(frame, used_blocks, seed=seed)
    per_block = min(int(blocks_per_rater), used_blocks)
    if per_block < int(blocks_per_rater):
        log.warning("%d blocks: %d blocks per rater instead of %d", used_blocks, per_block, blocks_per_rater)
    assignments, surveys = [], []
    for modality in [m for m in MODALITIES if m in raters_per_modality]:
        n_raters = int(raters_per_modality[modality])
        assigned = rater_assignments(blocks, n_raters, per_block, seed=seed, prefix=RATER_PREFIX[modality])
        assignments.append(assigned.assign(modality=modality))
        table = survey_table(assigned, blocks, modality, seed=seed)
        surveys.append(table.assign(modality=modality))
        per_dyad = raters_per_dyad(assigned, blocks)["n_raters"]
        log.info("%s: %d raters, %d-%d ratings per dyad", modality, n_raters, per_dyad.min(), per_dyad.max())
    if not assignments:
        # a models-only study (ratings.raters_per_modality: {}): blocks, but no rater and no survey
        log.info("ratings.raters_per_modality names no modality: a models-only study, no survey lists")
        return RatingDesign(
            blocks=blocks, assignments=MODALITY_ASSIGNMENTS.empty(), surveys=SURVEY_TABLE.empty()
        )
    return RatingDesign(
        blocks=blocks,
        assignments=MODALITY_ASSIGNMENTS.validate(pd.concat(assignments, ignore_index=True)),
        surveys=SURVEY_TABLE.validate(pd.concat(surveys, ignore_index=True)),
    )

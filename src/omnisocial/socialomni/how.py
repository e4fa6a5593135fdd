"""How to speak (benchmarks.md 2.3): judge-score parsing and aggregation.

`parse_judge_score` follows the released scorer: the first number in the judge's reply
(regex -?digits[.digits]) is clamped to [0, 100] and snapped to the nearest level of
{0, 25, 50, 75, 100}. Choices:
- a value exactly between two levels goes to the LOWER one ("62.5" -> 50, "12.5" -> 0),
  as the released `min(levels, key=distance)` does (it returns the first of equal ones);
- an empty candidate (the model said nothing) scores 0 without a judge reply; pass the
  candidate to get that rule;
- a reply with no number is unparseable: score None with the reason, NOT 0 as in the
  released scorer (a judge failure is not evidence that the candidate is bad);
- "first number" is taken literally, as released: "On a 0-100 scale: 75" reads 0.

`aggregate_how` reports, per model, per judge and aggregated over judges:
- mean_with_zeros: the mean over items of all valid scores;
- mean_without_zeros: the same leaving out scores of 0 (the released level-2 summary
  averaged only scores > 0; other released scripts kept them, hence both);
- aggregated ("all" judges): the mean over the judges' valid scores of each item first,
  then over items; without zeros it leaves out the items whose judge mean is 0 (every
  judge gave 0), not single zero scores;
- n_items (items with a valid score), n_nonzero, n_unparsed (rows with a missing score).

`released_how_score` reproduces the released level-2 rule that ties the how score to the
when answer: gold YES and the model said YES -> the judged score; gold YES and the model
was wrong -> 0; gold NO and the model was wrong -> 0; gold NO and right -> not scored.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import pandas as pd

from omnisocial.importing import nan_to_none
from omnisocial.judges.agreement import icc, krippendorff_alpha, to_matrix
from omnisocial.socialomni.contracts import HOW_JUDGEMENTS, answered

log = logging.getLogger(__name__)

LEVELS = (0.0, 25.0, 50.0, 75.0, 100.0)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


class JudgeScore(NamedTuple):
    score: float | None
    reason: str


def snap_score(value: float) -> float:
    """Clamp to [0, 100] and snap to the nearest of LEVELS; exact ties go to the lower level."""
    value = min(100.0, max(0.0, float(value)))
    return min(LEVELS, key=lambda level: abs(level - value))


def parse_judge_score(text, candidate: str | None = None) -> JudgeScore:
    """(score, reason) from a judge reply; score None when unparseable (module doc)."""
    if candidate is not None and not str(candidate).strip():
        return JudgeScore(0.0, "empty candidate")
    if not isinstance(text, str) or not text.strip():
        return JudgeScore(None, "empty judge reply")
    match = _NUMBER.search(text)
    if not match:
        return JudgeScore(None, "no number in judge reply")
    return JudgeScore(snap_score(float(match.group(0))), "")


def released_how_score(gold: str, when_correct: bool, judged: float | None) -> float | None:
    """The released level-2 how score of one item given the when outcome (module doc)."""
    gold = gold.upper()
    if gold not in ("YES", "NO"):
        raise ValueError(f"gold must be YES or NO, got {gold!r}")
    if not when_correct:
        return 0.0
    return judged if gold == "YES" else None


def _means(values: pd.Series) -> dict:
    valid = values.dropna().astype(float)
    nonzero = valid[valid != 0]
    return {
        "n_items": int(len(valid)),
        "n_nonzero": int(len(nonzero)),
        "mean_with_zeros": float(valid.mean()) if len(valid) else math.nan,
        "mean_without_zeros": float(nonzero.mean()) if len(nonzero) else math.nan,
    }


def aggregate_how(judgements: pd.DataFrame) -> pd.DataFrame:
    """Per model: one row per judge and one with judge 'all' (module doc).

    `judgements`: item_id, model, judge, score (NaN / None = unparseable). One score per
    (item, model, judge).
    """
    for column in ("item_id", "model", "judge", "score"):
        if column not in judgements.columns:
            raise ValueError(f"judgements lack column {column}")
    frame = judgements[["item_id", "model", "judge", "score"]].copy()
    frame["score"] = pd.to_numeric(frame["score"], errors="raise").astype(float)
    if frame.duplicated(["item_id", "model", "judge"]).any():
        raise ValueError("several scores for one (item, model, judge)")
    valid = frame["score"].dropna()
    if ((valid < 0) | (valid > 100)).any():
        raise ValueError("scores must lie in [0, 100]")
    rows = []
    for model, group in frame.groupby("model", sort=True):
        for judge, sub in group.groupby("judge", sort=True):
            rows.append(
                {
                    "model": model,
                    "judge": str(judge),
                    **_means(sub["score"]),
                    "n_unparsed": int(sub["score"].isna().sum()),
                }
            )
        per_item = group.groupby("item_id")["score"].mean()  # NaNs skipped; all-NaN items stay NaN
        rows.append(
            {
                "model": model,
                "judge": "all",
                **_means(per_item),
                "n_unparsed": int(group["score"].isna().sum()),
            }
        )
    columns = [
        "model",
        "judge",
        "n_items",
        "n_nonzero",
        "mean_with_zeros",
        "mean_without_zeros",
        "n_unparsed",
    ]
    return pd.DataFrame(rows, columns=columns).astype({"n_items": np.int64, "n_nonzero": np.int64})


def judge_how(
    candidates: pd.DataFrame, references: pd.DataFrame, judges: Mapping[str, object]
) -> pd.DataFrame:
    """Score every how candidate against its item's references with each judge (`score_many(pairs, 'how')`).

    An empty candidate scores 0, as the released scorer does; a failed call is not judged.
    Items without any reference are skipped with a warning.
    """
    how = answered(candidates, "how").reset_index(drop=True)
    refs = references.sort_values(["item_id", "ref_index"]).groupby("item_id")["text"].apply(list).to_dict()
    missing = sorted(set(how["item_id"]) - set(refs))
    if missing:
        log.warning("how items without references are not judged: %s", ", ".join(missing))
        how = how[how["item_id"].isin(set(refs))].reset_index(drop=True)
    rows = []
    for name, judge in judges.items():
        pairs = [(c, refs[i]) for c, i in zip(how["reply"], how["item_id"], strict=True)]
        scores = judge.score_many(pairs, "how") if pairs else []
        for record, result in zip(how.to_dict("records"), scores, strict=True):
            rows.append(
                {
                    "model": record["model"],
                    "modality": record["modality"],
                    "item_id": record["item_id"],
                    "judge": name,
                    "score": result.score,
                    "similarity": result.similarity,
                    "reason": result.reason,
                }
            )
    return HOW_JUDGEMENTS.validate(pd.DataFrame(rows, columns=HOW_JUDGEMENTS.names))


def how_metrics(judgements: pd.DataFrame, when_scores: pd.DataFrame) -> pd.DataFrame:
    """`aggregate_how` per model, on the judged scores and with the released when-gated rule (module doc)."""
    columns = ["scoring", "model", "judge", "n_items", "n_nonzero", "mean_with_zeros", "mean_without_zeros"]
    if judgements.empty:
        return pd.DataFrame(columns=[*columns, "n_unparsed"])
    judged = aggregate_how(judgements[["item_id", "model", "judge", "score"]])
    judged.insert(0, "scoring", "judged")
    correct = {(r.model, r.item_id): bool(r.correct) for r in when_scores.itertuples()}
    gated = judgements.copy()
    gated["score"] = [
        released_how_score("YES", correct[(m, i)], nan_to_none(s)) if (m, i) in correct else math.nan
        for m, i, s in zip(gated["model"], gated["item_id"], gated["score"], strict=True)
    ]
    gated = gated[[(m, i) in correct for m, i in zip(gated["model"], gated["item_id"], strict=True)]]
    parts = [judged]
    if len(gated):
        released = aggregate_how(gated[["item_id", "model", "judge", "score"]])
        released.insert(0, "scoring", "released")
        parts.append(released)
    return pd.concat(parts, ignore_index=True)


def how_agreement(judgements: pd.DataFrame) -> pd.DataFrame:
    """Per model: Krippendorff's alpha (ordinal, interval) and ICC(2,1) / ICC(2,k) between the judges."""
    rows = []
    for model, group in judgements.groupby("model", sort=True):
        matrix = to_matrix(group.dropna(subset=["score"]), rater="judge", unit="item_id", value="score")
        row = {
            "model": model,
            "n_judges": int(matrix.shape[0]),
            "n_items": int(matrix.shape[1]),
            "alpha_ordinal": krippendorff_alpha(matrix.to_numpy(), "ordinal"),
            "alpha_interval": krippendorff_alpha(matrix.to_numpy(), "interval"),
            "icc_2_1": math.nan,
            "icc_2_k": math.nan,
            "exact_agreement": math.nan,
        }
        if matrix.shape[0] >= 2:
            complete = matrix.dropna(axis=1)
            if complete.shape[1]:
                row["exact_agreement"] = float((complete.nunique(axis=0) == 1).mean())
            try:
                result = icc(matrix.to_numpy())
                row["icc_2_1"], row["icc_2_k"] = result.icc_2_1, result.icc_2_k
            except ValueError as error:
                log.info("ICC for %s not computed: %s", model, error)
        rows.append(row)
    columns = ["model", "n_judges", "n_items", "alpha_ordinal", "alpha_interval", "icc_2_1", "icc_2_k"]
    return pd.DataFrame(rows, columns=[*columns, "exact_agreement"])

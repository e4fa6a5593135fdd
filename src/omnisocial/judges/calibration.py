"""Judge calibration: automatic judge scores against human scores of the same answers.

Human scores arrive as one CSV, `task, model, item_id, human_score`, where task is
- `how`: a human rating of a generated next utterance (compared per judge with the
  judge's score of the same model and item);
- `rtd_temporal` / `rtd_content`: a human 0-3 rating of a real-time description
  (compared with the item's temporal sensitivity / content consistency score);
- `pr`: a human rating of a proactive-reminder response (compared with the item's sample
  score, 1 only if every reminder passed; from `pr_scores` when given).
Each (task, judge) gets Spearman's rho over the answers both scored
(docs/benchmarks/duplexeval.md#judge-calibration; the paper reports about 0.9 for content and
0.8 for timing).

This is a judge-layer module, not a benchmark's: it compares the SocialOmni how judge
(`how_judgements`) and the Omni-DuplexEval real-time-description judge (`rtd_scores`) with
human scores (the offline judge as judge `streaming`, LLM judges by name when `rtd_scores`
has a `judge` column), so it belongs to neither benchmark package; it reads the two tables by their
column names only and imports no benchmark package.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from omnisocial.tables import Column, Contract

# scipy is imported in the functions that use it: scipy.stats costs ~1.3 s CPU per job start


def judge_calibration(auto, human) -> dict:
    """Spearman rho (and p-value) between automatic and human scores, pairs with a missing value dropped.

    Series are aligned by index, other sequences by position. rho is NaN with fewer than
    3 pairs or when either side is constant.
    """
    from scipy import stats

    if isinstance(auto, pd.Series) and isinstance(human, pd.Series):
        auto, human = auto.align(human, join="inner")
    a = np.asarray(auto, dtype=float)
    h = np.asarray(human, dtype=float)
    if a.shape != h.shape:
        raise ValueError("auto and human must have the same length")
    keep = ~(np.isnan(a) | np.isnan(h))
    a, h = a[keep], h[keep]
    n = int(len(a))
    if n < 3 or np.all(a == a[0]) or np.all(h == h[0]):
        return {"rho": math.nan, "p_value": math.nan, "n": n}
    result = stats.spearmanr(a, h)
    return {"rho": float(result.statistic), "p_value": float(result.pvalue), "n": n}


TASKS = ("how", "rtd_temporal", "rtd_content", "pr")


HUMAN_SCORES = Contract(
    "human_scores",
    (
        Column("task", allowed=TASKS),
        Column("model"),
        Column("item_id"),
        Column("human_score", "float"),
    ),
    key=("task", "model", "item_id"),
)


JUDGE_CALIBRATION = Contract(
    "judge_calibration",
    (
        Column("task", allowed=TASKS),
        Column("judge"),
        Column("n_pairs", "int"),
        Column("spearman_rho", "float", nullable=True),
        Column("p_value", "float", nullable=True),
    ),
    key=("task", "judge"),
)


_RTD_COLUMNS = {"rtd_temporal": "temporal_score", "rtd_content": "content_score"}


def automatic_scores(
    how_judgements: pd.DataFrame, rtd_scores: pd.DataFrame, pr_scores: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Long table `task, judge, model, item_id, auto_score` of every automatic score."""
    score = pd.to_numeric(how_judgements["score"], errors="coerce")
    how = how_judgements.assign(task="how", auto_score=score)
    parts = [how[["task", "judge", "model", "item_id", "auto_score"]]]
    columns = {**_RTD_COLUMNS, "pr": "sample_score"}
    tables = {"rtd_temporal": rtd_scores, "rtd_content": rtd_scores, "pr": pr_scores}
    for task, column in columns.items():
        scores = tables[task]
        if scores is None:
            continue
        judge = "streaming"
        if "judge" in scores:
            named = scores["judge"].fillna("").astype(str).str.strip()
            judge = named.where(named != "", "streaming")
        rows = scores.assign(
            task=task, judge=judge, auto_score=pd.to_numeric(scores[column], errors="coerce")
        )
        parts.append(rows[["task", "judge", "model", "item_id", "auto_score"]])
    return pd.concat(parts, ignore_index=True)


def calibrate_judges(
    human: pd.DataFrame,
    how_judgements: pd.DataFrame,
    rtd_scores: pd.DataFrame,
    pr_scores: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One JUDGE_CALIBRATION row per (task, judge) that has human scores for its task."""
    human = HUMAN_SCORES.validate(human)
    auto = automatic_scores(how_judgements, rtd_scores, pr_scores)
    joined = auto.merge(human, on=["task", "model", "item_id"], how="inner")
    rows = []
    for (task, judge), pairs in joined.groupby(["task", "judge"], sort=True):
        result = judge_calibration(pairs["auto_score"].to_numpy(), pairs["human_score"].to_numpy())
        rows.append(
            {
                "task": task,
                "judge": judge,
                "n_pairs": result["n"],
                "spearman_rho": result["rho"],
                "p_value": result["p_value"],
            }
        )
    if not rows:
        return JUDGE_CALIBRATION.empty()
    return JUDGE_CALIBRATION.validate(pd.DataFrame(rows))

"""Agreement between the judges of the streaming tasks, as `socialomni.how.how_agreement` for how.

Per task, model and split (and 'all'), the raters are the LLM judges of `score_judge_runs`
(their per-judge rows; the judge-mean 'all' is no rater) and the offline judge of
`score_rtd` / `score_pr` (rater ``offline``); a unit is one item (split, item_id):
- ``rtd_temporal``: the item's temporal score (0-3, the mean over judged relevant sentences),
  alpha ordinal and interval;
- ``rtd_content``: the item's content score (0-3), alpha ordinal and interval;
- ``pr``: the sample score (1 only if every reminder passed), alpha nominal.
A missing score (an unparsed reply under the strict parser, no content call) is a missing
rating, never a 0. Groups with fewer than two raters are not reported. Spearman against
human scores is `judges.calibration` (tasks rtd_temporal, rtd_content, pr).
"""

from __future__ import annotations

import pandas as pd

from omnisocial.judges.agreement import AGREEMENT_COLUMNS, rater_agreement
from omnisocial.tables import Column, Contract

OFFLINE = "offline"
# task -> (score column, alpha levels)
TASK_SCORES = {
    "rtd_temporal": ("temporal_score", ("ordinal", "interval")),
    "rtd_content": ("content_score", ("ordinal", "interval")),
    "pr": ("sample_score", ("nominal",)),
}
_INTS = {"n_judges": "int", "n_items": "int", "n_complete": "int"}

STREAM_JUDGE_AGREEMENT = Contract(
    "stream_judge_agreement",
    (
        Column("task", allowed=tuple(TASK_SCORES)),
        Column("model"),
        Column("split", doc="a split, or 'all'"),
        Column("judges", doc="the raters, ';'-joined (offline = the offline judge)"),
        *(Column(name, _INTS.get(name, "float"), nullable=name not in _INTS) for name in AGREEMENT_COLUMNS),
    ),
    key=("task", "model", "split"),
)


def _long(judged: pd.DataFrame, offline: pd.DataFrame | None, column: str) -> pd.DataFrame:
    """(judge, model, split, unit, score) rows of one task's score column."""
    parts = []
    if judged is not None and len(judged):
        parts.append(judged[judged["judge"] != "all"][["judge", "model", "split", "item_id", column]])
    if offline is not None and len(offline):
        parts.append(offline[["model", "split", "item_id", column]].assign(judge=OFFLINE))
    if not parts:
        return pd.DataFrame(columns=["judge", "model", "split", "unit", "score"])
    frame = pd.concat(parts, ignore_index=True)
    frame["unit"] = frame["split"].astype(str) + "/" + frame["item_id"].astype(str)
    frame["score"] = pd.to_numeric(frame[column], errors="coerce")
    return frame[["judge", "model", "split", "unit", "score"]]


def stream_judge_agreement(
    rtd_judged: pd.DataFrame | None,
    pr_judged: pd.DataFrame | None,
    rtd_offline: pd.DataFrame | None = None,
    pr_offline: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """STREAM_JUDGE_AGREEMENT rows (module doc) from the per-item scores of every judge."""
    sources = {"rtd_temporal": (rtd_judged, rtd_offline), "rtd_content": (rtd_judged, rtd_offline)}
    sources["pr"] = (pr_judged, pr_offline)
    rows = []
    for task, (column, levels) in TASK_SCORES.items():
        frame = _long(*sources[task], column)
        for model, own in frame.groupby("model", sort=True):
            for split in [*sorted(own["split"].unique()), "all"]:
                part = own if split == "all" else own[own["split"] == split]
                raters = sorted(part.dropna(subset=["score"])["judge"].unique())
                if len(raters) < 2:
                    continue
                row = rater_agreement(part, rater="judge", unit="unit", value="score", levels=levels)
                rows.append({"task": task, "model": model, "split": split, "judges": ";".join(raters), **row})
    if not rows:
        return STREAM_JUDGE_AGREEMENT.empty()
    return STREAM_JUDGE_AGREEMENT.validate(pd.DataFrame(rows, columns=STREAM_JUDGE_AGREEMENT.names))

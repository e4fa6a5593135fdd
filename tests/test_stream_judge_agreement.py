"""Agreement between the streaming judges (duplexeval.agreement), values worked out by hand."""

import math

import numpy as np
import pandas as pd
import pytest

from omnisocial.duplexeval.agreement import stream_judge_agreement
from omnisocial.judges.agreement import icc, krippendorff_alpha


def _rtd(judge, temporal, content, splits=("RTD_counting",) * 4):
    return pd.DataFrame(
        {
            "judge": judge,
            "model": "m",
            "split": list(splits),
            "item_id": [f"i{k}" for k in range(len(temporal))],
            "temporal_score": temporal,
            "content_score": content,
        }
    )


def _pr(judge, samples):
    return pd.DataFrame(
        {
            "judge": judge,
            "model": "m",
            "split": "PR_post_event_reminder",
            "item_id": [f"p{k}" for k in range(len(samples))],
            "sample_score": samples,
        }
    )


def test_reminder_agreement_is_nominal_alpha_by_hand():
    judged = pd.concat([_pr("a", [1, 0, 1, 1]), _pr("b", [1, 0, 0, 1]), _pr("all", [1, 0, 0.5, 1])])
    table = stream_judge_agreement(None, judged)
    row = table[(table["task"] == "pr") & (table["split"] == "all")].iloc[0]
    # coincidences o11 = 4, o00 = 2, o01 = o10 = 1; n = 8: D_o = 2/8, D_e = 2*5*3/(8*7); alpha = 8/15
    assert row["alpha_nominal"] == pytest.approx(8 / 15)
    assert math.isnan(row["alpha_interval"]) and math.isnan(row["alpha_ordinal"])
    assert row["judges"] == "a;b" and row["n_judges"] == 2  # the judge mean 'all' is no rater
    assert row["exact_agreement"] == pytest.approx(3 / 4) and row["n_complete"] == 4


def test_rtd_agreement_with_the_offline_judge_and_missing_scores():
    splits = ("RTD_counting", "RTD_counting", "RTD_world_knowledge", "RTD_world_knowledge")
    judged = pd.concat(
        [
            _rtd("a", [0.0, 1.0, 2.0, 3.0], [3.0, 2.0, None, 1.0], splits),
            _rtd("b", [0.5, 1.0, 2.5, 3.0], [3.0, 1.0, 2.0, 1.0], splits),
        ]
    )
    offline = _rtd("", [0.0, 1.5, 2.0, 2.5], [None] * 4, splits).drop(columns="judge")
    table = stream_judge_agreement(judged, None, offline).set_index(["task", "split"])
    temporal = table.loc[("rtd_temporal", "all")]
    assert temporal["judges"] == "a;b;offline" and temporal["n_items"] == 4
    matrix = np.array([[0.0, 1.0, 2.0, 3.0], [0.5, 1.0, 2.5, 3.0], [0.0, 1.5, 2.0, 2.5]])
    assert temporal["alpha_interval"] == pytest.approx(krippendorff_alpha(matrix, "interval"))
    assert temporal["icc_2_1"] == pytest.approx(icc(matrix).icc_2_1)
    assert temporal["exact_agreement"] == 0  # no item scored alike by all three
    per_split = table.loc[("rtd_temporal", "RTD_counting")]
    assert per_split["n_items"] == 2
    assert per_split["alpha_interval"] == pytest.approx(krippendorff_alpha(matrix[:, :2], "interval"))
    # content: the offline judge gave none (no rater), judge a's missing score is missing, not 0
    content = table.loc[("rtd_content", "all")]
    assert content["judges"] == "a;b" and content["n_complete"] == 3
    both = np.array([[3.0, 2.0, np.nan, 1.0], [3.0, 1.0, 2.0, 1.0]])
    assert content["alpha_interval"] == pytest.approx(krippendorff_alpha(both, "interval"))
    assert content["exact_agreement"] == pytest.approx(2 / 3)


def test_a_single_judge_reports_nothing():
    assert stream_judge_agreement(_rtd("a", [1.0, 2.0, 3.0, 0.0], [1.0] * 4), None).empty

"""Judge calibration against human scores (docs/benchmarks/duplexeval.md#judge-calibration)."""

import math

import pandas as pd
import pytest

from omnisocial.judges.calibration import calibrate_judges
from omnisocial.tables import TableError

HOW = pd.DataFrame(
    {
        "model": ["m"] * 4 + ["m"] * 4,
        "item_id": ["i1", "i2", "i3", "i4"] * 2,
        "judge": ["embedding"] * 4 + ["lexical"] * 4,
        "score": ["0", "25", "50", "100", "100", "75", "50", ""],  # lexical: reversed, one unscored
    }
)
RTD = pd.DataFrame(
    {
        "model": ["m"] * 4,
        "item_id": ["r1", "r2", "r3", "r4"],
        "temporal_score": ["0", "1", "2", "3"],
        "content_score": ["3", "3", "3", "3"],  # constant: rho undefined
    }
)


def human(rows):
    return pd.DataFrame(rows, columns=["task", "model", "item_id", "human_score"])


def test_spearman_per_task_and_judge_with_known_answers():
    scores = human(
        [("how", "m", f"i{k}", str(k)) for k in (1, 2, 3, 4)]
        + [("rtd_temporal", "m", f"r{k}", str(10 * k)) for k in (1, 2, 3, 4)]
        + [("rtd_content", "m", f"r{k}", str(k)) for k in (1, 2, 3, 4)]
    )
    table = calibrate_judges(scores, HOW, RTD).set_index(["task", "judge"])
    assert table.loc[("how", "embedding"), "spearman_rho"] == pytest.approx(1.0)
    assert table.loc[("how", "embedding"), "n_pairs"] == 4
    # the lexical judge ranks the answers backwards; its unscored answer is left out
    assert table.loc[("how", "lexical"), "spearman_rho"] == pytest.approx(-1.0)
    assert table.loc[("how", "lexical"), "n_pairs"] == 3
    assert table.loc[("rtd_temporal", "streaming"), "spearman_rho"] == pytest.approx(1.0)
    assert math.isnan(table.loc[("rtd_content", "streaming"), "spearman_rho"])


def test_only_tasks_with_human_scores_are_reported():
    table = calibrate_judges(human([("how", "m", "i1", "1"), ("how", "m", "i2", "2")]), HOW, RTD)
    assert set(table["task"]) == {"how"}
    assert table["spearman_rho"].isna().all()  # two pairs are too few for a rank correlation


def test_unknown_task_names_the_row_and_column():
    with pytest.raises(TableError, match="row 2 column task"):
        calibrate_judges(human([("timing", "m", "i1", "1")]), HOW, RTD)


def test_reminder_sample_scores_against_human_ratings():
    pr = pd.DataFrame(
        {
            "judge": ["gpt-judge"] * 4 + [""] * 4,  # "" = the offline judge's PR_SCORES rows
            "model": ["m"] * 8,
            "item_id": ["p1", "p2", "p3", "p4"] * 2,
            "sample_score": ["0", "0", "1", "1", "1", "1", "0", "0"],
        }
    )
    scores = human([("pr", "m", f"p{k}", str(k)) for k in (1, 2, 3, 4)])
    table = calibrate_judges(scores, HOW, RTD, pr).set_index(["task", "judge"])
    # ranks with ties: judge (1.5, 1.5, 3.5, 3.5) against 1..4 -> rho = 2 / sqrt(5)
    assert table.loc[("pr", "gpt-judge"), "spearman_rho"] == pytest.approx(2 / math.sqrt(5))
    assert table.loc[("pr", "streaming"), "spearman_rho"] == pytest.approx(-2 / math.sqrt(5))
    assert table.loc[("pr", "gpt-judge"), "n_pairs"] == 4

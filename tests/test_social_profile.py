"""The who / when / how profile: counts and 95% intervals against independent computations, and its figure."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import LineCollection
from scipy import stats

from omnisocial.figures import style
from omnisocial.socialomni import figures as social_figures
from omnisocial.socialomni.contracts import HOW_JUDGEMENTS, SOCIAL_PROFILE
from omnisocial.socialomni.how import how_metrics
from omnisocial.socialomni.profile import mean_t_interval, social_profile
from omnisocial.socialomni.when import score_when_single, score_when_stream
from omnisocial.socialomni.who import score_who

LETTERS = "ABCD"


def _who_summary() -> pd.DataFrame:
    """10 who items: m1 gets 7 right, m2 gets 3 right and one reply unparseable (counted wrong)."""
    items = pd.DataFrame({"item_id": [f"w{i}" for i in range(10)], "correct_answer": list("ABCDABCDAB")})
    rows = []
    for i, truth in enumerate(items["correct_answer"]):
        wrong = LETTERS[(LETTERS.index(truth) + 1) % 4]
        rows.append(
            {"model": "m1", "modality": "audio_video", "item_id": f"w{i}", "reply": truth if i < 7 else wrong}
        )
        m2 = truth if i < 3 else ("I cannot tell" if i == 3 else wrong)
        rows.append({"model": "m2", "modality": "audio_video", "item_id": f"w{i}", "reply": m2})
    return score_who(items, pd.DataFrame(rows)).summary


def _when_single() -> pd.DataFrame:
    """8 single-cut items: m1 6 right, m2 all 8 right (a Wilson bound at exactly 1)."""
    gold = ["YES", "NO"] * 4
    items = pd.DataFrame({"item_id": [f"c{i}" for i in range(8)], "gold": gold})
    flip = {"YES": "NO", "NO": "YES"}
    rows = [
        {"model": "m1", "modality": "audio_video", "item_id": f"c{i}", "reply": g if i < 6 else flip[g]}
        for i, g in enumerate(gold)
    ] + [
        {"model": "m2", "modality": "audio_video", "item_id": f"c{i}", "reply": g} for i, g in enumerate(gold)
    ]
    return score_when_single(items, pd.DataFrame(rows))[1]


def _when_stream() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Streaming: m1 5 items, 2 on time (offsets 0.5, 1.0); m2 4 items, none on time (a bound at 0)."""
    m1 = [0.5, 1.0, 1.5, -0.3, None]
    m2 = [3.0, -1.0, None, None]
    rows = [
        {"model": "m1", "item_id": f"s{i}", "turn_end": 10.0, "response_time": o} for i, o in enumerate(m1)
    ]
    rows += [
        {"model": "m2", "item_id": f"s{i}", "turn_end": 10.0, "response_time": o} for i, o in enumerate(m2)
    ]
    for row in rows:
        row["response_time"] = math.nan if row["response_time"] is None else 10.0 + row["response_time"]
    _, rates, tolerance = score_when_stream(pd.DataFrame(rows), (1, 2, 5), (0.5, 1.0))
    return rates, tolerance


# per (model, item): the two judges' scores; NaN = unparsed (the item's mean is then the other judge's)
HOW_SCORES = {
    "m1": [(50, 75), (25, 25), (100, 75), (0, 25), (75, math.nan)],
    "m2": [(0, 0), (25, 50), (50, 50)],
    "m3": [(75, 100), (100, 100), (100, 100), (50, 75)],  # only run on how
}


def _how_judgements() -> pd.DataFrame:
    rows = []
    for model, items in HOW_SCORES.items():
        for i, scores in enumerate(items):
            for judge, score in zip(("lexical", "embedding"), scores, strict=True):
                rows.append(
                    {
                        "model": model,
                        "modality": "audio_video",
                        "item_id": f"h{i}",
                        "judge": judge,
                        "score": score,
                        "similarity": math.nan,
                        "reason": "",
                        "judge_failed": False,
                    }
                )
    return HOW_JUDGEMENTS.validate(pd.DataFrame(rows))


@pytest.fixture(scope="module")
def inputs():
    judgements = _how_judgements()
    when_scores = pd.DataFrame(columns=["model", "item_id", "correct"])
    rates, tolerance = _when_stream()
    return {
        "who_summary": _who_summary(),
        "when_breakdown": _when_single(),
        "when_rates": rates,
        "when_prf": tolerance,
        "how": how_metrics(judgements, when_scores),
        "how_items": judgements,
    }


@pytest.fixture(scope="module")
def profile(inputs):
    return social_profile(**inputs, delta=0.5).set_index("model")


def _wilson(k: int, n: int) -> tuple[float, float]:
    interval = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(interval.low), float(interval.high)


def test_profile_follows_its_contract_and_keeps_a_row_per_model(profile):
    assert list(profile.reset_index().columns) == SOCIAL_PROFILE.names
    assert list(profile.index) == ["m1", "m2", "m3"]
    SOCIAL_PROFILE.validate(profile.reset_index())


@pytest.mark.parametrize(
    ("model", "prefix", "n_column", "k_column", "rate", "n", "k"),
    [
        ("m1", "who", "who_n", "who_correct", "who_accuracy", 10, 7),
        ("m2", "who", "who_n", "who_correct", "who_accuracy", 10, 3),
        ("m1", "when", "when_n", "when_correct", "when_accuracy", 8, 6),
        ("m2", "when", "when_n", "when_correct", "when_accuracy", 8, 8),
        ("m1", "stream", "when_stream_n", "when_on_time_count", "when_on_time", 5, 2),
        ("m2", "stream", "when_stream_n", "when_on_time_count", "when_on_time", 4, 0),
    ],
)
def test_proportions_carry_their_counts_and_wilson_intervals(
    profile, model, prefix, n_column, k_column, rate, n, k
):
    row = profile.loc[model]
    assert (row[n_column], row[k_column]) == (n, k)
    assert row[rate] == pytest.approx(k / n)
    low, high = _wilson(k, n)
    assert row[f"{rate}_low"] == pytest.approx(low, abs=1e-12)
    assert row[f"{rate}_high"] == pytest.approx(high, abs=1e-12)
    assert row[f"{rate}_low"] <= row[rate] <= row[f"{rate}_high"]


def test_bounds_at_zero_and_one_are_exact(profile):
    assert profile.loc["m2", "when_accuracy_high"] == 1.0  # 8 of 8
    assert profile.loc["m2", "when_on_time_low"] == 0.0  # 0 of 4


@pytest.mark.parametrize("model", sorted(HOW_SCORES))
def test_how_interval_is_the_t_interval_over_per_item_judge_means(profile, model):
    per_item = np.array([np.nanmean(scores) for scores in HOW_SCORES[model]])
    n = len(per_item)
    row = profile.loc[model]
    assert (row["how_n"], row["how_mean"]) == (n, pytest.approx(per_item.mean()))
    assert row["how_sd"] == pytest.approx(np.std(per_item, ddof=1))
    low, high = stats.t.interval(0.95, n - 1, loc=per_item.mean(), scale=stats.sem(per_item))
    assert row["how_mean_low"] == pytest.approx(max(0.0, low))
    assert row["how_mean_high"] == pytest.approx(min(100.0, high))


def test_how_interval_is_clipped_to_the_score_range(profile):
    # m3's per-item means 87.5, 100, 100, 62.5: the t interval reaches past 100
    per_item = np.array([87.5, 100, 100, 62.5])
    _, high = stats.t.interval(0.95, 3, loc=per_item.mean(), scale=stats.sem(per_item))
    assert high > 100 and profile.loc["m3", "how_mean_high"] == 100.0


def test_a_task_a_model_was_not_run_on_is_empty(profile):
    row = profile.loc["m3"]
    for column in SOCIAL_PROFILE.names[1:19]:  # every who and when column
        assert pd.isna(row[column]), column
    assert pd.isna(row["perception_rank"]) and row["generation_rank"] == 1.0


def test_without_per_item_scores_the_how_interval_is_empty(inputs):
    profile = social_profile(**{**inputs, "how_items": None}).set_index("model")
    assert profile.loc["m1", "how_n"] == 5 and math.isnan(profile.loc["m1", "how_mean_low"])


def test_judgements_of_another_run_are_refused(inputs):
    other = inputs["how_items"][inputs["how_items"]["item_id"] != "h0"]
    with pytest.raises(ValueError, match="do not match the how table"):
        social_profile(**{**inputs, "how_items": other})


def test_profile_round_trips_through_its_csv(profile, tmp_path):
    path = tmp_path / "social_profile.csv"
    SOCIAL_PROFILE.write(path, profile.reset_index())
    back = SOCIAL_PROFILE.read(path).set_index("model")
    pd.testing.assert_frame_equal(back, profile, check_dtype=False)


def test_empty_inputs_give_an_empty_profile():
    empty = pd.DataFrame(columns=["model"])
    assert list(social_profile(empty, empty, empty, empty, empty).columns) == SOCIAL_PROFILE.names


def test_mean_t_interval_needs_two_values():
    assert all(math.isnan(v) for v in mean_t_interval([50.0]))
    assert mean_t_interval([50.0, 50.0]) == (50.0, 50.0)


# --- the figure -----------------------------------------------------------------------------


def _draw(profile: pd.DataFrame, tmp_path, **kwargs):
    """The profile figure's Figure (captured before it is saved) and the saved paths."""
    captured = {}
    save = social_figures.save_figure

    def keep(fig, stem):
        captured["fig"] = fig
        return save(fig, stem)

    social_figures.save_figure = keep
    try:
        paths = social_figures.profile_figure(profile, tmp_path / "profile", **kwargs)
    finally:
        social_figures.save_figure = save
    return captured["fig"], paths


def _at(profile: pd.DataFrame, model: str, column: str) -> float:
    return float(profile.at[model, column])


def test_figure_draws_each_interval_as_a_whisker(profile, tmp_path):
    table = profile.reset_index()
    fig, _ = _draw(table, tmp_path)
    ax = fig.axes[0]
    whiskers = {}
    for collection in ax.collections:
        if isinstance(collection, LineCollection) and str(collection.get_gid() or "").startswith("interval:"):
            model = collection.get_gid().split(":", 1)[1]
            whiskers[model] = sorted(
                (round(float(s[0, 0]), 9), float(s[:, 1].min()), float(s[:, 1].max()))
                for s in collection.get_segments()
            )
    measures = [("who_accuracy", 1), ("when_accuracy", 1), ("when_on_time", 1), ("how_mean", 100)]
    for model in ("m1", "m2", "m3"):
        expected = [
            (_at(profile, model, f"{m}_low") / scale, _at(profile, model, f"{m}_high") / scale)
            for m, scale in measures
            if math.isfinite(_at(profile, model, m)) and math.isfinite(_at(profile, model, f"{m}_low"))
        ]
        got = [(low, high) for _, low, high in whiskers[model]]
        np.testing.assert_allclose(np.array(got), np.array(expected, dtype=float), rtol=0, atol=1e-12)
    # m3 has only the how interval; the others one per measure
    assert [len(whiskers[m]) for m in ("m1", "m2", "m3")] == [4, 4, 1]


def test_figure_labels_values_with_n_and_marks_missing_tasks(profile, tmp_path):
    fig, _ = _draw(profile.reset_index(), tmp_path)
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    # who and single-cut when: every model that ran had 10 / 8 items, said once under the task
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks[0].endswith("n = 10 each") and ticks[1].endswith("n = 8 each")
    assert "0.70" in texts and "0.30" in texts and "0.75" in texts and "1.00" in texts
    # streaming and how: the n differ between models, so each bar says its own
    assert "n =" not in ticks[2] + ticks[3]
    assert {"0.40 (n=5)", "0.00 (n=4)", "0.29 (n=3)", "0.88 (n=4)"} <= set(texts)
    assert texts.count("n/a") == 3  # m3: who, single-cut when, streaming when
    caption = " ".join(t.get_text() for t in fig.texts)
    assert "95% intervals" in caption and "Wilson" in caption


def _subtitle(fig) -> str:
    return " ".join(t.get_text() for t in fig.texts)


def test_subtitle_flags_demo_input_and_not_real_input(profile, tmp_path):
    table = profile.reset_index()
    demo, _ = _draw(table, tmp_path, simulated=True)
    assert "SIMULATED DATA" in _subtitle(demo) and style.SOCIAL_DEMO_LABEL in _subtitle(demo)
    real, _ = _draw(table, tmp_path, simulated=False)
    assert "SIMULATED" not in _subtitle(real)
    auto, _ = _draw(table, tmp_path)  # no source column: real
    assert "SIMULATED" not in _subtitle(auto)
    flagged, _ = _draw(table.assign(source="simulated"), tmp_path)
    assert "SIMULATED DATA" in _subtitle(flagged)


def test_profile_figure_fits_a_journal_page(profile, tmp_path):
    from printsize import pdf_print_size

    many = pd.concat(
        [profile.reset_index().assign(model=lambda f, k=k: f["model"] + f"-{k}") for k in range(3)],
        ignore_index=True,
    )  # 9 models
    _, (_, pdf) = _draw(many, tmp_path, simulated=True)
    width, _, sizes = pdf_print_size(pdf)
    assert width <= style.MAX_WIDTH_IN + 1e-3 and min(sizes) >= style.MIN_FONT_PT

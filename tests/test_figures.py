"""Figures: every family writes a PNG and a PDF, byte-identical when rendered twice."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pandas as pd
import pytest

from omnisocial.familiarity import figures
from omnisocial.familiarity.figures.glmm import pretty_contrast
from omnisocial.familiarity.ratings import SIMULATED_LABEL, block_design, rater_assignments, simulate_panel
from omnisocial.figures import style
from omnisocial.stats.crowds import crowd_curve, per_rater_sdt
from omnisocial.stats.sdt import majority_vote, score_predictions, truth_map
from omnisocial.stats.tests import power_table
from omnisocial.tables import DESIGN

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def make_design(n_per_cell: int) -> pd.DataFrame:
    """2 sites x 2 relationships x 2 gender mixes x n_per_cell dyads."""
    rows = []
    for cell in (
        "s1|familiar|ff",
        "s1|familiar|mm",
        "s1|stranger|ff",
        "s1|stranger|mm",
        "s2|familiar|ff",
        "s2|familiar|mm",
        "s2|stranger|ff",
        "s2|stranger|mm",
    ):
        site, relationship, gender = cell.split("|")
        for j in range(n_per_cell):
            i = len(rows) + 1
            rows.append(
                {
                    "dyad_id": f"D{i:03d}",
                    "interaction_id": f"I{i}",
                    "cell": cell,
                    "site": site,
                    "relationship": relationship,
                    "gender_mix": gender,
                    "position": ("early", "late")[j % 2],
                    "clip_start": 0.0,
                    "clip_end": 20.0,
                    "n_turns": 5,
                    "participant_a": f"P{i}a",
                    "participant_b": f"P{i}b",
                }
            )
    return DESIGN.validate(pd.DataFrame(rows))


@pytest.fixture(scope="module")
def tables():
    """Simulated ratings and three models' predictions on 48 dyads, with their scores."""
    design = make_design(6)  # 48 dyads
    blocks = block_design(design, n_blocks=6, seed=0)
    assignments = {
        m: rater_assignments(blocks, 24, seed=i, prefix=m[0].upper()) for i, m in enumerate(style.MODALITIES)
    }
    trials, _ = simulate_panel(design, assignments, None, seed=1, blocks=blocks)
    truth = truth_map(design)
    rng = np.random.default_rng(0)
    rows = []
    for model, skill, has_confidence in (
        ("model-a", 0.7, True),
        ("model-b", 0.55, True),
        ("model-c", 0.5, False),
    ):
        for modality in style.MODALITIES:
            for dyad, label in truth.items():
                right = rng.random() < skill
                answer = label if right else ("stranger" if label == "familiar" else "familiar")
                confidence = (
                    float(np.clip(rng.normal(0.55 + 0.2 * right, 0.1), 0, 1)) if has_confidence else np.nan
                )
                rows.append(
                    {
                        "model": model,
                        "modality": modality,
                        "item_id": dyad,
                        "truth": label,
                        "label": "" if rng.random() < 0.05 else answer,
                        "confidence": confidence,
                    }
                )
    predictions = pd.DataFrame(rows)
    metrics = pd.concat(
        [score_predictions(predictions), score_predictions(majority_vote(trials, truth, seed=0))],
        ignore_index=True,
    )
    rater_sdt = per_rater_sdt(trials, truth).assign(source=SIMULATED_LABEL)
    contrasts = pd.DataFrame(
        {
            "contrast": [
                "modality[audio] - modality[text]",
                "modality[audio] - modality[video]",
                "modality[text] - modality[video]",
            ],
            "mean": [0.21, -0.08, -0.29],
            "hdi_low": [0.04, -0.25, -0.47],
            "hdi_high": [0.38, 0.09, -0.12],
            "p_gt_0": [0.992, 0.17, 0.0],
            "r_hat": [1.001, 1.02, 1.003],
            "ess_bulk": [1500.0, 900.0, 1200.0],
        }
    )
    return {
        "trials": trials,
        "truth": truth,
        "predictions": predictions,
        "metrics": metrics,
        "rater_sdt": rater_sdt,
        "contrasts": contrasts,
    }


@pytest.fixture(scope="module")
def inputs(tables):
    """Figure family -> a function drawing it from `tables` to a path stem."""
    trials, truth, predictions = tables["trials"], tables["truth"], tables["predictions"]
    metrics, rater_sdt, contrasts = tables["metrics"], tables["rater_sdt"], tables["contrasts"]
    return {
        "accuracy": lambda stem: figures.accuracy_figure(rater_sdt, metrics, stem, seed=3, caption="Demo."),
        "sdt": lambda stem: figures.sdt_figure(rater_sdt, metrics, stem),
        "crowds": lambda stem: figures.crowd_figure(
            crowd_curve(trials, truth, ks=[1, 3, 5, 7], n_resamples=40, seed=0).assign(
                source=SIMULATED_LABEL
            ),
            stem,
            models=metrics,
        ),
        "difficulty": lambda stem: figures.difficulty_figure(
            figures.dyad_accuracy(trials, predictions, truth).assign(source=SIMULATED_LABEL), stem
        ),
        # the workflow's difficulty figure: Rasch difficulties with one fit not converged
        "difficulty_rasch": lambda stem: figures.difficulty_figure(
            _rasch_dyads_and_fits()[0],
            stem,
            fits=_rasch_dyads_and_fits()[1],
            value="difficulty",
            value_label="Rasch difficulty",
        ),
        "glmm": lambda stem: figures.glmm_contrast_figure(contrasts, stem, simulated=True),
        "calibration": lambda stem: figures.calibration_figure(figures.reliability_table(predictions), stem),
        "power": lambda stem: figures.power_figure(
            power_table([0.0, 0.05, 0.1, 0.15, 0.2], [0.05, 0.1]), stem, n_dyads=96, caption="Power."
        ),
    }


FAMILIES = ["accuracy", "sdt", "crowds", "difficulty", "glmm", "calibration", "power"]


@pytest.mark.parametrize("family", FAMILIES)
def test_figure_writes_png_and_pdf_reproducibly(tmp_path, inputs, family):
    first = inputs[family](tmp_path / "one" / family)
    second = inputs[family](tmp_path / "two" / f"{family}.png")  # a suffix on the stem is dropped
    assert [p.name for p in first] == [f"{family}.png", f"{family}.pdf"] == [p.name for p in second]
    png, pdf = (p.read_bytes() for p in first)
    assert png.startswith(PNG_MAGIC) and pdf.startswith(b"%PDF")
    assert len(png) > 10_000  # something was drawn
    assert png == second[0].read_bytes()
    assert pdf == second[1].read_bytes()
    assert b"CreationDate" not in pdf
    # atomic writes leave no temporary files behind
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == [f"{family}.pdf", f"{family}.png"]


def test_figure_formats_follow_the_config(tmp_path, inputs):
    """figures.formats: the files save_figure writes (png always, the report shows it)."""
    try:
        style.configure({"formats": ["png", "svg"]})
        first = inputs["glmm"](tmp_path / "one" / "glmm")
        second = inputs["glmm"](tmp_path / "two" / "glmm.svg")  # a format's suffix is dropped
        assert [p.name for p in first] == ["glmm.png", "glmm.svg"] == [p.name for p in second]
        assert sorted(p.name for p in (tmp_path / "one").iterdir()) == ["glmm.png", "glmm.svg"]
        svg = first[1].read_bytes()
        assert b"<svg" in svg and svg == second[1].read_bytes()  # reproducible: no date, fixed ids
        for wrong in (["pdf"], ["png", "jpg"]):
            with pytest.raises(ValueError, match=r"figures\.formats: .*must hold png"):
                style.configure({"formats": wrong})
    finally:
        style.configure(None)
    assert style.FORMATS == ("png", "pdf")


def test_figure_is_independent_of_user_rcparams(tmp_path, inputs):
    import matplotlib

    reference = inputs["glmm"](tmp_path / "a" / "glmm")[0].read_bytes()
    with matplotlib.rc_context({"font.size": 20, "lines.linewidth": 5, "axes.spines.top": True}):
        changed = inputs["glmm"](tmp_path / "b" / "glmm")[0].read_bytes()
    assert reference == changed


def test_png_and_pdf_share_one_crop_that_holds_every_label(tmp_path):
    # save_figure measures the tight bbox once, at the PNG's dpi, for both formats
    import matplotlib.pyplot as plt
    from PIL import Image
    from printsize import pdf_print_size

    with style.styled():
        fig, ax = plt.subplots(figsize=(4, 3))
        ax.plot([0, 1], [0, 1], label="a legend entry far outside the axes")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
        ax.set_ylabel("a label")
    png, pdf = style.save_figure(fig, tmp_path / "crop")
    plt.close(fig)
    width_px, height_px = Image.open(png).size
    width_in, height_in, _ = pdf_print_size(pdf)
    assert width_in > 4.5  # the legend outside the axes is inside the crop
    assert width_px / style.DPI == pytest.approx(width_in, abs=1.5 / style.DPI)
    assert height_px / style.DPI == pytest.approx(height_in, abs=1.5 / style.DPI)


def test_simulated_inputs_are_flagged_in_the_subtitle():
    simulated = pd.DataFrame({"source": [SIMULATED_LABEL]})
    real = pd.DataFrame({"source": ["survey export 2025-03"]})
    assert style.is_simulated(real, simulated) and not style.is_simulated(real, None)
    assert SIMULATED_LABEL in style.full_subtitle("k = 1..25", None, simulated)
    assert style.full_subtitle("k = 1..25", None, real) == "k = 1..25"
    assert SIMULATED_LABEL in style.full_subtitle("", True, real)
    assert style.full_subtitle("", False, simulated) == ""


def test_simulated_note_changes_the_rendered_figure(tmp_path):
    contrasts = pd.DataFrame(
        {
            "contrast": ["video - text"],
            "mean": [0.3],
            "hdi_low": [0.1],
            "hdi_high": [0.5],
            "p_gt_0": [0.99],
            "r_hat": [1.0],
            "ess_bulk": [900.0],
        }
    )
    real = figures.glmm_contrast_figure(contrasts, tmp_path / "real")[0].read_bytes()
    demo = figures.glmm_contrast_figure(contrasts, tmp_path / "demo", simulated=True)[0].read_bytes()
    assert real != demo


def test_pretty_contrast_labels():
    assert pretty_contrast("modality[audio] - modality[text]") == "audio \u2212 text"
    assert pretty_contrast("video - text") == "video \u2212 text"


def test_reliability_table_bins_and_scores_per_model(inputs):
    rows = [
        {
            "model": "m",
            "modality": "text",
            "item_id": f"D{i}",
            "truth": "familiar" if i < 4 else "stranger",
            "label": "familiar",
            "confidence": c,
        }
        for i, c in enumerate([0.9, 0.9, 0.6, 0.6, 0.9, 0.6, 0.6, 0.6])
    ] + [
        {
            "model": "silent",
            "modality": "text",
            "item_id": "D0",
            "truth": "familiar",
            "label": "familiar",
            "confidence": np.nan,
        }
    ]
    table = figures.reliability_table(pd.DataFrame(rows), n_bins=10)
    own = table[table["model"] == "m"]
    filled = own[own["n"] > 0].set_index("bin_low")
    # confidence 0.6 bin: D2, D3 right, D5-D7 wrong -> 2/5; 0.9 bin: D0, D1 right, D4 wrong -> 2/3
    assert filled.loc[0.6, "n"] == 5 and filled.loc[0.6, "accuracy"] == pytest.approx(0.4)
    assert filled.loc[0.9, "n"] == 3 and filled.loc[0.9, "accuracy"] == pytest.approx(2 / 3)
    assert own["ece"].iloc[0] == pytest.approx(5 / 8 * 0.2 + 3 / 8 * (0.9 - 2 / 3))
    assert table.loc[table["model"] == "silent", "n_items"].tolist() == [0]


def test_dyad_accuracy_per_rater_type():
    truth = {"D1": "familiar", "D2": "stranger"}
    trials = pd.DataFrame(
        {
            "rater_id": ["a", "b", "a"],
            "dyad_id": ["D1", "D1", "D2"],
            "modality": "text",
            "response": ["familiar", "stranger", "stranger"],
            "correct": [True, False, True],
        }
    )
    predictions = pd.DataFrame(
        {
            "model": ["m1", "m2", "m1", "human_majority"],
            "modality": "text",
            "item_id": ["D1", "D1", "D2", "D2"],
            "truth": ["familiar", "familiar", "stranger", "stranger"],
            "label": ["familiar", "", "familiar", "stranger"],
            "confidence": np.nan,
        }
    )
    table = figures.dyad_accuracy(trials, predictions, truth).set_index(["rater_type", "dyad_id"])
    assert table.loc[("human", "D1"), "accuracy"] == 0.5 and table.loc[("human", "D1"), "n"] == 2
    assert table.loc[("model", "D1"), "n"] == 1  # the non-answer is left out
    assert table.loc[("model", "D2"), "accuracy"] == 0.0  # human_majority is not a model


def test_from_rasch_feeds_the_difficulty_figure(tmp_path):
    truth = {f"D{i}": ("familiar", "stranger")[i % 2] for i in range(6)}
    items = {
        (modality, kind): pd.DataFrame(
            {
                "item": list(truth),
                "difficulty": np.linspace(-1, 1, 6) * (1 + 0.2 * k),
                "sd": 0.1,
                "hdi_low": -2.0,
                "hdi_high": 2.0,
            }
        )
        for k, (modality, kind) in enumerate(itertools.product(("text", "audio"), ("human", "model")))
    }
    table = figures.from_rasch(items, truth)
    assert len(table) == 24 and set(table["truth"]) == {"familiar", "stranger"}
    audio_human = table[(table["modality"] == "audio") & (table["rater_type"] == "human")]
    assert audio_human["dyad_id"].tolist() == list(truth)
    assert audio_human["difficulty"].iloc[-1] == pytest.approx(1.4)  # k = 2: (audio, human)
    paths = figures.difficulty_figure(
        table, tmp_path / "rasch", value="difficulty", value_label="Rasch difficulty"
    )
    assert all(path.stat().st_size > 0 for path in paths)


# --- convergence marks (GLMM contrasts, Rasch fits), crowd panels ---------------------------


def _captured(monkeypatch, module) -> list:
    """Figures `module` would save, kept instead of written."""
    figures_seen = []
    monkeypatch.setattr(module, "save_figure", lambda fig, stem: figures_seen.append(fig) or [])
    return figures_seen


def _misses_targets(r_hat, ess) -> np.ndarray:
    """Independent of the package: R-hat <= 1.01 and bulk ESS >= 400 (NaN fails both)."""
    r_hat, ess = np.asarray(r_hat, dtype=float), np.asarray(ess, dtype=float)
    return ~((r_hat <= 1.01) & (ess >= 400))


def _rasch_dyads_and_fits():
    """Rasch difficulties of 12 dyads for text/audio x human/model, and their fits: the model
    fits miss the targets (text: R-hat 1.03; audio: R-hat undefined), the human fits meet them."""
    truth = {f"D{i:02d}": ("familiar", "stranger")[i % 2] for i in range(12)}
    rng = np.random.default_rng(3)
    dyads = pd.DataFrame(
        [
            {"dyad_id": d, "modality": m, "rater_type": k, "difficulty": rng.normal(), "truth": t}
            for m in ("text", "audio")
            for k in ("human", "model")
            for d, t in truth.items()
        ]
    ).assign(source=SIMULATED_LABEL)
    fits = pd.DataFrame(
        {
            "modality": ["text", "text", "audio", "audio", "video"],
            "rater_type": ["human", "model", "human", "model", "human"],
            "fitted": [True, True, True, True, False],
            "r_hat_max": [1.01, 1.03, 1.004, np.nan, np.nan],
            "ess_bulk_min": [400.0, 2000.0, 650.0, 900.0, np.nan],
        }
    )
    return dyads, fits


def test_glmm_figure_flags_exactly_the_unconverged_contrasts(tmp_path, monkeypatch):
    from matplotlib.colors import to_rgba

    from omnisocial.familiarity.figures import glmm as module

    contrasts = pd.DataFrame(
        {
            "contrast": [f"modality[{a}] - modality[{b}]" for a, b in ("ab", "ac", "ad", "bc", "bd")],
            "mean": [0.2, -0.1, 0.3, 0.0, 0.1],
            "hdi_low": [0.05, -0.3, 0.1, -0.2, -0.1],
            "hdi_high": [0.4, 0.1, 0.5, 0.2, 0.3],
            "p_gt_0": [0.99, 0.2, 0.99, 0.5, 0.8],
            "r_hat": [1.0, 1.02, 1.005, np.nan, 1.01],
            "ess_bulk": [500.0, 800.0, 399.0, 1000.0, 400.0],
        }
    )
    expected = _misses_targets(contrasts["r_hat"], contrasts["ess_bulk"])
    assert expected.tolist() == [False, True, True, True, False]
    seen = _captured(monkeypatch, module)
    figures.glmm_contrast_figure(contrasts, tmp_path / "g")
    (fig,) = seen
    ax = fig.axes[0]
    red = to_rgba(style.FLAG_COLOR)
    ticks = {tick.get_text(): to_rgba(tick.get_color()) == red for tick in ax.get_yticklabels()}
    for name, bad in zip(contrasts["contrast"], expected, strict=True):
        label = pretty_contrast(name) + ("\n(not converged)" if bad else "")
        assert ticks[label] == bad  # red and labelled exactly when it misses the targets
    intervals = [c for c in ax.collections if len(c.get_segments()) == 1]
    assert [to_rgba(c.get_colors()[0]) == red for c in intervals] == list(expected)
    caption = " ".join(text.get_text() for text in fig.texts)
    assert "3 of 5 contrasts" in caption and "R-hat > 1.01, bulk or tail ESS < 400" in caption


def _is_hollow(ax) -> bool:
    points = [c for c in ax.collections if len(c.get_offsets())]
    return bool(points) and all(
        c.get_facecolors().size == 0 or (c.get_facecolors()[:, 3] == 0).all() for c in points
    )


def _map_persons():
    """Abilities of 9 raters and 3 models per modality (text, audio)."""
    rng = np.random.default_rng(1)
    return pd.DataFrame(
        [
            {"modality": m, "rater_type": k, "person": f"{k}{i}", "ability": rng.normal(0, 1.5)}
            for m in ("text", "audio")
            for k, n in (("human", 9), ("model", 3))
            for i in range(n)
        ]
    )


def test_difficulty_figure_marks_the_panels_of_unconverged_fits(tmp_path, monkeypatch):
    from matplotlib.colors import to_rgba

    from omnisocial.familiarity.figures import difficulty as module

    dyads, fits = _rasch_dyads_and_fits()
    fitted = fits[fits["fitted"]]
    miss = _misses_targets(fitted["r_hat_max"], fitted["ess_bulk_min"])
    bad = set(zip(fitted["rater_type"][miss], fitted["modality"][miss], strict=True))
    assert bad == {("model", "text"), ("model", "audio")}
    seen = _captured(monkeypatch, module)
    figures.difficulty_figure(dyads, tmp_path / "d", fits=fits, value="difficulty")
    (fig,) = seen
    panels = {ax.get_title(): ax for ax in fig.axes if ax.get_visible()}
    # a panel is hollow exactly when one of its two fits missed the targets
    expected = {
        "text vs audio": {("human", "text"), ("human", "audio")},
        "humans vs models: text": {("human", "text"), ("model", "text")},
        "humans vs models: audio": {("human", "audio"), ("model", "audio")},
    }
    assert set(panels) == set(expected)
    assert {title: _is_hollow(ax) for title, ax in panels.items()} == {
        title: bool(keys & bad) for title, keys in expected.items()
    }
    red = to_rgba(style.FLAG_COLOR)
    flagged_axes = [ax.get_ylabel() for ax in panels.values() if to_rgba(ax.yaxis.label.get_color()) == red]
    assert flagged_axes == ["models, text\n(not converged)", "models, audio\n(not converged)"]
    legend = [text.get_text() for ax in fig.axes if ax.get_legend() for text in ax.get_legend().get_texts()]
    assert "not converged: R-hat > 1.01, bulk or tail ESS < 400, or divergent transitions" in legend
    assert "2 of 4 Rasch fits" in " ".join(text.get_text() for text in fig.texts)


def test_person_item_map_draws_every_person_on_the_item_scale(tmp_path, monkeypatch):
    from omnisocial.familiarity.figures import diagnostics as module

    dyads, fits = _rasch_dyads_and_fits()
    persons = _map_persons()
    seen = _captured(monkeypatch, module)
    module.person_item_map(dyads, tmp_path / "m", persons=persons, fits=fits)
    (fig,) = seen
    axes = np.array(fig.axes).reshape(2, 2)  # rows human, model; columns text, audio
    for (i, kind), (j, modality) in itertools.product(
        enumerate(("human", "model")), enumerate(("text", "audio"))
    ):
        bars = [c for c in axes[i, j].containers if c.get_label().startswith("persons")]
        widths = [-patch.get_width() for patch in bars[0]]
        mine = persons[(persons["rater_type"] == kind) & (persons["modality"] == modality)]
        assert sum(widths) == len(mine)  # every person counted once, on the left
        edges = [patch.get_y() for patch in bars[0]] + [bars[0][-1].get_y() + bars[0][-1].get_height()]
        counts, _ = np.histogram(mine["ability"], bins=edges)
        assert widths == counts.tolist()  # at their abilities, on the difficulties' logit axis
        marked = any(text.get_text() == "not converged" for text in axes[i, j].texts)
        assert marked == (kind == "model")
    assert "2 of 4 Rasch fits" in " ".join(text.get_text() for text in fig.texts)


def _crowd_inputs(modalities):
    rows = [
        {
            "modality": m,
            "k": k,
            "accuracy_mean": 0.55 + 0.02 * k + 0.01 * j,
            "resample_low": 0.45 + 0.02 * k,
            "resample_high": 0.7 + 0.02 * k,
            "accuracy_expected": 0.55 + 0.02 * k,
            "source": SIMULATED_LABEL,
        }
        for j, m in enumerate(modalities)
        for k in (1, 3, 5, 7)
    ]
    models = pd.DataFrame(
        {
            "model": ["a", "b", "human_majority"] * len(modalities),
            "modality": [m for m in modalities for _ in range(3)],
            "accuracy": [0.6, 0.7, 0.9] * len(modalities),
        }
    )
    return pd.DataFrame(rows), models


@pytest.mark.parametrize("modalities", [("text", "audio", "video"), ("audio",)])
def test_crowd_figure_has_one_panel_per_modality(tmp_path, monkeypatch, modalities):
    from omnisocial.familiarity.figures import crowds as module

    curve, models = _crowd_inputs(modalities)
    seen = _captured(monkeypatch, module)
    module.crowd_figure(curve, tmp_path / "c", models=models)
    (fig,) = seen
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == len(modalities)
    assert [ax.get_title() for ax in axes] == list(modalities)
    assert all(axes[0].get_shared_y_axes().joined(axes[0], ax) for ax in axes[1:])
    for ax in axes:
        assert len(ax.collections) == 1  # one band per panel: none overlap
        (legend,) = [t.get_text() for t in ax.get_legend().get_texts()]
        assert legend.replace("\n", " ") == "best model: b (0.70)"  # the crowd is not a model


def test_crowd_figure_fits_a_page_with_long_model_names(tmp_path):
    from printsize import pdf_print_size

    curve, models = _crowd_inputs(("text", "audio", "video"))
    models["model"] = models["model"].replace({"b": "baseline_behavioural = behavioural"})
    _, pdf = figures.crowd_figure(curve, tmp_path / "c", models=models)
    width, _, sizes = pdf_print_size(pdf)
    assert width <= style.MAX_WIDTH_IN + 1e-3 and min(sizes) >= style.MIN_FONT_PT


# --- print size: a journal page (at most 7.2 in wide, no text under 7 pt) --------------------


def _overview_inputs():
    from omnisocial.familiarity.figures.overview import coverage_figure, funnel_figure

    funnel = pd.DataFrame(
        {
            "stage": ["interactions in the corpus", "F1 prompt identified", "dyads sampled"],
            "n": [50, 40, 24],
            "excluded": [0, 10, 16],
        }
    )
    metrics = pd.DataFrame(
        {
            "model": ["m1", "m1", "silent"],
            "modality": ["text", "audio", "text"],
            "n_items": [24, 24, 24],
            "n_answered": [20, 24, 0],
            "rater_type": ["model"] * 3,
        }
    )
    return {
        "funnel": lambda stem: funnel_figure(funnel, stem),
        "coverage": lambda stem: coverage_figure(metrics, stem),
    }


def _social_inputs():
    from omnisocial.duplexeval.figures import streaming_figure
    from omnisocial.socialomni.figures import profile_figure, rank_scatter, timing_figure

    profile = pd.DataFrame(
        {
            "model": [f"model-{i}" for i in range(6)],
            "who_accuracy": np.linspace(0.3, 0.8, 6),
            "when_accuracy": np.linspace(0.4, 0.9, 6),
            "when_on_time": np.linspace(0.1, 0.5, 6),
            "how_mean": np.linspace(20, 60, 6),
            "perception_rank": np.arange(1.0, 7.0),
            "generation_rank": np.arange(6.0, 0.0, -1),
        }
    )
    timing = pd.DataFrame(
        {
            "model": ["m1"] * 4,
            "offset": [0.5, 1.5, np.nan, -0.5],
            "label": ["Perfect", "Delayed", "NoResponse", "Interrupted"],
        }
    )
    splits = [
        "RTD_OCR",
        "RTD_counting",
        "RTD_fine_grained_movement",
        "PR_event_reminder",
        "PR_post_event_reminder",
        "all",
    ]
    streaming = pd.DataFrame(
        {
            "model": ["m1"] * 6 + ["m2"] * 6,
            "split": splits * 2,
            "temporal_100": [60.0, 70, 80, np.nan, np.nan, 70] * 2,
            "content_100": [30.0, 40, 50, np.nan, np.nan, 40] * 2,
            "reminder_100": [np.nan, np.nan, np.nan, 100.0, 50, 75] * 2,
        }
    )
    return {
        "profile": lambda stem: profile_figure(profile, stem),
        "timing": lambda stem: timing_figure(timing, stem),
        "rank_scatter": lambda stem: rank_scatter(profile, stem),
        "streaming": lambda stem: streaming_figure(streaming, stem),
    }


class _Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture(scope="module")
def every_family(inputs, tmp_path_factory):
    """Every figure family drawn once, for the checks below: name -> its PDF, and the
    warnings `omnisocial.figures.style` logged while drawing them."""
    families = {**inputs, **_overview_inputs(), **_social_inputs(), **_diagnostic_inputs()}
    folder = tmp_path_factory.mktemp("every_family")
    handler, logger = _Warnings(), logging.getLogger("omnisocial.figures.style")
    logger.addHandler(handler)
    try:
        pdfs = {name: draw(folder / name)[1] for name, draw in families.items()}
    finally:
        logger.removeHandler(handler)
    return pdfs, handler.messages


@pytest.mark.heavy  # 12 CPU-s
def test_every_figure_fits_a_journal_page(every_family):
    """Every figure family, as saved: at most 7.2 in wide and no text under 7 pt at that size."""
    from printsize import pdf_print_size

    problems = []
    for name, pdf in every_family[0].items():
        width, _, sizes = pdf_print_size(pdf)
        assert sizes, f"{name}: no text found in the PDF"
        if width > style.MAX_WIDTH_IN + 1e-3:
            problems.append(f"{name}: {width:.2f} in wide")
        if min(sizes) < style.MIN_FONT_PT:
            problems.append(f"{name}: text at {min(sizes)} pt")
    assert not problems, problems


def test_a_model_without_answers_is_shown_not_dropped(tmp_path):
    metrics = pd.DataFrame(
        {
            "model": ["m1", "silent"],
            "modality": ["text", "text"],
            "n_items": [24, 24],
            "n_answered": [20, 0],
            "accuracy": [0.7, np.nan],
            "ci_low": [0.5, np.nan],
            "ci_high": [0.85, np.nan],
            "rater_type": ["model", "model"],
        }
    )
    raters = pd.DataFrame({"modality": ["text"] * 3, "accuracy": [0.5, 0.6, 0.7]})
    figures.accuracy_figure(raters, metrics, tmp_path / "acc")
    # the legend names both models with their coverage
    from omnisocial.familiarity.figures.accuracy import _coverage_labels

    assert _coverage_labels(metrics) == {"m1": "m1 (20/24 answered)", "silent": "silent (0/24 answered)"}


def test_duplicate_models_are_drawn_once():
    metrics = pd.DataFrame(
        {
            "model": ["baseline_behavioural", "behavioural", "chance"],
            "modality": ["audio"] * 3,
            "n_items": [24] * 3,
            "n_answered": [24] * 3,
            "accuracy": [0.9, 0.9, 0.5],
            "d_prime": [2.0, 2.0, 0.0],
            "criterion": [0.0, 0.0, 0.1],
            "rater_type": ["model"] * 3,
        }
    )
    shown = figures.shown_models(metrics, "v1")
    assert sorted(shown["model"]) == ["baseline_behavioural = behavioural", "chance"]


# --- diagnostics (issue 13): confusion, design cells, prompt variants, person-item map -----


def _diagnostic_tables():
    design = make_design(2)  # 16 dyads in 8 cells
    truth = dict(zip(design["dyad_id"], design["relationship"], strict=True))
    rng = np.random.default_rng(4)
    predictions = pd.DataFrame(
        [
            {
                "model": model,
                "modality": modality,
                "item_id": dyad,
                "truth": label,
                "label": "" if k % 7 == 0 else (label if rng.random() < skill else "stranger"),
                "confidence": np.nan,
            }
            for model, skill in (("m@v1", 0.8), ("m@v2", 0.6), ("alias@v1", 0.8), ("base", 0.5))
            for modality in ("text", "audio")
            for k, (dyad, label) in enumerate(truth.items())
        ]
    )
    # alias@v1 gives m@v1's answers: the cell figure must not show both
    same = predictions["model"] == "m@v1"
    predictions.loc[predictions["model"] == "alias@v1", "label"] = predictions.loc[same, "label"].to_numpy()
    trials = pd.DataFrame(
        [
            {
                "rater_id": f"R{r}",
                "dyad_id": dyad,
                "modality": modality,
                "response": "familiar" if (r + k) % 3 else "stranger",
                "source": SIMULATED_LABEL,
            }
            for r in range(4)
            for modality in ("text", "audio", "video")
            for k, dyad in enumerate(truth)
        ]
    )
    trials["correct"] = trials["response"] == trials["dyad_id"].map(truth)
    sensitivity = pd.DataFrame(
        {
            "name": ["m", "m"],
            "modality": ["text", "audio"],
            "variant_a": ["v1", "v1"],
            "variant_b": ["v2", "v2"],
            "accuracy_a": [0.8, 0.75],
            "accuracy_b": [0.6, 0.7],
            "mcnemar_p": [0.03, 0.8],
        }
    )
    rasch = pd.DataFrame(
        {
            "modality": ["text", "audio"] * 8,
            "rater_type": ["human"] * 8 + ["model"] * 8,
            "dyad_id": [f"D{i:03d}" for i in range(16)],
            "truth": ["familiar", "stranger"] * 8,
            "difficulty": np.linspace(-2, 2, 16),
            "source": SIMULATED_LABEL,
        }
    )
    confusion = pd.DataFrame(
        {
            "model": ["m"] * 4,
            "modality": ["video"] * 4,
            "truth": list("ABCD"),
            "A": [3, 0, 1, 0],
            "B": [0, 2, 0, 1],
            "C": [1, 0, 2, 0],
            "D": [0, 1, 0, 3],
            "unparsed": [0, 1, 0, 0],
        }
    )
    return design, predictions, trials, sensitivity, rasch, confusion


def _diagnostic_inputs():
    from omnisocial.familiarity.figures import diagnostics
    from omnisocial.socialomni.figures import who_confusion_figure

    design, predictions, trials, sensitivity, rasch, confusion = _diagnostic_tables()
    dyads, fits = _rasch_dyads_and_fits()
    return {
        "confusion": lambda stem: diagnostics.confusion_figure(predictions, stem, variant="v1"),
        "cell_accuracy": lambda stem: diagnostics.cell_accuracy_figure(trials, design, predictions, stem),
        "prompt_sensitivity": lambda stem: diagnostics.prompt_sensitivity_figure(sensitivity, stem),
        "person_item_map": lambda stem: diagnostics.person_item_map(rasch, stem),
        "person_item_map_persons": lambda stem: diagnostics.person_item_map(
            dyads, stem, persons=_map_persons(), fits=fits
        ),
        "who_confusion": lambda stem: who_confusion_figure(confusion, stem),
    }


def test_confusion_table_counts_no_answers():
    from omnisocial.familiarity.figures.diagnostics import at_variant, confusion_table

    _, predictions, *_ = _diagnostic_tables()
    shown = at_variant(predictions, "v1")
    assert set(shown["model"]) == {"m@v1", "alias@v1", "base"}
    table = confusion_table(shown)
    own = table[(table["model"] == "m@v1") & (table["modality"] == "text")]
    assert own["n"].sum() == 16
    assert own.loc[own["label"] == "no answer", "n"].sum() == 3  # items 0, 7, 14


def test_cell_table_humans_and_best_distinct_models():
    from omnisocial.familiarity.figures.diagnostics import cell_table

    design, predictions, trials, *_ = _diagnostic_tables()
    table = cell_table(trials, design, predictions, n_models=2)
    assert "humans" in set(table["who"])
    models = set(table["who"]) - {"humans"}
    assert len(models) == 2 and not {"m@v1", "alias@v1"} <= models  # an alias is not a second model
    assert table["cell"].nunique() == 8
    human = table[table["who"] == "humans"]
    assert human["n"].sum() == len(trials)
    assert ((table["ci_low"] <= table["accuracy"]) & (table["accuracy"] <= table["ci_high"])).all()


@pytest.mark.parametrize(
    "name", ["confusion", "cell_accuracy", "prompt_sensitivity", "person_item_map", "who_confusion"]
)
def test_diagnostic_figures_are_reproducible(tmp_path, name):
    draw = _diagnostic_inputs()[name]
    png, pdf = draw(tmp_path / "a")
    png_b, _ = draw(tmp_path / "b")
    assert png.read_bytes()[:8] == PNG_MAGIC and pdf.read_bytes()[:4] == b"%PDF"
    assert png.read_bytes() == png_b.read_bytes()


def test_diagnostic_figures_draw_empty_tables(tmp_path):
    from omnisocial.familiarity.figures import diagnostics
    from omnisocial.socialomni.figures import who_confusion_figure

    empty = pd.DataFrame(columns=["model", "modality", "item_id", "truth", "label"])
    diagnostics.confusion_figure(empty, tmp_path / "c")
    diagnostics.prompt_sensitivity_figure(pd.DataFrame(columns=["name", "modality"]), tmp_path / "p")
    diagnostics.person_item_map(
        pd.DataFrame(columns=["modality", "rater_type", "difficulty"]), tmp_path / "m"
    )
    who_confusion_figure(pd.DataFrame(columns=["model", "modality", "truth", "A"]), tmp_path / "w")
    assert len(list(tmp_path.glob("*.png"))) == 4


# --- legend entries whose markers are hidden (issue 13) -----------------------------------------


def test_hidden_legend_entries_finds_markers_under_others():
    fig = style.Figure(figsize=(3, 2))
    style.FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot([0, 1], [0.5, 0.7], "o", label="under", markersize=5)
    ax.plot([0, 1], [0.5, 0.7], "s", label="over", markersize=5)  # same spots, drawn later
    ax.scatter([0.5], [0.2], s=25, label="alone")
    ax.errorbar([0.5], [0.2], yerr=0.05, fmt="o", markersize=3, label="small on top")  # visible: smaller
    ax.plot([0, 1], [0.1, 0.9], label="line")  # a bare line has no markers to hide
    assert style.hidden_legend_entries(fig) == ["under"]
    ax.lines[0].set_xdata([0.05, 1.05])  # dodged: visible
    assert style.hidden_legend_entries(fig) == []


@pytest.mark.heavy  # every figure family drawn (about 9 CPU-s, built by the first test)
def test_no_figure_hides_a_legend_entry(every_family):
    """Every figure family (models with tied results included) keeps each legend entry visible."""
    pdfs, warnings = every_family
    assert len(pdfs) > 10  # every family was drawn
    hidden = [message for message in warnings if "hidden under another" in message]
    assert not hidden, hidden


def test_tied_models_keep_their_legend_entries(tmp_path, tables, caplog):
    """Two models with identical results: each stays visible (dodged), on every model figure."""
    from omnisocial.socialomni.figures import profile_figure, rank_scatter

    twin = tables["metrics"][tables["metrics"]["model"] == "model-a"].assign(model="model-a-twin")
    metrics = pd.concat([tables["metrics"], twin], ignore_index=True)
    profile = pd.DataFrame(
        {
            "model": ["m1", "m2", "m3"],
            "who_accuracy": [0.6, 0.6, 0.4],
            "when_accuracy": [0.7, 0.7, 0.5],
            "when_on_time": [0.3, 0.3, 0.2],
            "how_mean": [40.0, 40.0, 30.0],
            "perception_rank": [1.5, 1.5, 3.0],
            "generation_rank": [1.5, 1.5, 3.0],
        }
    )
    draws = {
        "accuracy": lambda stem: figures.accuracy_figure(tables["rater_sdt"], metrics, stem, seed=3),
        "sdt": lambda stem: figures.sdt_figure(tables["rater_sdt"], metrics, stem),
        "profile": lambda stem: profile_figure(profile, stem),
        "rank_scatter": lambda stem: rank_scatter(profile, stem),
    }
    with caplog.at_level("WARNING", logger="omnisocial.figures.style"):
        for name, draw in draws.items():
            draw(tmp_path / name)
    hidden = [r.getMessage() for r in caplog.records if "hidden under another" in r.getMessage()]
    assert not hidden, hidden


def test_identical_models_merge_even_with_empty_bins():
    """Two names for the same predictions are one entry, also where their tables hold NaN
    (empty calibration bins) or differ below 1e-6 (a registry reply's rounded confidence)."""
    from omnisocial.familiarity.figures.duplicates import drop_duplicate_models

    rows = pd.DataFrame(
        {
            "model": ["behavioural", "behavioural", "baseline_behavioural", "baseline_behavioural"],
            "modality": ["audio"] * 4,
            "bin_low": [0.0, 0.5] * 2,
            "mean_confidence": [np.nan, 0.586447, np.nan, 0.58644656],
            "accuracy": [np.nan, 1.0, np.nan, 1.0],
        }
    )
    merged = drop_duplicate_models(rows, columns=("modality", "bin_low", "mean_confidence", "accuracy"))
    assert set(merged["model"]) == {"baseline_behavioural = behavioural"}
    assert len(merged) == 2


def test_confusion_counts_of_an_alias_are_merged():
    from omnisocial.familiarity.figures.diagnostics import confusion_table
    from omnisocial.familiarity.figures.duplicates import drop_duplicate_models

    predictions = _diagnostic_tables()[1]
    counts = drop_duplicate_models(confusion_table(predictions), columns=("modality", "truth", "label", "n"))
    assert "alias@v1 = m@v1" in set(counts["model"]) or "m@v1 = alias@v1" in set(counts["model"])
    assert not {"alias@v1", "m@v1"} & set(counts["model"])


def test_the_config_figure_settings_change_the_saved_figures(tmp_path):
    """figures.dpi, font_size, max_width_in and palette (issue 49), applied by every figure rule
    through style.configure; {} restores the defaults."""
    from PIL import Image

    def draw(stem):
        with style.styled():
            fig, axes = style.new_figure(panel_size=(9.0, 2.0), title="t")
            axes[0, 0].plot([0, 1], [0, 1], label="a legend entry")
            axes[0, 0].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
            size = style.RC["font.size"], style.RC["legend.fontsize"]
            colors = style.model_styles(["m1", "m2"])
            return style.save_figure(fig, tmp_path / stem), size, colors

    try:
        (png, _), size, colors = draw("default")
        default_px = Image.open(png).size
        style.configure({"dpi": 100, "font_size": 10.0, "max_width_in": 5.0, "palette": ["#000000"]})
        (png, _), bigger, recolored = draw("configured")
        width_px, _ = Image.open(png).size
        assert width_px <= 5.0 * 100 + 2 and default_px[0] > width_px
        assert bigger[0] == pytest.approx(10.0) and bigger[1] == pytest.approx(7.5 * 10.0 / 8.5)
        assert recolored == {"m1": ("#000000", "o"), "m2": ("#000000", "s")}
        assert colors["m1"][0] == "#1F77B4"
    finally:
        style.configure({})
    assert style.DPI == 200 and style.RC["font.size"] == 8.5 and style.MAX_WIDTH_IN == 7.2

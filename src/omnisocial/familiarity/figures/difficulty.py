"""Dyad difficulty: how dyads line up across modalities, and between humans and models.

Input is a long per-dyad table [dyad_id, modality, rater_type, <value>, truth?]: rater_type
"human" or "model", <value> a per-dyad score (default `accuracy`, the share of correct answers;
a Rasch difficulty from `stats.rasch` works the same way with `value="difficulty"`).
`dyad_accuracy` builds it from TRIALS and PREDICTIONS, `from_rasch` from `stats.rasch.fit_rasch`
item tables.

Top row: human values for every pair of modalities. Bottom row: humans against models, per
modality. Each panel gives Pearson r and the number of dyads; points are coloured by the true
class when a truth column is present (the published analysis controls for it: the partial r
lives in `stats.rasch`). Given the Rasch fits (rasch_fits: modality, rater_type, fitted,
r_hat_max, ess_bulk_min), a panel with a fit that did not converge (`convergence.rows_not_converged`)
draws hollow points and names that fit's axis in red; the caption counts such fits.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np
import pandas as pd

from omnisocial.familiarity.figures.convergence import NOT_CONVERGED, fits_note, unconverged_fits
from omnisocial.figures.style import (
    CLASS_COLORS,
    FLAG_COLOR,
    MAX_WIDTH_IN,
    chance_line,
    empty_panel,
    full_subtitle,
    gathered_legend,
    new_figure,
    ordered_modalities,
    save_figure,
    styled,
)
from omnisocial.stats.sdt import MAJORITY_MODEL, NON_ANSWER, trials_with_truth, truth_map
from omnisocial.tables import PREDICTIONS

# scipy is imported in the functions that use it: scipy.stats costs ~1.3 s CPU per job start


def dyad_accuracy(trials: pd.DataFrame | None, predictions: pd.DataFrame | None, truth) -> pd.DataFrame:
    """Per-dyad accuracy [dyad_id, modality, rater_type, accuracy, n, truth].

    Humans: the share of correct trials per (modality, dyad). Models: the share of correct
    answers over every model's answered prediction for the dyad (non-answers and the
    `human_majority` pseudo-model left out).
    """
    mapping = truth_map(truth)
    parts = []
    if trials is not None and len(trials):
        frame = trials_with_truth(trials, mapping)
        human = frame.groupby(["modality", "dyad_id"], sort=True)["correct"].agg(["mean", "size"])
        parts.append(human.reset_index().assign(rater_type="human"))
    if predictions is not None and len(predictions):
        frame = PREDICTIONS.validate(predictions)
        frame = frame[(frame["label"] != NON_ANSWER) & (frame["model"] != MAJORITY_MODEL)]
        frame = frame.assign(correct=frame["label"] == frame["truth"], dyad_id=frame["item_id"])
        model = frame.groupby(["modality", "dyad_id"], sort=True)["correct"].agg(["mean", "size"])
        parts.append(model.reset_index().assign(rater_type="model"))
    columns = ["dyad_id", "modality", "rater_type", "accuracy", "n", "truth"]
    if not parts:
        return pd.DataFrame(columns=columns)
    out = pd.concat(parts, ignore_index=True).rename(columns={"mean": "accuracy", "size": "n"})
    out["truth"] = out["dyad_id"].map(mapping)
    return out[columns].sort_values(["rater_type", "modality", "dyad_id"], ignore_index=True)


def from_rasch(items: Mapping[tuple[str, str], pd.DataFrame], truth=None) -> pd.DataFrame:
    """`stats.rasch.fit_rasch` item tables, keyed by (modality, rater_type), as one long table.

    Returns [dyad_id, modality, rater_type, difficulty, truth] (truth empty without a truth
    mapping), ready for `difficulty_figure(..., value="difficulty")`.
    """
    mapping = truth_map(truth) if truth is not None else {}
    parts = [
        pd.DataFrame(
            {
                "dyad_id": table["item"].astype(str).to_numpy(),
                "modality": modality,
                "rater_type": rater_type,
                "difficulty": table["difficulty"].astype(float).to_numpy(),
            }
        )
        for (modality, rater_type), table in sorted(items.items())
    ]
    columns = ["dyad_id", "modality", "rater_type", "difficulty", "truth"]
    if not parts:
        return pd.DataFrame(columns=columns)
    out = pd.concat(parts, ignore_index=True)
    out["truth"] = out["dyad_id"].map(mapping).fillna("") if mapping else ""
    return out[columns]


def _axis_label(ax, axis: str, kind: str, modality: str, bad: set) -> None:
    flagged = (kind, modality) in bad
    text = f"{kind}s, {modality}" + ("\n(not converged)" if flagged else "")
    label = (ax.set_xlabel if axis == "x" else ax.set_ylabel)(text)
    if flagged:
        label.set_color(FLAG_COLOR)


def _scatter(
    ax,
    x: pd.Series,
    y: pd.Series,
    truth: pd.Series | None,
    value: str,
    labelled: set,
    hollow: bool = False,
    empty: str = "no dyads in common",
) -> None:
    from scipy import stats

    joined = pd.concat({"x": x, "y": y}, axis=1, join="inner").dropna()
    if len(joined) == 0:
        empty_panel(ax, empty)
        return
    if value == "accuracy":
        chance_line(ax, "h")
        chance_line(ax, "v")
    lo = float(min(joined["x"].min(), joined["y"].min()))
    hi = float(max(joined["x"].max(), joined["y"].max()))
    pad = 0.05 * (hi - lo) if hi > lo else 0.1
    ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], color="#BBBBBB", linewidth=0.8, zorder=0)
    classes = truth.reindex(joined.index) if truth is not None else pd.Series("", index=joined.index)
    for label in sorted(classes.unique()):
        own = joined[classes == label]
        color = CLASS_COLORS.get(label, "#555555")
        name = label if label and label not in labelled else None
        labelled.add(label)
        if hollow:  # the legend shows the class filled: an empty filled proxy carries its label
            ax.scatter([], [], s=12, color=color, alpha=0.7, lw=0, label=name)
            ax.scatter(own["x"], own["y"], s=12, facecolors="none", edgecolors=color, lw=0.8)
        else:
            ax.scatter(own["x"], own["y"], s=12, color=color, alpha=0.7, lw=0, label=name)
    text = f"n = {len(joined)}"
    if len(joined) >= 3 and np.ptp(joined["x"]) > 0 and np.ptp(joined["y"]) > 0:
        text = f"r = {stats.pearsonr(joined['x'], joined['y']).statistic:.2f}, " + text
    ax.text(
        0.03,
        0.97,
        text,
        transform=ax.transAxes,
        ha="left",
        va="top",
        fontsize=7.5,
        bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1.5},
    )
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_aspect("equal", adjustable="box")


def difficulty_figure(
    dyads: pd.DataFrame,
    path_stem,
    *,
    fits: pd.DataFrame | None = None,
    value: str = "accuracy",
    value_label: str | None = None,
    title: str = "Dyad difficulty across modalities and rater types",
    subtitle: str = "",
    caption: str = "",
    simulated: bool | None = None,
):
    """Draw and save; returns [png, pdf]. dyads: [dyad_id, modality, rater_type, value, truth?];
    fits (optional): the Rasch fits behind a difficulty `value`, for the convergence marks."""
    label = value_label or f"per-dyad {value}"
    modalities = ordered_modalities(dyads["modality"])
    table = dyads.pivot_table(
        index="dyad_id", columns=["rater_type", "modality"], values=value, aggfunc="first"
    )
    truth = (
        dyads.drop_duplicates("dyad_id").set_index("dyad_id")["truth"] if "truth" in dyads.columns else None
    )
    bad = unconverged_fits(fits)
    drawn = set(zip(dyads["rater_type"], dyads["modality"], strict=True))
    pairs = list(itertools.combinations(modalities, 2))
    ncols = max(len(pairs), len(modalities), 1)
    # square panels as wide as the page allows (the legend goes under them)
    side = min(2.4, (MAX_WIDTH_IN - 0.2 - 0.75 - 0.8 * (ncols - 1)) / ncols)
    with styled():
        fig, axes = new_figure(
            2,
            ncols,
            panel_size=(side, side),
            title=title,
            subtitle=full_subtitle(
                " | ".join(p for p in (f"both axes: {label}", subtitle) if p), simulated, dyads
            ),
            caption=" ".join(p for p in (caption, fits_note(fits, drawn, "Hollow points, red axis")) if p),
            wspace_in=0.8,
            hspace_in=1.0,
            bottom_in=1.3,
            max_width_in=MAX_WIDTH_IN - 0.2,
        )
        labelled: set = set()

        hollow = []

        def panel(ax, x_key, y_key, title):
            ax.set_visible(True)
            x, y = (table[key] if key in table.columns else pd.Series(dtype=float) for key in (x_key, y_key))
            hollow.append(bool({x_key, y_key} & bad))
            # a side without rows is a kind of rater the study lacks, not dyads failing to meet
            absent = [k[0] for k in (x_key, y_key) if k not in table.columns]
            lacking = {"human": "no human ratings", "model": "no model predictions"}
            empty = " | ".join(lacking[k] for k in dict.fromkeys(absent)) or "no dyads in common"
            _scatter(ax, x, y, truth, value, labelled, hollow=hollow[-1], empty=empty)
            _axis_label(ax, "x", *x_key, bad)
            _axis_label(ax, "y", *y_key, bad)
            ax.set_title(title)

        for ax in axes.ravel():
            ax.set_visible(False)
        # across modalities: humans; the models where no human rated (a models-only study)
        across = "human" if "human" in set(dyads["rater_type"]) else "model"
        for ax, (first, second) in zip(axes[0], pairs, strict=False):
            panel(ax, (across, first), (across, second), f"{first} vs {second}")
        for ax, modality in zip(axes[1], modalities, strict=False):
            panel(ax, ("human", modality), ("model", modality), f"humans vs models: {modality}")
        if any(hollow):
            axes[1, 0].scatter(
                [], [], s=12, facecolors="none", edgecolors="#555555", lw=0.8, label=NOT_CONVERGED
            )
        gathered_legend(axes, axes[1, 0], loc="upper left", bbox_to_anchor=(0.0, -0.5), ncol=3)
        return save_figure(fig, path_stem)

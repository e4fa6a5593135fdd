"""Accuracy by modality: individual raters, the crowd's majority vote and the models.

Per modality, left to right: every human rater's accuracy as a jittered point over a violin of
their distribution (with the raters' median as a bar), the majority vote of the crowd, then each
model. Crowd and models carry their 95% Wilson interval (the METRICS columns ci_low/ci_high,
from `stats.sdt.score_predictions`). The jitter is horizontal only and drawn from
`numpy.random.default_rng(seed)` in modality order, so the plot is the same for the same seed.
The dotted line is chance (0.5).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from omnisocial.figures.style import (
    CROWD_COLOR,
    HUMAN_COLOR,
    chance_line,
    full_subtitle,
    model_styles,
    new_figure,
    ordered_modalities,
    save_figure,
    styled,
)
from omnisocial.stats.sdt import MAJORITY_MODEL

HUMAN_X, CROWD_X, MODELS_X = -0.24, -0.02, (0.1, 0.4)


def accuracy_figure(
    rater_accuracy: pd.DataFrame,
    metrics: pd.DataFrame | None,
    path_stem,
    *,
    seed: int = 0,
    crowd_model: str = MAJORITY_MODEL,
    title: str = "Familiarity judgements: accuracy by modality",
    subtitle: str = "",
    caption: str = "",
    simulated: bool | None = None,
):
    """Draw and save the figure; returns [png, pdf] paths.

    rater_accuracy: one row per (rater, modality) with columns modality, accuracy (e.g.
    `stats.crowds.per_rater_sdt`). metrics: METRICS rows (model, modality, accuracy, ci_low,
    ci_high) for the crowd (model == crowd_model) and the models; None for humans only.
    """
    metrics = metrics if metrics is not None else pd.DataFrame(columns=["model", "modality", "accuracy"])
    raters = rater_accuracy.dropna(subset=["accuracy"])
    modalities = ordered_modalities(list(raters["modality"]) + list(metrics["modality"]))
    crowd = metrics[metrics["model"] == crowd_model]
    models = metrics[(metrics["model"] != crowd_model) & metrics["accuracy"].notna()]
    styles = model_styles(models["model"])
    rng = np.random.default_rng(seed)
    with styled():
        fig, axes = new_figure(
            panel_size=(max(3.6, 1.9 * len(modalities)), 3.0),
            title=title,
            subtitle=full_subtitle(subtitle, simulated, rater_accuracy, metrics),
            caption=caption,
            right_in=1.9,
        )
        ax = axes[0, 0]
        chance_line(ax)
        values = [0.5]
        labelled = set()
        for i, modality in enumerate(modalities):
            own = raters.loc[raters["modality"] == modality, "accuracy"].to_numpy(float)
            values.extend(own)
            _draw_raters(ax, i + HUMAN_X, own, rng, labelled)
            for row in crowd[crowd["modality"] == modality].itertuples(index=False):
                label = "crowd majority vote" if "crowd" not in labelled else None
                labelled.add("crowd")
                _point(ax, i + CROWD_X, row, CROWD_COLOR, "*", 9, label)
                values.extend(_ends(row))
            own_models = models[models["modality"] == modality].sort_values("model")
            values.extend(_draw_models(ax, i, own_models, styles, _coverage_labels(models), labelled))
        finite = np.asarray([v for v in values if np.isfinite(v)] or [0.5])
        # a little room past 0 and 1: violins and intervals touching them are not clipped
        ax.set_ylim(max(-0.04, finite.min() - 0.06), min(1.04, finite.max() + 0.06))
        ax.set_xlim(-0.55, len(modalities) - 0.45)
        ax.set_xticks(np.arange(len(modalities)) + (HUMAN_X + MODELS_X[1]) / 2, modalities)
        ax.set_ylabel("accuracy (answered trials)")
        ax.legend(
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            borderaxespad=0.0,
            title="95% Wilson intervals\non crowd and models",
            title_fontsize=7,
        )
        return save_figure(fig, path_stem)


def _draw_raters(ax, x: float, own: np.ndarray, rng, labelled: set) -> None:
    """One modality's individual raters at `x`: a violin (when they differ), the jittered
    points, their median and their count."""
    if len(own) >= 2 and np.ptp(own) > 0:
        body = ax.violinplot(own, positions=[x], widths=0.3, showextrema=False)
        for patch in body["bodies"]:
            patch.set_facecolor(HUMAN_COLOR)
            patch.set_alpha(0.22)
            patch.set_edgecolor("none")
    if not len(own):
        return
    jitter = rng.uniform(-0.07, 0.07, len(own))
    label = "individual raters" if "raters" not in labelled else None
    labelled.add("raters")
    ax.scatter(x + jitter, own, s=7, color=HUMAN_COLOR, alpha=0.55, lw=0, label=label)
    ax.hlines(np.median(own), x - 0.12, x + 0.12, color="black", lw=1.6)
    ax.text(
        x,
        0.01,
        f"n={len(own)}",
        transform=ax.get_xaxis_transform(),
        ha="center",
        va="bottom",
        fontsize=7,
        color="#555555",
    )


def _draw_models(ax, i: int, own_models: pd.DataFrame, styles: dict, coverage: dict, labelled: set) -> list:
    """One modality's models, each in its own slot right of the crowd, with its interval; a
    model without answers is shown as such, never dropped. Returns the values drawn."""
    slots = np.linspace(*MODELS_X, len(styles)) if len(styles) > 1 else [np.mean(MODELS_X)] * len(styles)
    slot_of = dict(zip(sorted(styles), slots, strict=True))
    values = []
    for row in own_models.itertuples(index=False):
        color, marker = styles[row.model]
        label = coverage[row.model] if row.model not in labelled else None
        labelled.add(row.model)
        if not np.isfinite(float(row.accuracy)):
            ax.text(
                i + slot_of[row.model],
                0.02,
                "no answers",
                rotation=90,
                ha="center",
                va="bottom",
                fontsize=7,
                color=color,
                transform=ax.get_xaxis_transform(),
            )
            ax.plot([], [], marker=marker, color=color, linestyle="none", label=label)
            continue
        _point(ax, i + slot_of[row.model], row, color, marker, 5, label)
        values.extend(_ends(row))
    return values


def _coverage_labels(models: pd.DataFrame) -> dict[str, str]:
    """model -> 'model (answered/asked)' over its modalities (coverage on every model entry)."""
    labels = {}
    for name, rows in models.groupby("model", sort=True):
        if {"n_answered", "n_items"} <= set(rows.columns):
            answered, asked = int(rows["n_answered"].fillna(0).sum()), int(rows["n_items"].fillna(0).sum())
            labels[name] = f"{name} ({answered}/{asked} answered)"
        else:
            labels[name] = str(name)
    return labels


def _ends(row) -> list[float]:
    return [float(getattr(row, name, np.nan)) for name in ("accuracy", "ci_low", "ci_high")]


def _point(ax, x, row, color, marker, size, label) -> None:
    accuracy, low, high = _ends(row)
    if np.isfinite(low) and np.isfinite(high):
        ax.errorbar(
            x,
            accuracy,
            yerr=[[accuracy - low], [high - accuracy]],
            fmt="none",
            ecolor=color,
            elinewidth=1.1,
            capsize=2,
        )
    ax.plot(
        [x],
        [accuracy],
        marker=marker,
        color=color,
        markersize=size,
        linestyle="none",
        markeredgecolor="white",
        markeredgewidth=0.5,
        label=label,
    )

"""Calibration of stated confidence: reliability diagrams with ECE and AUROC per panel.

`reliability_table` runs `stats.calibration.calibration` and `auroc_from_confidence` per
(model, modality) on answered predictions with a confidence; `calibration_figure` draws one
panel per modality: accuracy against mean stated confidence per bin (marker area grows with the
bin's count; empty bins are skipped) and the diagonal of perfect calibration. One legend names
the models; under each panel, one line per model (its marker, in its colour) gives ECE, AUROC
and n. Models with identical reliability rows (the same predictions under two names) are drawn
once as `a = b`. Models without any confidence are listed in the panel.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from omnisocial.familiarity.figures.duplicates import drop_duplicate_models
from omnisocial.figures.style import (
    MARKER_GLYPHS,
    full_subtitle,
    gathered_legend,
    model_styles,
    new_figure,
    ordered_modalities,
    save_figure,
    shifted,
    styled,
    tie_offsets,
)
from omnisocial.stats.calibration import auroc_from_confidence, calibration
from omnisocial.stats.sdt import NON_ANSWER
from omnisocial.tables import PREDICTIONS

RELIABILITY_COLUMNS = [
    "model",
    "modality",
    "bin_low",
    "bin_high",
    "n",
    "mean_confidence",
    "accuracy",
    "ece",
    "auroc",
    "n_items",
]
PANEL_IN = 2.0
SCORES_TOP = -0.3  # axes fraction: the first score line, just under the axis label
SCORE_LINE = 0.085  # axes fraction per score line (12 pt at PANEL_IN)
# reliability rows that make two models the same model on the figure
SAME_RELIABILITY = ("modality", "bin_low", "n", "mean_confidence", "accuracy", "ece", "auroc", "n_items")


def reliability_table(predictions: pd.DataFrame, n_bins: int = 10) -> pd.DataFrame:
    """Reliability bins per (model, modality) with that group's ECE, AUROC and item count.

    n_items counts the answered predictions with a confidence; a group with none keeps one row
    with n_items = 0 and NaN elsewhere, so the figure can say which models gave no confidence.
    """
    frame = PREDICTIONS.validate(predictions)
    frame = frame[frame["label"] != NON_ANSWER]
    parts = []
    for (model, modality), group in frame.groupby(["model", "modality"], sort=True):
        result = calibration(group["confidence"], group["label"] == group["truth"], n_bins=n_bins)
        if result["n"] == 0:
            parts.append(pd.DataFrame([{"model": model, "modality": modality, "n_items": 0}]))
            continue
        bins = result["bins"].assign(
            model=model,
            modality=modality,
            ece=result["ece"],
            auroc=auroc_from_confidence(group["label"], group["confidence"], group["truth"]),
            n_items=result["n"],
        )
        parts.append(bins)
    if not parts:
        return pd.DataFrame(columns=RELIABILITY_COLUMNS)
    out = pd.concat(parts, ignore_index=True).reindex(columns=RELIABILITY_COLUMNS)
    return out.astype({"n_items": "int64"})


def _fmt(value: float) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.2f}"


def calibration_figure(
    reliability: pd.DataFrame,
    path_stem,
    *,
    title: str = "Calibration of model confidence",
    subtitle: str = "",
    caption: str = "",
    simulated: bool | None = None,
):
    """Draw and save; returns [png, pdf]. reliability: `reliability_table` output."""
    reliability = drop_duplicate_models(reliability, SAME_RELIABILITY)
    modalities = ordered_modalities(reliability["modality"])
    styles = model_styles(reliability["model"])
    n_models = reliability["model"].nunique()
    with styled():
        fig, axes = new_figure(
            1,
            max(len(modalities), 1),
            panel_size=(PANEL_IN, PANEL_IN),
            sharey=True,
            title=title,
            subtitle=full_subtitle(subtitle, simulated, reliability),
            caption=caption,
            # under the panels: the score lines of each panel, then the legend of model names
            bottom_in=0.3 + (SCORE_LINE * PANEL_IN + 0.12) * n_models,
        )
        most_lines = 0
        for ax, modality in zip(axes[0], modalities, strict=False):
            ax.plot([0, 1], [0, 1], color="#AAAAAA", linewidth=0.9, linestyle="--", zorder=0)
            own = reliability[reliability["modality"] == modality]
            silent, drawn = [], []
            for model, group in own.groupby("model", sort=True):
                if int(group["n_items"].iloc[0]) == 0:
                    silent.append(model)
                else:
                    drawn.append((model, group[group["n"] > 0].sort_values("bin_low"), group.iloc[0]))
            # models whose curves coincide (e.g. two chance baselines) sit side by side
            keys = [
                tuple(filled[["mean_confidence", "accuracy"]].round(6).itertuples(index=False))
                for _, filled, _ in drawn
            ]
            scores = []
            for (model, filled, first), dx in zip(drawn, tie_offsets(keys), strict=True):
                color, marker = styles[model]
                moved = shifted(ax, dx)
                ax.plot(
                    filled["mean_confidence"], filled["accuracy"], color=color, linewidth=1.0, transform=moved
                )
                ax.scatter(
                    filled["mean_confidence"],
                    filled["accuracy"],
                    s=8 + 40 * np.sqrt(filled["n"] / first["n_items"]),
                    color=color,
                    marker=marker,
                    edgecolor="white",
                    linewidth=0.4,
                    zorder=3,
                    label=model,
                    transform=moved,
                )
                glyph = MARKER_GLYPHS.get(marker, "\u25cf")
                ece, auroc, n = _fmt(first["ece"]), _fmt(first["auroc"]), int(first["n_items"])
                scores.append((f"{glyph} ECE {ece}, AUROC {auroc} (n={n})", color))
            ax.set_xlim(0, 1.02)
            ax.set_ylim(0, 1.02)
            ax.set_aspect("equal", adjustable="box")
            ax.set_title(modality)
            ax.set_xlabel("stated confidence")
            for i, (text, color) in enumerate(scores):  # one line per model under the axis label
                y = SCORES_TOP - SCORE_LINE * i
                ax.text(0.0, y, text, transform=ax.transAxes, color=color, fontsize=7, va="top")
            most_lines = max(most_lines, len(scores))
            if silent:
                ax.text(
                    0.02,
                    0.98,
                    "no confidence: " + ", ".join(silent),
                    transform=ax.transAxes,
                    ha="left",
                    va="top",
                    fontsize=7,
                    color="#666666",
                    wrap=True,
                )
        below = SCORES_TOP - SCORE_LINE * most_lines - 0.04
        legend = gathered_legend(axes, axes[0, 0], loc="upper left", bbox_to_anchor=(0.0, below))
        for handle in legend.legend_handles if legend else ():
            handle.set_sizes([30])  # the key shows the model, not one bin's count
        axes[0, 0].set_ylabel("accuracy in bin")
        return save_figure(fig, path_stem)

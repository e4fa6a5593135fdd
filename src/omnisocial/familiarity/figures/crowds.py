"""Crowd curves: majority-vote accuracy against crowd size k, one panel per modality.

The line is the resampling mean and the band its 2.5-97.5 percentile range over resamples
(`stats.crowds.crowd_curve`: accuracy_mean, resample_low, resample_high); the thin dotted line is the exact
hypergeometric expectation (accuracy_expected). Optionally the best model per modality (highest
METRICS accuracy) is drawn as a dashed horizontal line in the modality's colour, named in a
legend under its panel. The modalities' bands overlap, so each has its own panel, on a shared
accuracy axis.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from omnisocial.figures.style import (
    MAX_WIDTH_IN,
    MODALITY_COLORS,
    chance_line,
    empty_panel,
    full_subtitle,
    new_figure,
    ordered_modalities,
    save_figure,
    styled,
)
from omnisocial.stats.sdt import MAJORITY_MODEL

KEY = "Line: resampling mean; band: 95% of resamples; dotted: exact expectation"


def best_model(models: pd.DataFrame | None, modality: str, crowd_model: str = MAJORITY_MODEL):
    """The METRICS row of the modality's most accurate model (ties by name), or None."""
    if models is None or models.empty:
        return None
    candidates = models[(models["modality"] == modality) & (models["model"] != crowd_model)]
    candidates = candidates.dropna(subset=["accuracy"]).sort_values(
        ["accuracy", "model"], ascending=[False, True]
    )
    return candidates.iloc[0] if len(candidates) else None


def _crowd_panel(ax, own: pd.DataFrame, color: str, best) -> None:
    chance_line(ax)
    ax.fill_between(own["k"], own["resample_low"], own["resample_high"], color=color, alpha=0.2, lw=0)
    ax.plot(own["k"], own["accuracy_mean"], color=color, marker="o", markersize=3)
    if "accuracy_expected" in own.columns:
        ax.plot(own["k"], own["accuracy_expected"], color=color, linestyle=":", linewidth=0.9)
    if best is not None:
        name = textwrap.fill(f"best model: {best['model']} ({best['accuracy']:.2f})", 28)
        ax.axhline(best["accuracy"], color=color, linestyle="--", linewidth=1.0, label=name)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), fontsize=7)


def crowd_figure(
    curve: pd.DataFrame,
    path_stem,
    *,
    models: pd.DataFrame | None = None,
    crowd_model: str = MAJORITY_MODEL,
    title: str = "Wisdom of the crowd: majority vote by crowd size",
    subtitle: str = "",
    caption: str = "",
    simulated: bool | None = None,
):
    """Draw and save; returns [png, pdf]. curve: `crowd_curve` output; models: METRICS or None."""
    modalities = ordered_modalities(curve["modality"])
    ks = np.sort(curve["k"].unique())
    has_models = models is not None and len(models) > 0
    key = KEY + ("; dashed: best model." if has_models else ".")
    with styled():
        fig, axes = new_figure(
            1,
            max(len(modalities), 1),
            panel_size=(2.1, 2.4),
            title=title,
            subtitle=full_subtitle(subtitle, simulated, curve, models),
            caption=" ".join(part for part in (key, caption) if part),
            sharey=True,
            wspace_in=0.25,
            bottom_in=0.8 + (0.3 if has_models else 0.0),
            max_width_in=MAX_WIDTH_IN - 0.2,
        )
        if not modalities:
            empty_panel(axes[0, 0], "no crowd curve")
        for ax, modality in zip(axes[0], modalities, strict=False):  # no modality: one empty panel
            own = curve[curve["modality"] == modality].dropna(subset=["accuracy_mean"]).sort_values("k")
            color = MODALITY_COLORS.get(modality, "#555555")
            ax.set_title(modality, color=color)
            if own.empty:  # not empty_panel: its tick removal would reach the shared y axis
                ax.text(0.5, 0.5, "no crowd curve", ha="center", transform=ax.transAxes, color="#666666")
                continue
            _crowd_panel(ax, own, color, best_model(models, modality, crowd_model))
            if len(ks) <= 10:
                ax.set_xticks(ks)
            ax.set_xlabel("crowd size k (raters)")
        axes[0, 0].set_ylabel("majority-vote accuracy")
        return save_figure(fig, path_stem)

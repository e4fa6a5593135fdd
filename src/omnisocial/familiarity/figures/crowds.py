"""Crowd curves: majority-vote accuracy against crowd size k, one line per modality.

The line is the resampling mean and the band its 2.5-97.5 percentile range over resamples
(`stats.crowds.crowd_curve`: accuracy_mean, resample_low, resample_high); the thin dotted line is the exact
hypergeometric expectation (accuracy_expected). Optionally the best model per modality (highest
METRICS accuracy) is drawn as a dashed horizontal line in the modality's colour.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from omnisocial.figures.style import (
    MODALITY_COLORS,
    chance_line,
    full_subtitle,
    new_figure,
    ordered_modalities,
    save_figure,
    styled,
)
from omnisocial.stats.sdt import MAJORITY_MODEL


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
    with styled():
        fig, axes = new_figure(
            panel_size=(4.2, 2.9),
            title=title,
            subtitle=full_subtitle(subtitle, simulated, curve, models),
            caption=caption,
            right_in=2.1,
        )
        ax = axes[0, 0]
        chance_line(ax)
        for modality in modalities:
            color = MODALITY_COLORS.get(modality, "#555555")
            own = curve[curve["modality"] == modality].dropna(subset=["accuracy_mean"]).sort_values("k")
            if own.empty:
                continue
            ax.fill_between(own["k"], own["resample_low"], own["resample_high"], color=color, alpha=0.2, lw=0)
            ax.plot(own["k"], own["accuracy_mean"], color=color, marker="o", markersize=3, label=modality)
            if "accuracy_expected" in own.columns:
                ax.plot(own["k"], own["accuracy_expected"], color=color, linestyle=":", linewidth=0.9)
            if models is not None and len(models):
                candidates = models[(models["modality"] == modality) & (models["model"] != crowd_model)]
                candidates = candidates.dropna(subset=["accuracy"]).sort_values(
                    ["accuracy", "model"], ascending=[False, True]
                )
                if len(candidates):
                    best = candidates.iloc[0]
                    ax.axhline(
                        best["accuracy"],
                        color=color,
                        linestyle="--",
                        linewidth=1.0,
                        label=f"best model, {modality}: {best['model']}",
                    )
        ks = np.sort(curve["k"].unique())
        if len(ks) <= 12:
            ax.set_xticks(ks)
        ax.set_xlabel("crowd size k (raters per dyad)")
        ax.set_ylabel("majority-vote accuracy")
        ax.legend(
            loc="upper left",
            bbox_to_anchor=(1.03, 1.0),
            borderaxespad=0.0,
            title="band: 95% of resamples\ndotted: exact expectation",
            title_fontsize=7,
        )
        return save_figure(fig, path_stem)

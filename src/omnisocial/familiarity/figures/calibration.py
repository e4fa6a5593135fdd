"""Calibration of stated confidence: reliability diagrams with ECE and AUROC in the legend.

`reliability_table` runs `stats.calibration.calibration` and `auroc_from_confidence` per
(model, modality) on answered predictions with a confidence; `calibration_figure` draws one
panel per modality: accuracy against mean stated confidence per bin (marker area grows with the
bin's count; empty bins are skipped), the diagonal of perfect calibration, and the legend
`model: ECE, AUROC (n)`. Models without any confidence are listed under the panel.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from omnisocial.figures.style import (
    full_subtitle,
    model_styles,
    new_figure,
    ordered_modalities,
    save_figure,
    styled,
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
    modalities = ordered_modalities(reliability["modality"])
    styles = model_styles(reliability["model"])
    with styled():
        fig, axes = new_figure(
            1,
            max(len(modalities), 1),
            panel_size=(2.7, 2.7),
            sharey=True,
            title=title,
            subtitle=full_subtitle(subtitle, simulated, reliability),
            caption=caption,
            bottom_in=0.75 + 0.14 * reliability["model"].nunique(),
        )
        for ax, modality in zip(axes[0], modalities, strict=False):
            ax.plot([0, 1], [0, 1], color="#AAAAAA", linewidth=0.9, linestyle="--", zorder=0)
            own = reliability[reliability["modality"] == modality]
            silent = []
            for model, group in own.groupby("model", sort=True):
                if int(group["n_items"].iloc[0]) == 0:
                    silent.append(model)
                    continue
                filled = group[group["n"] > 0].sort_values("bin_low")
                color, marker = styles[model]
                first = group.iloc[0]
                scores = f"ECE {_fmt(first['ece'])}, AUROC {_fmt(first['auroc'])}"
                label = f"{model}: {scores} (n={int(first['n_items'])})"
                ax.plot(
                    filled["mean_confidence"], filled["accuracy"], color=color, linewidth=1.0, label=label
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
                )
            ax.set_xlim(0, 1.02)
            ax.set_ylim(0, 1.02)
            ax.set_aspect("equal", adjustable="box")
            ax.set_title(modality)
            ax.set_xlabel("stated confidence in the label")
            if ax.get_legend_handles_labels()[0]:
                ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), fontsize=7)
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
        axes[0, 0].set_ylabel("accuracy in bin")
        return save_figure(fig, path_stem)

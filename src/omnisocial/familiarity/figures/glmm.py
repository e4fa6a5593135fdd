"""GLMM modality contrasts: posterior mean and 95% HDI per contrast, P(contrast > 0) annotated.

Takes the contrasts table of `stats.glmm.contrasts` (columns contrast, mean, hdi_low, hdi_high,
p_gt_0; on the logit scale of `correct ~ 0 + modality + (1|rater) + (1|dyad)`). Labels like
`modality[audio] - modality[text]` are shown as `audio - text`. A contrast whose HDI excludes 0
is drawn filled, one that includes 0 hollow.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from omnisocial.figures.style import chance_line, full_subtitle, new_figure, save_figure, styled

_LEVEL = re.compile(r"\w+\[([^\]]+)\]")


def pretty_contrast(name: str) -> str:
    """`modality[audio] - modality[text]` -> `audio − text` (other labels unchanged but the minus)."""
    return _LEVEL.sub(r"\1", str(name)).replace(" - ", " \u2212 ")


def glmm_contrast_figure(
    contrasts: pd.DataFrame,
    path_stem,
    *,
    scale_label: str = "difference in log-odds of a correct answer",
    title: str = "Modality contrasts (Bayesian GLMM)",
    subtitle: str = "",
    caption: str = "",
    simulated: bool | None = None,
):
    """Draw and save; returns [png, pdf]. Rows are drawn top to bottom in table order."""
    needed = ["contrast", "mean", "hdi_low", "hdi_high", "p_gt_0"]
    missing = [c for c in needed if c not in contrasts.columns]
    if missing:
        raise ValueError(f"contrasts table lacks column(s) {missing}")
    rows = contrasts.reset_index(drop=True)
    with styled():
        fig, axes = new_figure(
            panel_size=(4.0, 0.45 * max(len(rows), 1) + 0.6),
            title=title,
            subtitle=full_subtitle(subtitle, simulated, contrasts),
            caption=caption,
            left_in=1.4,
            right_in=1.1,
            bottom_in=0.7,
        )
        ax = axes[0, 0]
        chance_line(ax, "v", 0.0)
        positions = np.arange(len(rows))[::-1]
        for y, row in zip(positions, rows.itertuples(index=False), strict=True):
            excludes_zero = row.hdi_low > 0 or row.hdi_high < 0
            ax.hlines(y, row.hdi_low, row.hdi_high, color="#333333", linewidth=1.6)
            ax.plot(
                [row.mean],
                [y],
                marker="o",
                markersize=6,
                color="#333333",
                markerfacecolor="#333333" if excludes_zero else "white",
            )
            ax.text(
                1.02,
                y,
                f"P(>0) = {row.p_gt_0:.3f}",
                transform=ax.get_yaxis_transform(),
                ha="left",
                va="center",
                fontsize=7.5,
            )
        ax.set_yticks(positions, [pretty_contrast(c) for c in rows["contrast"]])
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ends = np.concatenate([rows["hdi_low"], rows["hdi_high"], [0.0]]).astype(float)
        span = np.nanmax(ends) - np.nanmin(ends)
        pad = 0.08 * span if span > 0 else 0.1
        ax.set_xlim(np.nanmin(ends) - pad, np.nanmax(ends) + pad)
        ax.set_xlabel(f"{scale_label}\n(posterior mean, 95% HDI)")
        ax.spines["left"].set_visible(False)
        ax.tick_params(axis="y", length=0)
        return save_figure(fig, path_stem)

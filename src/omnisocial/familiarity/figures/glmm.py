"""GLMM modality contrasts: posterior mean and 95% HDI per contrast, P(contrast > 0) annotated.

Takes the contrasts table of `stats.glmm.contrasts` (columns contrast, mean, hdi_low, hdi_high,
p_gt_0, r_hat, ess_bulk; on the logit scale of `correct ~ 0 + modality + (1|rater) + (1|dyad)`).
Labels like `modality[audio] - modality[text]` are shown as `audio - text`. A contrast whose HDI
excludes 0 is drawn filled, one that includes 0 hollow; one that did not converge
(`convergence.rows_not_converged`) red and dashed, its label saying so, and the caption counts them.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from omnisocial.familiarity.figures.convergence import convergence_note, rows_not_converged
from omnisocial.figures.style import (
    FLAG_COLOR,
    chance_line,
    empty_panel,
    full_subtitle,
    new_figure,
    save_figure,
    styled,
)

_LEVEL = re.compile(r"\w+\[([^\]]+)\]")
NEEDED = ["contrast", "mean", "hdi_low", "hdi_high", "p_gt_0", "r_hat", "ess_bulk"]


def pretty_contrast(name: str) -> str:
    """`modality[audio] - modality[text]` -> `audio − text` (other labels unchanged but the minus)."""
    return _LEVEL.sub(r"\1", str(name)).replace(" - ", " \u2212 ")


def _draw_contrast(ax, y: float, row, flagged: bool) -> None:
    excludes_zero = row.hdi_low > 0 or row.hdi_high < 0
    color = FLAG_COLOR if flagged else "#333333"
    ax.hlines(y, row.hdi_low, row.hdi_high, color=color, linewidth=1.6, linestyle="--" if flagged else "-")
    ax.plot(
        [row.mean],
        [y],
        marker="o",
        markersize=6,
        color=color,
        markerfacecolor=color if excludes_zero else "white",
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


def _label_rows(ax, rows: pd.DataFrame, positions, flagged) -> None:
    labels = [
        pretty_contrast(name) + ("\n(not converged)" if bad else "")
        for name, bad in zip(rows["contrast"], flagged, strict=True)
    ]
    ax.set_yticks(positions, labels)
    for tick, bad in zip(ax.get_yticklabels(), flagged, strict=True):
        if bad:
            tick.set_color(FLAG_COLOR)


def glmm_contrast_figure(
    contrasts: pd.DataFrame,
    path_stem,
    *,
    scale_label: str = "difference in log-odds of a correct answer",
    title: str = "Modality contrasts (Bayesian GLMM)",
    subtitle: str = "",
    caption: str = "",
    simulated: bool | None = None,
    empty: str = "no modality contrasts",
):
    """Draw and save; returns [png, pdf]. Rows are drawn top to bottom in table order; without
    rows the panel says `empty`."""
    missing = [c for c in NEEDED if c not in contrasts.columns]
    if missing:
        raise ValueError(f"contrasts table lacks column(s) {missing}")
    rows = contrasts.reset_index(drop=True)
    flagged = rows_not_converged(rows)
    note = convergence_note(int(flagged.sum()), len(rows), "contrasts", "Red, dashed") if len(rows) else ""
    with styled():
        fig, axes = new_figure(
            panel_size=(4.0, 0.45 * max(len(rows), 1) + 0.6),
            title=title,
            subtitle=full_subtitle(subtitle, simulated, contrasts),
            caption=" ".join(part for part in (caption, note) if part),
            left_in=1.4,
            right_in=1.1,
            bottom_in=0.7,
        )
        ax = axes[0, 0]
        if rows.empty:
            empty_panel(ax, empty)
            return save_figure(fig, path_stem)
        chance_line(ax, "v", 0.0)
        positions = np.arange(len(rows))[::-1]
        for y, row, bad in zip(positions, rows.itertuples(index=False), flagged, strict=True):
            _draw_contrast(ax, y, row, bad)
        _label_rows(ax, rows, positions, flagged)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ends = np.concatenate([rows["hdi_low"], rows["hdi_high"], [0.0]]).astype(float)
        span = np.nanmax(ends) - np.nanmin(ends)
        pad = 0.08 * span if span > 0 else 0.1
        ax.set_xlim(np.nanmin(ends) - pad, np.nanmax(ends) + pad)
        ax.set_xlabel(f"{scale_label}\n(posterior mean, 95% HDI)")
        ax.spines["left"].set_visible(False)
        ax.tick_params(axis="y", length=0)
        return save_figure(fig, path_stem)

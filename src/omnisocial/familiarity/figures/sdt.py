"""Signal detection: sensitivity d' against criterion c, humans and models, one panel per modality.

Each human rater is a grey point (per-rater log-linear d' and c, `stats.crowds.per_rater_sdt`);
the crowd's majority vote is a black star and each model a coloured marker (METRICS d_prime and
criterion from `stats.sdt.score_predictions`). c > 0 is a bias toward "stranger"; d' = 0 is
chance. Raters or models without both classes answered (NaN d') are left out and counted in the
panel title.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from omnisocial.figures.style import (
    CROWD_COLOR,
    HUMAN_COLOR,
    chance_line,
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
from omnisocial.stats.sdt import MAJORITY_MODEL


def sdt_figure(
    rater_sdt: pd.DataFrame,
    metrics: pd.DataFrame | None,
    path_stem,
    *,
    crowd_model: str = MAJORITY_MODEL,
    title: str = "Sensitivity and bias: d' against c",
    subtitle: str = "",
    caption: str = "",
    simulated: bool | None = None,
):
    """Draw and save; returns [png, pdf]. rater_sdt: rows with modality, d_prime, criterion.
    metrics: METRICS rows (model, modality, d_prime, criterion) for crowd and models, or None."""
    metrics = (
        metrics
        if metrics is not None
        else pd.DataFrame(columns=["model", "modality", "d_prime", "criterion"])
    )
    modalities = ordered_modalities(list(rater_sdt["modality"]) + list(metrics["modality"]))
    models = metrics[metrics["model"] != crowd_model]
    styles = model_styles(models["model"])
    points = [rater_sdt[["d_prime", "criterion"]], metrics[["d_prime", "criterion"]]]
    both = pd.concat(points, ignore_index=True).astype(float).dropna()
    with styled():
        fig, axes = new_figure(
            1,
            max(len(modalities), 1),
            panel_size=(2.6, 2.6),
            sharex=True,
            sharey=True,
            title=title,
            subtitle=full_subtitle(subtitle, simulated, rater_sdt, metrics),
            caption=caption,
            right_in=1.8,
        )
        labelled = set()
        for ax, modality in zip(axes[0], modalities, strict=False):
            chance_line(ax, "h", 0.0)
            chance_line(ax, "v", 0.0)
            own = rater_sdt[rater_sdt["modality"] == modality]
            valid = own.dropna(subset=["d_prime", "criterion"])
            label = "individual raters" if "raters" not in labelled else None
            labelled.add("raters")
            ax.scatter(
                valid["criterion"], valid["d_prime"], s=8, color=HUMAN_COLOR, alpha=0.5, lw=0, label=label
            )
            own_metrics = metrics[metrics["modality"] == modality].sort_values("model")
            rows = [
                row
                for row in own_metrics.itertuples(index=False)
                if np.isfinite(row.d_prime) and np.isfinite(row.criterion)
            ]
            # models with the same d' and c sit side by side, not on top of each other
            offsets = tie_offsets([(round(r.criterion, 6), round(r.d_prime, 6)) for r in rows])
            for row, dx in zip(rows, offsets, strict=True):
                if row.model == crowd_model:
                    color, marker, size, name = CROWD_COLOR, "*", 11, "crowd majority vote"
                else:
                    (color, marker), size, name = styles[row.model], 6, row.model
                ax.plot(
                    [row.criterion],
                    [row.d_prime],
                    marker=marker,
                    color=color,
                    markersize=size,
                    linestyle="none",
                    markeredgecolor="white",
                    markeredgewidth=0.5,
                    label=name if name not in labelled else None,
                    transform=shifted(ax, dx),
                )
                labelled.add(name)
            dropped = len(own) - len(valid)
            ax.set_title(modality + (f" ({dropped} rater(s) without d')" if dropped else ""))
            ax.set_xlabel("criterion c")
        axes[0, 0].set_ylabel("sensitivity d'")
        if len(both):
            pad_x = max(0.2, 0.08 * np.ptp(both["criterion"]))
            pad_y = max(0.2, 0.08 * np.ptp(both["d_prime"]))
            axes[0, 0].set_xlim(
                min(both["criterion"].min(), 0) - pad_x, max(both["criterion"].max(), 0) + pad_x
            )
            axes[0, 0].set_ylim(min(both["d_prime"].min(), 0) - pad_y, max(both["d_prime"].max(), 0) + pad_y)
        gathered_legend(axes, axes[0, -1])
        return save_figure(fig, path_stem)

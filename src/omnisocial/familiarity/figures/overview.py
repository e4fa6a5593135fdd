"""Overview figures: the filter funnel (CONSORT-style) and model coverage with non-answers.

- `funnel_figure(funnel)`: interactions left after each sequential filter stage, with the
  number each stage excluded (rows of `omnisocial.summary.funnel_section`);
- `coverage_figure(metrics)`: per model and modality, the share of stimuli answered
  (answered / asked printed on each bar); a model with no answers is a bar of 0 labelled
  "no answers", never dropped.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from omnisocial.figures.style import (
    MODALITY_COLORS,
    empty_panel,
    full_subtitle,
    new_figure,
    ordered_modalities,
    save_figure,
    styled,
)


def funnel_figure(
    funnel: pd.DataFrame,
    path_stem,
    *,
    title: str = "From corpus to design: interactions kept by each filter",
    subtitle: str = "",
    caption: str = (
        "Stages apply in order; each box shows the interactions left, "
        "the red number between boxes how many the stage excluded."
    ),
    simulated: bool | None = None,
):
    """Draw and save; returns [png, pdf]. funnel: rows with stage, n, excluded."""
    rows = list(funnel.itertuples(index=False))
    with styled():
        fig, axes = new_figure(
            1,
            1,
            panel_size=(5.2, 0.38 * max(len(rows), 1) + 0.3),
            title=title,
            subtitle=full_subtitle(subtitle, simulated),
            caption=caption,
            left_in=0.2,
            bottom_in=0.2,
        )
        ax = axes[0, 0]
        if not rows:
            empty_panel(ax, "no filter report")
            return save_figure(fig, path_stem)
        top = max(int(r.n) for r in rows) or 1
        for i, row in enumerate(rows):
            y = len(rows) - 1 - i
            ax.barh(y, row.n / top, height=0.62, color="#DCE6F2", edgecolor="#4C72B0", linewidth=0.8)
            ax.text(0.01, y, f"{row.stage}: {int(row.n)}", va="center", ha="left", fontsize=7.5)
            if i and row.excluded:
                ax.text(
                    1.02,
                    y + 0.5,
                    f"-{int(row.excluded)}",
                    va="center",
                    ha="left",
                    fontsize=7.5,
                    color="#B00020",
                )
        ax.set_xlim(0, 1.12)
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_xticks([])
        ax.set_yticks([])
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        return save_figure(fig, path_stem)


def coverage_figure(
    metrics: pd.DataFrame,
    path_stem,
    *,
    title: str = "Model coverage: stimuli answered",
    subtitle: str = "",
    caption: str = (
        "Bars: answered / asked per modality; unanswered (unparseable or failed) calls are the rest."
    ),
    simulated: bool | None = None,
):
    """Draw and save; returns [png, pdf]. metrics: METRICS rows (model rows are drawn)."""
    kinds = (
        metrics["rater_type"] if "rater_type" in metrics.columns else pd.Series("model", index=metrics.index)
    )
    models = metrics[kinds == "model"]
    names = sorted(models["model"].unique())
    modalities = ordered_modalities(models["modality"]) if len(models) else []
    with styled():
        fig, axes = new_figure(
            1,
            1,
            panel_size=(4.2, 0.32 * max(len(names), 1) + 0.4),
            title=title,
            subtitle=full_subtitle(subtitle, simulated),
            caption=caption,
            left_in=1.9,
        )
        ax = axes[0, 0]
        if not names:
            empty_panel(ax, "no model predictions")
            return save_figure(fig, path_stem)
        height = 0.8 / max(len(modalities), 1)
        for j, modality in enumerate(modalities):
            own = models[models["modality"] == modality].set_index("model")
            for i, name in enumerate(names):
                y = i + (j - (len(modalities) - 1) / 2) * height
                if name not in own.index:
                    continue
                asked = int(own.loc[name, "n_items"]) if pd.notna(own.loc[name, "n_items"]) else 0
                answered = int(own.loc[name, "n_answered"]) if pd.notna(own.loc[name, "n_answered"]) else 0
                share = answered / asked if asked else 0.0
                ax.barh(
                    y,
                    share,
                    height=height * 0.9,
                    color=MODALITY_COLORS.get(modality, "#888888"),
                    label=modality,
                )
                text = f"{answered}/{asked}" + (" no answers" if answered == 0 else "")
                ax.text(min(share, 1.0) + 0.01, y, text, va="center", ha="left", fontsize=7)
        ax.set_yticks(np.arange(len(names)), names)
        ax.invert_yaxis()
        ax.set_xlim(0, 1.25)
        ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
        ax.set_xlabel("share answered")
        handles, labels = ax.get_legend_handles_labels()
        seen = dict(zip(labels, handles, strict=True))
        ax.legend(seen.values(), seen.keys(), loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
        return save_figure(fig, path_stem)

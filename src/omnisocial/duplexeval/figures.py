"""Figures of the streaming benchmark (Omni-DuplexEval-style; tables in, PNG + PDF out).

- `streaming_figure`: per split, the real-time description temporal and content scores
  (0-100) and the reminder success rate (0-100), one bar per model and measure.

Every function takes DataFrames, a path stem (`<stem>.png` and `<stem>.pdf` are written by
`figures.style.save_figure`: atomic, byte-reproducible) and title / subtitle / caption text.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from omnisocial.figures.style import (
    empty_panel,
    model_styles,
    new_figure,
    save_figure,
    styled,
)

STREAM_MEASURES = (
    ("temporal_100", "temporal score"),
    ("content_100", "content score"),
    ("reminder_100", "reminders passed"),
)


MEASURE_HATCHES = ("", "//", "..")


def streaming_figure(
    metrics: pd.DataFrame, path_stem, *, title: str = "", subtitle: str = "", caption: str = ""
):
    """Per split: temporal, content and reminder scores (0-100), one bar per (model, measure) with a value."""
    table = metrics[metrics["split"] != "all"] if len(metrics) else metrics
    splits = sorted(table["split"].unique()) if len(table) else []
    models = sorted(table["model"].unique()) if len(table) else []
    styles = model_styles(models)
    with styled():
        fig, axes = new_figure(
            panel_size=(max(4.0, 1.1 * len(splits)), 2.8),
            title=title or "Streaming score by subtask",
            subtitle=subtitle,
            caption=caption,
            right_in=2.3,
            bottom_in=1.2,
        )
        ax = axes[0, 0]
        if not splits:
            empty_panel(ax, "no streaming scores")
            return save_figure(fig, path_stem)
        series = [
            (model, m, column, label)
            for model in models
            for m, (column, label) in enumerate(STREAM_MEASURES)
            if table.loc[table["model"] == model, column].notna().any()
        ]
        cells = {}
        for model, _, column, _ in series:
            for split in splits:
                cell = table[(table["model"] == model) & (table["split"] == split)][column]
                if len(cell) and pd.notna(cell.iloc[0]):
                    cells[(model, column, split)] = float(cell.iloc[0])
        width = 0.8 / max(1, max(sum((m, c, sp) in cells for m, _, c, _ in series) for sp in splits))
        labelled = set()
        for i, split in enumerate(splits):
            present = [entry for entry in series if (entry[0], entry[2], split) in cells]
            for k, (model, m, column, label) in enumerate(present):
                name = f"{model}: {label}"
                ax.bar(
                    i - width * len(present) / 2 + width * (k + 0.5),
                    cells[(model, column, split)],
                    width * 0.92,
                    color=styles[model][0],
                    hatch=MEASURE_HATCHES[m],
                    edgecolor="white",
                    label=None if name in labelled else name,
                )
                labelled.add(name)
        ax.set_xticks(np.arange(len(splits)), splits)
        for tick in ax.get_xticklabels():
            tick.set_rotation(25)
            tick.set_ha("right")
        ax.set_ylim(0, 105)
        ax.set_ylabel("score (0-100)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
        return save_figure(fig, path_stem)

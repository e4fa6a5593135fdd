"""Power: dyads needed against effect size, to detect a difference and to show equivalence.

Takes `stats.tests.power_table` output. Left: paired dyads for the exact McNemar test to detect
a true accuracy difference (effect size). Right: paired dyads for TOST to establish equivalence
within +/- margin when the true difference is the effect size, one line per margin. Both on a log
axis; the dashed line marks the design's number of dyads when given, so the reader sees which
effects the study can and cannot resolve.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator

from omnisocial.figures.style import full_subtitle, model_styles, new_figure, save_figure, styled


def power_figure(
    table: pd.DataFrame,
    path_stem,
    *,
    n_dyads: int | None = None,
    title: str = "Dyads needed by effect size",
    subtitle: str = "",
    caption: str = "",
    simulated: bool | None = None,
):
    """Draw and save; returns [png, pdf]."""
    frame = table.copy()
    frame["n_mcnemar"] = pd.to_numeric(frame["n_mcnemar"], errors="coerce").astype(float)
    frame["n_tost"] = pd.to_numeric(frame["n_tost"], errors="coerce").astype(float)
    first = frame.iloc[0] if len(frame) else None
    note = ""
    if first is not None:
        note = f"alpha {first['alpha']:g}, power {first['power']:g}, "
        note += f"baseline accuracy {first['baseline_accuracy']:g}"
    with styled():
        fig, axes = new_figure(
            1,
            2,
            panel_size=(3.0, 2.6),
            title=title,
            subtitle=full_subtitle(" | ".join(p for p in (note, subtitle) if p), simulated, table),
            caption=caption,
            right_in=1.3,
        )
        detect = frame.drop_duplicates("effect_size").sort_values("effect_size").dropna(subset=["n_mcnemar"])
        left, right = axes[0]
        left.plot(
            detect["effect_size"],
            detect["n_mcnemar"],
            color="#333333",
            marker="o",
            markersize=3,
            label="McNemar (exact)",
        )
        left.set_title("detect a difference")
        left.set_xlabel("true accuracy difference")
        left.set_ylabel("paired dyads needed")
        styles = model_styles([f"{m:g}" for m in frame["margin"].unique()])
        for margin, group in frame.groupby("margin", sort=True):
            own = group.sort_values("effect_size").dropna(subset=["n_tost"])
            color, marker = styles[f"{margin:g}"]
            right.plot(
                own["effect_size"],
                own["n_tost"],
                color=color,
                marker=marker,
                markersize=3,
                label=f"margin \u00b1{margin:g}",
            )
        right.set_title("show equivalence (TOST)")
        right.set_xlabel("true accuracy difference")
        for ax in (left, right):
            if ax.get_lines():
                ax.set_yscale("log")
                # plain numbers: mathtext exponents (10^2) print at 70% of the tick size, under 7 pt
                ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
                ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
                ax.yaxis.set_minor_formatter(FuncFormatter(lambda value, _: ""))
            if n_dyads:
                ax.axhline(
                    n_dyads, color="#B00020", linestyle="--", linewidth=1.0, label=f"design: {n_dyads} dyads"
                )
        right.legend(loc="upper left", bbox_to_anchor=(1.04, 1.0), borderaxespad=0.0)
        left.legend(loc="upper right")
        return save_figure(fig, path_stem)

"""Figures of the who / when / how benchmark (SocialOmni-style) (tables in, PNG + PDF out).

- `profile_figure`: per model, who accuracy, single-cut when accuracy, streaming on-time
  rate and the how score over judges (0-100 mapped to 0-1), as grouped bars with their 95%
  intervals as whiskers (the profile's `*_low` / `*_high`) and each bar's value and n; a
  task a model was not run on is left empty and marked "n/a"; demo input (social.source
  demo, passed as `simulated`) puts the SIMULATED note in the subtitle;
- `timing_figure`: the signed offsets (response time - turn end) of the streaming when
  protocol as a histogram per model with the label thresholds marked, and the share of
  each label (Interrupted / Perfect / Delayed / TooLate / NoResponse) per model;
- `rank_scatter`: perception rank (who accuracy) against generation rank (how score), one
  point per model that has both, rank 1 = best, ties share the average rank;
Every function takes DataFrames, a path stem (`<stem>.png` and `<stem>.pdf` are written by
`figures.style.save_figure`: atomic, byte-reproducible) and title / subtitle / caption text.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from omnisocial.figures.style import (
    empty_panel,
    model_styles,
    new_figure,
    save_figure,
    shifted,
    social_subtitle,
    styled,
    tie_offsets,
)

TIMING_LABELS = ("Interrupted", "Perfect", "Delayed", "TooLate", "NoResponse")


LABEL_COLORS = {
    "Interrupted": "#C44E52",
    "Perfect": "#55A868",
    "Delayed": "#CCB974",
    "TooLate": "#DD8452",
    "NoResponse": "#8C8C8C",
}


PROFILE_MEASURES = (
    # (value column, label, the count of items behind it); the interval is <value>_low / _high
    ("who_accuracy", "who\naccuracy", "who_n"),
    ("when_accuracy", "when\nsingle-cut\naccuracy", "when_n"),
    ("when_on_time", "when\non-time rate\n(streaming)", "when_stream_n"),
    ("how_mean", "how\njudged score\n/ 100", "how_n"),
)


PROFILE_CAPTION = (
    "Bars: rate or score per model; whiskers: 95% intervals (Wilson for who accuracy, "
    "single-cut when accuracy and the streaming on-time rate; t over items for the how "
    "score, mean over judges per item). Labels: value (n items), n under the task when "
    "every model had the same. n/a: the model was not run on that task."
)


def _value(row, column: str) -> float:
    value = row.get(column, math.nan)
    value = math.nan if value is None or pd.isna(value) else float(value)
    return value / 100 if column.startswith("how_mean") and math.isfinite(value) else value


def _items(row, column: str) -> int | None:
    value = row.get(column)
    return None if value is None or pd.isna(value) else int(value)


def _shared_n(records: dict, column: str, n_column: str) -> int | None:
    """The n of every model that has the measure, when they all have the same one (else None)."""
    ns = {_items(row, n_column) for row in records.values() if math.isfinite(_value(row, column))}
    return next(iter(ns)) if len(ns) == 1 else None


def profile_figure(
    profile: pd.DataFrame,
    path_stem,
    *,
    title: str = "",
    subtitle: str = "",
    caption: str = PROFILE_CAPTION,
    simulated: bool | None = None,
):
    """Grouped bars of the who / when / how profile, one group per measure, one bar per model.

    Whiskers: the `<measure>_low` / `<measure>_high` interval where the profile has one;
    each bar is labelled with its value and n (the items behind it; once under the measure
    when every model has the same n). `simulated` (None: a
    `source` column mentioning "simulated") puts the SIMULATED note in the subtitle."""
    models = sorted(profile["model"]) if len(profile) else []
    styles = model_styles(models)
    with styled():
        fig, axes = new_figure(
            panel_size=(max(4.2, 1.4 * len(PROFILE_MEASURES) + 0.25 * len(models)), 2.8),
            title=title or "Who / when / how profile per model",
            subtitle=social_subtitle(subtitle, simulated, profile),
            caption=caption,
            right_in=1.9,
            bottom_in=0.9,
        )
        ax = axes[0, 0]
        if not models:
            empty_panel(ax, "no model scored")
            return save_figure(fig, path_stem)
        width = 0.8 / len(models)
        records = {row["model"]: row for row in profile.to_dict("records")}
        shared = [_shared_n(records, column, n_column) for column, _, n_column in PROFILE_MEASURES]
        top = 1.0
        for m, model in enumerate(models):
            record = records[model]
            xs = np.arange(len(PROFILE_MEASURES)) - 0.4 + width * (m + 0.5)
            values = [_value(record, column) for column, _, _ in PROFILE_MEASURES]
            heights = [v if math.isfinite(v) else 0.0 for v in values]
            ax.bar(xs, heights, width * 0.92, color=styles[model][0], label=model)
            bounds = [
                (_value(record, f"{column}_low"), _value(record, f"{column}_high"))
                for column, _, _ in PROFILE_MEASURES
            ]
            drawn = [
                k
                for k, (v, (low, high)) in enumerate(zip(values, bounds, strict=True))
                if math.isfinite(v) and math.isfinite(low) and math.isfinite(high)
            ]
            if drawn:
                centre = np.array([values[k] for k in drawn])
                low = np.array([bounds[k][0] for k in drawn])
                high = np.array([bounds[k][1] for k in drawn])
                ax.errorbar(
                    xs[drawn],
                    centre,
                    yerr=np.vstack([np.clip(centre - low, 0, None), np.clip(high - centre, 0, None)]),
                    fmt="none",
                    ecolor="#222222",
                    elinewidth=0.8,
                    capsize=1.5,
                    capthick=0.8,
                    gid=f"interval:{model}",
                )
            for k, (x, v) in enumerate(zip(xs, values, strict=True)):
                if not math.isfinite(v):
                    ax.text(x, 0.02, "n/a", ha="center", va="bottom", fontsize=7, rotation=90)
                    continue
                n = None if shared[k] is not None else _items(record, PROFILE_MEASURES[k][2])
                text = f"{v:.2f}" if n is None else f"{v:.2f} (n={n})"
                y = max(v, bounds[k][1] if k in drawn else v) + 0.02
                ax.text(x, y, text, ha="center", va="bottom", fontsize=7, rotation=90)
                top = max(top, y + 0.032 * len(text))
        ticks = [
            label if n is None else f"{label}\nn = {n} each"
            for (_, label, _), n in zip(PROFILE_MEASURES, shared, strict=True)
        ]
        ax.set_xticks(np.arange(len(PROFILE_MEASURES)), ticks)
        ax.set_ylim(0, max(1.12, top))
        ax.set_yticks(np.linspace(0, 1, 6))
        ax.set_ylabel("rate or score (0-1)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
        return save_figure(fig, path_stem)


def timing_figure(
    scores: pd.DataFrame,
    path_stem,
    *,
    thresholds=(1.0, 2.0, 5.0),
    bin_s: float = 0.5,
    title: str = "",
    subtitle: str = "",
    caption: str = "",
):
    """Offset histogram per model (left) and label shares per model (right) of the streaming when protocol."""
    models = sorted(scores["model"].unique()) if len(scores) else []
    styles = model_styles(models)
    with styled():
        fig, axes = new_figure(
            1,
            2,
            panel_size=(3.4, 2.6),
            title=title or "When to speak: response-time offsets and labels",
            subtitle=subtitle,
            caption=caption
            or (
                "Left: offset = response time - turn end per item; solid line at 0, dashed lines at "
                f"the label thresholds ({', '.join(f'{t:g}' for t in thresholds)} s). Right: the share of "
                "each label per model."
            ),
            right_in=1.7,
        )
        hist, shares = axes[0, 0], axes[0, 1]
        offsets = scores["offset"].dropna().astype(float) if len(scores) else pd.Series(dtype=float)
        if offsets.empty:
            empty_panel(hist, "no response in any item")
        else:
            low = min(-1.0, math.floor(offsets.min() / bin_s) * bin_s)
            high = max(float(thresholds[-1]) + 1.0, math.ceil(offsets.max() / bin_s) * bin_s + bin_s)
            bins = np.arange(low, high + bin_s / 2, bin_s)
            for model in models:
                own = scores.loc[scores["model"] == model, "offset"].dropna().astype(float)
                if len(own):
                    hist.hist(
                        own, bins=bins, histtype="step", linewidth=1.5, color=styles[model][0], label=model
                    )
            for edge, style in zip((0.0, *thresholds), ("-", "--", "--", "--"), strict=True):
                hist.axvline(edge, color="#444444", linestyle=style, linewidth=0.8, zorder=0)
            hist.set_xlabel("offset = response time - turn end (s)")
            hist.set_ylabel("items")
            hist.set_title("offsets", loc="left")
        if not models:
            empty_panel(shares, "no items")
        else:
            left = np.zeros(len(models))
            for label in TIMING_LABELS:
                share = np.array(
                    [float((scores.loc[scores["model"] == m, "label"] == label).mean()) for m in models]
                )
                shares.barh(models, share, left=left, color=LABEL_COLORS[label], label=label, height=0.6)
                left += share
            shares.set_xlim(0, 1)
            shares.set_xlabel("share of items")
            shares.set_title("labels", loc="left")
            shares.invert_yaxis()
        handles = [*hist.get_legend_handles_labels()[0], *shares.get_legend_handles_labels()[0]]
        labels = [*hist.get_legend_handles_labels()[1], *shares.get_legend_handles_labels()[1]]
        if handles:
            shares.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.04, 1.0), borderaxespad=0.0)
        return save_figure(fig, path_stem)


def rank_scatter(profile: pd.DataFrame, path_stem, *, title: str = "", subtitle: str = "", caption: str = ""):
    """Perception rank (who) against generation rank (how), one labelled point per model."""
    both = profile.dropna(subset=["perception_rank", "generation_rank"]) if len(profile) else profile
    models = sorted(both["model"]) if len(both) else []
    styles = model_styles(models)
    with styled():
        fig, axes = new_figure(
            panel_size=(3.0, 3.0),
            title=title or "Perception vs generation rank",
            subtitle=subtitle,
            caption=caption,
            right_in=1.9,
        )
        ax = axes[0, 0]
        if not models:
            empty_panel(ax, "no model has both a who and a how score")
            return save_figure(fig, path_stem)
        n = max(2.0, float(max(both["perception_rank"].max(), both["generation_rank"].max())))
        ax.plot([0.5, n + 0.5], [0.5, n + 0.5], color="#999999", linestyle=":", linewidth=0.9, zorder=0)
        rows = list(both.sort_values("model").itertuples(index=False))
        # tied ranks: the models sit side by side, not on top of each other
        offsets = tie_offsets([(r.perception_rank, r.generation_rank) for r in rows], step_pt=7.0)
        for row, dx in zip(rows, offsets, strict=True):
            color, marker = styles[row.model]
            ax.scatter(
                row.perception_rank,
                row.generation_rank,
                color=color,
                marker=marker,
                s=40,
                label=row.model,
                transform=shifted(ax, dx),
            )
        ax.set_xlim(n + 0.5, 0.5)  # rank 1 (best) to the right and top
        ax.set_ylim(n + 0.5, 0.5)
        ax.set_xticks(np.arange(1, int(math.ceil(n)) + 1))
        ax.set_yticks(np.arange(1, int(math.ceil(n)) + 1))
        ax.set_xlabel("perception rank (who accuracy; 1 = best)")
        ax.set_ylabel("generation rank (how score; 1 = best)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
        return save_figure(fig, path_stem)


def who_confusion_figure(
    confusion: pd.DataFrame,
    path_stem,
    *,
    title: str = "Who: true speaker option x predicted option",
    subtitle: str = "",
    caption: str = (
        "Rows: the correct option; columns: the option the model chose (none: no option "
        "parsed). Counts per cell; shading is the share of the row."
    ),
    simulated: bool | None = None,
):
    """Confusion matrices of the who task, one panel per model x modality (rows of
    who_confusion.csv: model, modality, truth, one column per option, unparsed)."""
    keys = (
        sorted({(r.model, r.modality) for r in confusion[["model", "modality"]].itertuples(index=False)})
        if len(confusion)
        else []
    )
    options = [c for c in confusion.columns if c not in ("model", "modality", "truth", "unparsed")]
    columns = [*options, "unparsed"] if "unparsed" in confusion.columns else options
    ncols = min(max(len(keys), 1), 3)
    nrows = max(math.ceil(len(keys) / ncols), 1)
    with styled():
        fig, axes = new_figure(
            nrows,
            ncols,
            panel_size=(1.6, 1.4),
            title=title,
            subtitle=social_subtitle(subtitle, simulated, confusion),
            caption=caption,
            wspace_in=0.5,
            hspace_in=0.75,
        )
        if not keys:
            empty_panel(axes[0, 0], "no who scores")
            return save_figure(fig, path_stem)
        for k, (model, modality) in enumerate(keys):
            ax = axes[k // ncols, k % ncols]
            own = confusion[(confusion["model"] == model) & (confusion["modality"] == modality)]
            own = own.set_index("truth").reindex(sorted(own["truth"].astype(str)))
            values = own[columns].fillna(0).to_numpy(dtype=float)
            rows = values.sum(axis=1, keepdims=True)
            share = np.divide(values, rows, out=np.zeros_like(values), where=rows > 0)
            ax.imshow(share, cmap="Blues", vmin=0, vmax=1, aspect="auto")
            for (r, c), n in np.ndenumerate(values):
                color = "white" if share[r, c] > 0.6 else "#222222"
                ax.text(c, r, f"{int(n)}", ha="center", va="center", fontsize=7.5, color=color)
            ax.set_xticks(range(len(columns)), ["none" if c == "unparsed" else c for c in columns])
            ax.set_yticks(range(len(own)), list(own.index))
            ax.tick_params(length=0)
            ax.set_xlabel("predicted")
            ax.set_ylabel("correct")
            ax.set_title(f"{model} ({modality})", fontsize=8)
            for side in ("left", "bottom"):
                ax.spines[side].set_visible(False)
        for k in range(len(keys), nrows * ncols):
            axes[k // ncols, k % ncols].set_visible(False)
        return save_figure(fig, path_stem)

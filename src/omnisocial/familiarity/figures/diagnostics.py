"""Diagnostic figures of the familiarity study (issue 13): where the answers go, per cell,
per prompt variant, and the Rasch item scale.

- `confusion_figure(predictions)`: per model x modality, a truth (familiar / stranger) x
  label (familiar / stranger / no answer) table; cells show counts, shaded by the row share;
- `cell_accuracy_figure(trials, design, predictions)`: accuracy per design cell (site x
  relationship x gender mix) per modality, humans (pooled trials, 95% Wilson interval) and
  the best models (highest answered accuracy over all modalities);
- `prompt_sensitivity_figure(sensitivity)`: per model and modality the answered accuracy at
  each of two prompt variants (a dumbbell), with the exact McNemar p-value of the pair;
- `person_item_map(rasch_difficulty, persons=None, fits=None)`: a Wright map per rater type x
  modality on the fit's logit scale: the Rasch dyad difficulties (items, by true class) on the
  right, the person abilities (rasch_persons: raters or models) on the left; a fit in `fits`
  (rasch_fits) that did not converge is marked in its panel.

Every function takes DataFrames, a path stem (`<stem>.png` and `<stem>.pdf` through
`figures.style.save_figure`) and title / subtitle / caption text; `simulated=None` reads the
`source` column of the tables for the SIMULATED DATA label.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter

from omnisocial.familiarity.contracts import split_variant
from omnisocial.familiarity.figures.convergence import fits_note, unconverged_fits
from omnisocial.familiarity.figures.duplicates import drop_duplicate_models
from omnisocial.figures.style import (
    CLASS_COLORS,
    FLAG_COLOR,
    HUMAN_COLOR,
    chance_line,
    empty_panel,
    full_subtitle,
    gathered_legend,
    model_styles,
    new_figure,
    ordered_modalities,
    save_figure,
    styled,
)
from omnisocial.stats.sdt import wilson_interval

TRUTHS = ("familiar", "stranger")
LABELS = ("familiar", "stranger", "no answer")


def at_variant(predictions: pd.DataFrame, variant: str | None) -> pd.DataFrame:
    """Rows of models at `variant` and of models without a variant (all rows when None)."""
    if variant is None or predictions.empty:
        return predictions
    variants = predictions["model"].map(lambda m: split_variant(m)[1])
    return predictions[(variants == "") | (variants == variant)]


def confusion_table(predictions: pd.DataFrame) -> pd.DataFrame:
    """Counts per model, modality, truth and label ('no answer' for a missing or other label)."""
    frame = predictions[["model", "modality", "truth"]].copy()
    label = predictions["label"].where(predictions["label"].isin(TRUTHS[:2]), "no answer")
    frame["label"] = label.fillna("no answer")
    counts = frame.groupby(["model", "modality", "truth", "label"]).size().rename("n").reset_index()
    return counts


def confusion_figure(
    predictions: pd.DataFrame,
    path_stem,
    *,
    variant: str | None = None,
    title: str = "Confusion matrices: true relationship x model label",
    subtitle: str = "",
    caption: str = (
        "Rows: true class; columns: the model's label (fam. = familiar, str. = stranger, none = no "
        "answer). Counts per cell; shading is the share of the row."
    ),
    simulated: bool | None = None,
):
    """Draw and save; returns [png, pdf]. predictions: model, modality, item_id, truth, label."""
    shown = at_variant(predictions, variant)
    counts = confusion_table(shown) if len(shown) else pd.DataFrame(columns=["model", "modality"])
    # the same predictions under two names (a registry baseline and the offline one): one row
    counts = drop_duplicate_models(counts, columns=("modality", "truth", "label", "n"))
    models = sorted(counts["model"].unique())
    modalities = ordered_modalities(counts["modality"]) if len(counts) else []
    nrows, ncols = max(len(models), 1), max(len(modalities), 1)
    with styled():
        fig, axes = new_figure(
            nrows,
            ncols,
            panel_size=(1.55, 0.75),
            title=title,
            subtitle=full_subtitle(subtitle, simulated, predictions),
            caption=caption,
            left_in=1.9,
            wspace_in=0.25,
            hspace_in=0.35,
            bottom_in=0.45,
        )
        if not models:
            empty_panel(axes[0, 0], "no model predictions")
            return save_figure(fig, path_stem)
        for i, model in enumerate(models):
            for j, modality in enumerate(modalities):
                ax = axes[i, j]
                own = counts[(counts["model"] == model) & (counts["modality"] == modality)]
                table = (
                    own.pivot_table(index="truth", columns="label", values="n", aggfunc="sum")
                    .reindex(index=list(TRUTHS), columns=list(LABELS))
                    .fillna(0)
                )
                values = table.to_numpy(dtype=float)
                rows = values.sum(axis=1, keepdims=True)
                share = np.divide(values, rows, out=np.zeros_like(values), where=rows > 0)
                ax.imshow(share, cmap="Blues", vmin=0, vmax=1, aspect="auto", alpha=0.0 if own.empty else 1.0)
                for (r, c), n in np.ndenumerate(values):
                    if own.empty:
                        break
                    color = "white" if share[r, c] > 0.6 else "#222222"
                    ax.text(c, r, f"{int(n)}", ha="center", va="center", fontsize=7.5, color=color)
                ax.set_xticks(range(len(LABELS)), ["fam.", "str.", "none"] if i == nrows - 1 else [])
                ax.set_yticks(range(len(TRUTHS)), ["fam.", "str."] if j == 0 else [])
                ax.tick_params(length=0, labelsize=7.5)
                for side in ("left", "bottom"):
                    ax.spines[side].set_visible(False)
                if own.empty:
                    ax.text(1, 0.5, "not run", ha="center", va="center", fontsize=7.5, color="#666666")
                if i == 0:
                    ax.set_title(modality, fontsize=8.5)
                if j == 0:
                    ax.set_ylabel(model, rotation=0, ha="right", va="center", fontsize=7.5)
        return save_figure(fig, path_stem)


def cell_table(trials: pd.DataFrame, design: pd.DataFrame, predictions: pd.DataFrame, n_models: int = 2):
    """Accuracy per design cell and modality: rows of who (humans or a model name), modality,
    cell, n, correct, accuracy, ci_low, ci_high. Models: answered predictions only; the
    `n_models` models with the highest answered accuracy over all their predictions."""
    cells = design.set_index("dyad_id")
    labels = (
        cells["site"].astype(str)
        + " | "
        + cells["relationship"].astype(str)
        + " | "
        + cells["gender_mix"].astype(str)
    )
    parts = []
    if len(trials):
        human = trials.assign(
            who="humans", cell=trials["dyad_id"].map(labels), ok=trials["correct"].astype(bool)
        )
        human = human[human["response"].isin(TRUTHS)] if "response" in human.columns else human
        parts.append(human[["who", "modality", "cell", "ok"]])
    if len(predictions):
        answered = predictions[predictions["label"].isin(TRUTHS)]
        answered = answered.assign(ok=answered["label"] == answered["truth"])
        best = answered.groupby("model")["ok"].mean().sort_values(ascending=False, kind="stable")
        keep, seen = [], set()
        for name in best.index:  # a model with the same answers as a kept one (an alias) is skipped
            answers = tuple(
                sorted(
                    map(
                        tuple,
                        predictions.loc[predictions["model"] == name, ["modality", "item_id", "label"]]
                        .astype(str)
                        .values,
                    )
                )
            )
            if answers not in seen and len(keep) < n_models:
                keep.append(name)
                seen.add(answers)
        models = answered[answered["model"].isin(keep)]
        parts.append(
            models.assign(who=models["model"], cell=models["item_id"].map(labels))[
                ["who", "modality", "cell", "ok"]
            ]
        )
    if not parts:
        return pd.DataFrame(
            columns=["who", "modality", "cell", "n", "correct", "accuracy", "ci_low", "ci_high"]
        )
    rows = pd.concat(parts, ignore_index=True).dropna(subset=["cell"])
    table = rows.groupby(["who", "modality", "cell"])["ok"].agg(n="size", correct="sum").reset_index()
    table["accuracy"] = table["correct"] / table["n"]
    bounds = [wilson_interval(int(k), int(n)) for k, n in zip(table["correct"], table["n"], strict=True)]
    table["ci_low"] = [b[0] for b in bounds]
    table["ci_high"] = [b[1] for b in bounds]
    return table


def cell_accuracy_figure(
    trials: pd.DataFrame,
    design: pd.DataFrame,
    predictions: pd.DataFrame,
    path_stem,
    *,
    n_models: int = 2,
    variant: str | None = None,
    title: str = "Accuracy per design cell (site | relationship | gender mix)",
    subtitle: str = "",
    caption: str = (
        "Humans: all trials of the cell pooled over raters, 95% Wilson intervals; models: the best "
        "by answered accuracy, answered predictions only. Dotted line: chance."
    ),
    simulated: bool | None = None,
):
    """Draw and save; returns [png, pdf]."""
    table = cell_table(trials, design, at_variant(predictions, variant), n_models=n_models)
    modalities = ordered_modalities(table["modality"]) if len(table) else []
    cells = sorted(table["cell"].unique()) if len(table) else []
    who = ["humans"] * ("humans" in set(table["who"])) + sorted(set(table["who"]) - {"humans"})
    styles = model_styles([w for w in who if w != "humans"])
    with styled():
        fig, axes = new_figure(
            1,
            max(len(modalities), 1),
            panel_size=(1.45, 0.24 * max(len(cells), 1) + 0.3),
            title=title,
            subtitle=full_subtitle(subtitle, simulated, trials),
            caption=caption,
            left_in=2.0,
            wspace_in=0.2,
            sharey=True,
        )
        if not cells:
            empty_panel(axes[0, 0], "no trials or predictions")
            return save_figure(fig, path_stem)
        offsets = {name: (k - (len(who) - 1) / 2) * 0.22 for k, name in enumerate(who)}
        for j, modality in enumerate(modalities):
            ax = axes[0, j]
            for name in who:
                own = table[(table["who"] == name) & (table["modality"] == modality)].set_index("cell")
                own = own.reindex(cells)
                y = np.arange(len(cells)) + offsets[name]
                color, marker = (HUMAN_COLOR, "o") if name == "humans" else styles[name]
                ax.errorbar(
                    own["accuracy"],
                    y,
                    xerr=[own["accuracy"] - own["ci_low"], own["ci_high"] - own["accuracy"]]
                    if name == "humans"
                    else None,
                    fmt=marker,
                    color=color,
                    markersize=4,
                    elinewidth=0.8,
                    label=name,
                    linestyle="none",
                )
            chance_line(ax, "v")
            ax.set_xlim(-0.04, 1.06)
            ax.set_xticks([0, 0.5, 1])
            ax.set_title(modality, fontsize=8.5)
            ax.set_xlabel("accuracy")
            ax.set_yticks(np.arange(len(cells)), cells)
            ax.set_ylim(len(cells) - 0.5, -0.5)
        gathered_legend(axes, axes[0, -1])
        return save_figure(fig, path_stem)


def prompt_sensitivity_figure(
    sensitivity: pd.DataFrame,
    path_stem,
    *,
    title: str = "Prompt-variant sensitivity: accuracy per variant",
    subtitle: str = "",
    caption: str = (
        "Answered accuracy of each model at two prompt variants (open: first, filled: second); "
        "p: exact McNemar test on the dyads both variants answered."
    ),
    simulated: bool | None = None,
):
    """Draw and save; returns [png, pdf]. sensitivity: rows of prompt_sensitivity.csv."""
    modalities = ordered_modalities(sensitivity["modality"]) if len(sensitivity) else []
    pairs = (
        sorted(
            {(r.name, r.variant_a, r.variant_b) for r in sensitivity.itertuples(index=False)},
        )
        if len(sensitivity)
        else []
    )
    with styled():
        fig, axes = new_figure(
            1,
            max(len(modalities), 1),
            panel_size=(1.5, 0.3 * max(len(pairs), 1) + 0.3),
            title=title,
            subtitle=full_subtitle(subtitle, simulated, sensitivity),
            caption=caption,
            left_in=1.6,
            wspace_in=0.6,
            sharey=True,
        )
        if not pairs:
            empty_panel(axes[0, 0], "one prompt variant only: nothing to compare")
            return save_figure(fig, path_stem)
        labels = [f"{name} ({a} vs {b})" for name, a, b in pairs]
        for j, modality in enumerate(modalities):
            ax = axes[0, j]
            own = sensitivity[sensitivity["modality"] == modality]
            for y, (name, a, b) in enumerate(pairs):
                row = own[(own["name"] == name) & (own["variant_a"] == a) & (own["variant_b"] == b)]
                if row.empty:
                    ax.text(0.5, y, "not run", ha="center", va="center", fontsize=7, color="#666666")
                    continue
                row = row.iloc[0]
                xa, xb = float(row["accuracy_a"]), float(row["accuracy_b"])
                ax.plot([xa, xb], [y, y], color="#999999", linewidth=1.0, zorder=1)
                ax.plot(
                    xa, y, "o", mfc="white", color="#4C72B0", markersize=7, zorder=2, label=f"variant {a}"
                )
                ax.plot(xb, y, "o", color="#4C72B0", markersize=3.5, zorder=3, label=f"variant {b}")
                p = row.get("mcnemar_p", np.nan)
                text = "p n/a" if pd.isna(p) else f"p={float(p):.2g}"
                ax.text(1.04, y, text, va="center", ha="left", fontsize=7, color="#333333", clip_on=False)
            chance_line(ax, "v")
            ax.set_xlim(-0.02, 1.02)
            ax.set_xticks([0, 0.5, 1])
            ax.set_xlabel("accuracy")
            ax.set_title(modality, fontsize=8.5)
            ax.set_yticks(np.arange(len(pairs)), labels)
            ax.set_ylim(len(pairs) - 0.5, -0.5)
        handles, names = axes[0, 0].get_legend_handles_labels()
        seen = dict(zip(names, handles, strict=True))
        axes[0, -1].legend(
            seen.values(), seen.keys(), loc="upper left", bbox_to_anchor=(1.3, 1.0), borderaxespad=0.0
        )
        return save_figure(fig, path_stem)


def _wright_caption(has_persons: bool) -> str:
    persons = (
        " on the right, person abilities (posterior means) on the left."
        if has_persons
        else "; no person abilities were given, so only items are shown."
    )
    return (
        "Dyad difficulties (logits, larger = harder), stacked by true class"
        + persons
        + " Each rater type x modality is its own fit, on its own scale."
    )


def _wright_panel(ax, items: pd.DataFrame, abilities: pd.Series | None, edges, flagged: bool) -> None:
    left = 0
    for truth in TRUTHS:
        counts, _ = np.histogram(items.loc[items["truth"] == truth, "difficulty"], bins=edges)
        ax.barh(
            edges[:-1],
            counts,
            left=left,
            height=np.diff(edges),
            align="edge",
            color=CLASS_COLORS[truth],
            label=f"dyads: {truth}",
        )
        left = left + counts
    if abilities is not None:
        counts, _ = np.histogram(abilities.dropna(), bins=edges)
        ax.barh(
            edges[:-1],
            -counts,
            height=np.diff(edges),
            align="edge",
            color=HUMAN_COLOR,
            label="persons: raters or models",
        )
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{abs(x):g}"))
    ax.axvline(0, color="#333333", linewidth=0.8)
    if items.empty:
        ax.text(0.5, 0.5, "not fitted", transform=ax.transAxes, ha="center", fontsize=7.5)
    if flagged:
        box = {"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1.0}
        ax.text(
            0.03,
            0.98,
            "not converged",
            transform=ax.transAxes,
            va="top",
            fontsize=7.5,
            color=FLAG_COLOR,
            bbox=box,
        )


def person_item_map(
    rasch_difficulty: pd.DataFrame,
    path_stem,
    *,
    persons: pd.DataFrame | None = None,
    fits: pd.DataFrame | None = None,
    title: str = "Person-item (Wright) map of the Rasch fits",
    subtitle: str = "",
    caption: str | None = None,
    simulated: bool | None = None,
):
    """Draw and save; returns [png, pdf]. rasch_difficulty: modality, rater_type, dyad_id,
    truth, difficulty; persons (optional): modality, rater_type, ability; fits (optional):
    rasch_fits, for the convergence marks."""
    items = rasch_difficulty.dropna(subset=["difficulty"]) if len(rasch_difficulty) else rasch_difficulty
    has_persons = persons is not None and len(persons) > 0
    bad = unconverged_fits(fits)
    if caption is None:
        drawn = set(zip(items["rater_type"], items["modality"], strict=True)) if len(items) else set()
        note = fits_note(fits, drawn, 'Panels marked "not converged"')
        caption = " ".join(part for part in (_wright_caption(has_persons), note) if part)
    kinds = [k for k in ("human", "model") if len(items) and k in set(items["rater_type"])]
    modalities = ordered_modalities(items["modality"]) if len(items) else []
    values = items["difficulty"] if len(items) else pd.Series(dtype=float)
    if has_persons:
        values = pd.concat([values, persons["ability"].dropna()])
    low, high = (float(values.min()), float(values.max())) if len(values) else (-1.0, 1.0)
    edges = np.linspace(low - 0.05, high + 0.05, 16)
    with styled():
        fig, axes = new_figure(
            max(len(kinds), 1),
            max(len(modalities), 1),
            panel_size=(1.5, 2.0),
            title=title,
            subtitle=full_subtitle(subtitle, simulated, rasch_difficulty, persons),
            caption=caption,
            sharey=True,
            wspace_in=0.25,
        )
        if not kinds:
            empty_panel(axes[0, 0], "no Rasch fit")
            return save_figure(fig, path_stem)
        for (i, kind), (j, modality) in itertools.product(enumerate(kinds), enumerate(modalities)):
            ax = axes[i, j]
            own = items[(items["rater_type"] == kind) & (items["modality"] == modality)]
            mine = (
                persons.loc[(persons["rater_type"] == kind) & (persons["modality"] == modality), "ability"]
                if has_persons
                else None
            )
            _wright_panel(ax, own, mine, edges, (kind, modality) in bad)
            if i == 0:
                ax.set_title(modality, fontsize=8.5)
            if j == 0:
                ax.set_ylabel(f"{kind}s: logits")
            if i == len(kinds) - 1:
                ax.set_xlabel("persons | dyads" if has_persons else "dyads")
        gathered_legend(axes, axes[0, -1])
        return save_figure(fig, path_stem)

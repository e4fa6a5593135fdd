"""Models drawn once: a model whose results equal another's (the same predictions under two
names, e.g. a registry baseline and the offline one) is merged into one entry `a = b`."""

from __future__ import annotations

import math

import pandas as pd


def _comparable(value):
    """A key part equal for equal values: floats to 6 decimals (a registry entry's reply carries
    its confidence at that precision), NaN as None (NaN != NaN)."""
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 6)
    return value


SAME_COLUMNS = ("modality", "n_items", "n_answered", "accuracy", "d_prime", "criterion")


def drop_duplicate_models(metrics: pd.DataFrame, columns=SAME_COLUMNS) -> pd.DataFrame:
    """One row set per distinct model: a model whose metric rows (every modality: items,
    answers, accuracy, d', c) equal an earlier one's, e.g. the registry's `behavioural` and the
    offline `baseline_behavioural` (the same predictions), is dropped and its name added
    to the kept model's (`kept = dropped`). `columns`: what must be equal (those present)."""
    if metrics.empty or "model" not in metrics.columns:
        return metrics
    columns = [c for c in columns if c in metrics.columns]
    kinds = (
        metrics["rater_type"] if "rater_type" in metrics.columns else pd.Series("model", index=metrics.index)
    )
    seen: dict[tuple, str] = {}
    rename: dict[str, str] = {}
    drop: set[str] = set()
    for name in sorted(metrics.loc[kinds == "model", "model"].unique(), key=lambda n: ("@" not in n, n)):
        rows = metrics[metrics["model"] == name].sort_values(columns)
        key = tuple(tuple(_comparable(v) for v in row) for row in rows[columns].itertuples(index=False))
        if key in seen:
            drop.add(name)
            rename[seen[key]] = f"{rename.get(seen[key], seen[key])} = {name}"
        else:
            seen[key] = name
    kept = metrics[~metrics["model"].isin(drop)].copy()
    kept["model"] = kept["model"].replace(rename)
    return kept.reset_index(drop=True)

"""Inputs of every familiarity analysis: model and human predictions with their sources.

The choices made are listed in `omnisocial.familiarity.analysis`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from omnisocial.familiarity.contracts import (
    MODEL_SOURCE,
    RELEASE_SOURCE,
    SURVEY_SOURCE,
)
from omnisocial.stats.sdt import (
    MAJORITY_MODEL,
    NON_ANSWER,
    truth_map,
)
from omnisocial.tables import PREDICTIONS, TRIALS

log = logging.getLogger(__name__)

# --- inputs -------------------------------------------------------------------------------


def model_predictions(frames: pd.DataFrame | Iterable[pd.DataFrame], design: pd.DataFrame) -> pd.DataFrame:
    """Every model's PREDICTIONS (one frame, or one per file) in one table, checked against the truth.

    Raises ValueError for a model/modality/dyad predicted twice (two files naming the same
    model), a dyad the design lacks, a truth that disagrees with the design (a stale file),
    or a prediction named like the human crowd.
    """
    frames = [frames] if isinstance(frames, pd.DataFrame) else list(frames)
    parts = [PREDICTIONS.validate(frame) for frame in frames]
    frame = PREDICTIONS.validate(pd.concat(parts, ignore_index=True)) if parts else PREDICTIONS.empty()
    if (frame["model"] == MAJORITY_MODEL).any():
        raise ValueError(f"{MAJORITY_MODEL!r} is the human crowd's name; rename that model")
    truth = truth_map(design)
    unknown = sorted(set(frame["item_id"]) - set(truth))
    if unknown:
        raise ValueError(f"predictions for dyad(s) the design lacks: {', '.join(unknown[:5])}")
    stale = frame["truth"].to_numpy() != frame["item_id"].map(truth).to_numpy()
    if stale.any():
        row = frame[stale].iloc[0]
        raise ValueError(
            f"model {row['model']} dyad {row['item_id']}: truth {row['truth']} disagrees with the design"
        )
    return frame.sort_values(["model", "modality", "item_id"], kind="stable").reset_index(drop=True)


def released_sources(frames: Mapping[str, pd.DataFrame], released: Iterable[str]) -> dict[str, str]:
    """{model: RELEASE_SOURCE} of the models in the released predictions' files (by path)."""
    released = {str(path) for path in released}
    return {
        str(model): RELEASE_SOURCE
        for path, frame in frames.items()
        if str(path) in released
        for model in frame["model"].unique()
    }


def model_sources(models: Iterable[str], sources: Mapping[str, str] | None) -> list[str]:
    """Each model's source: `sources` ({model: source}, e.g. `released_sources`), else MODEL_SOURCE."""
    sources = sources or {}
    return [sources.get(str(model), MODEL_SOURCE) for model in models]


def joined_sources(values: Iterable[str]) -> str:
    """Several rows' sources as one ('; '-joined, each once, sorted)."""
    return "; ".join(sorted({part for value in values for part in str(value).split("; ") if part}))


def human_source(trials: pd.DataFrame) -> str:
    """The trials' `source` ('; '-joined when mixed); 'survey exports' without that column."""
    if "source" not in trials.columns or trials.empty:
        return SURVEY_SOURCE
    return "; ".join(sorted({str(s) for s in trials["source"].unique() if str(s)})) or SURVEY_SOURCE


def _trials(trials: pd.DataFrame) -> pd.DataFrame:
    return TRIALS.validate(trials)


def _correct(frame: pd.DataFrame) -> pd.Series:
    """Correctness per item_id: True / False for answers, NA for non-answers."""
    values = pd.array(
        np.where(frame["label"] == NON_ANSWER, None, frame["label"] == frame["truth"]), dtype="boolean"
    )
    return pd.Series(values, index=frame["item_id"].to_numpy())

"""Rule score_familiarity: metrics, non-answers, per-rater SDT, crowd curves, calibration, prompt sensitivity.

The choices made are listed in `omnisocial.familiarity.analysis`.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from omnisocial.familiarity.analysis.inputs import (
    _correct,
    _trials,
    human_source,
    model_predictions,
    model_sources,
)
from omnisocial.familiarity.contracts import (
    CALIBRATION,
    CROWD_CURVES,
    FAM_METRICS,
    MAJORITY_VOTES,
    NONANSWER,
    PER_RATER,
    PROMPT_SENSITIVITY,
    RATED_TRIALS,
    split_variant,
)
from omnisocial.stats.calibration import auroc_from_confidence, bootstrap_calibration, calibration
from omnisocial.stats.crowds import crowd_curve, per_rater_sdt
from omnisocial.stats.sdt import (
    MAJORITY_MODEL,
    NON_ANSWER,
    majority_vote,
    majority_votes,
    nonanswer_accuracies,
    rater_predictions,
    score_predictions,
    truth_map,
)
from omnisocial.stats.tests import mcnemar_exact
from omnisocial.tables import PREDICTIONS

log = logging.getLogger(__name__)

# --- score_familiarity --------------------------------------------------------------------


def human_predictions(
    trials: pd.DataFrame, design: pd.DataFrame, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(every rater as a model, plus `human_majority`; the majority-vote record). Empty without trials."""
    frame = _trials(trials)
    if frame.empty:
        return PREDICTIONS.empty(), MAJORITY_VOTES.empty().drop(columns="source")
    truth = truth_map(design)
    raters = rater_predictions(frame, truth)
    crowd = majority_vote(frame, truth, seed)
    record = majority_votes(frame, truth, seed)
    return PREDICTIONS.validate(pd.concat([raters, crowd], ignore_index=True)), record


def rater_types(models: pd.Series, rater_ids: Iterable[str]) -> np.ndarray:
    raters = set(rater_ids)
    return np.where(models == MAJORITY_MODEL, "crowd", np.where(models.isin(raters), "human", "model"))


def _sourced(
    frame: pd.DataFrame, types: np.ndarray, human: str, sources: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """rater_type and source: a model's (`model_sources`), or the trials' for raters and crowd."""
    own = model_sources(frame["model"], sources)
    return frame.assign(rater_type=types, source=np.where(types == "model", own, human))


def calibration_table(
    predictions: pd.DataFrame, n_bins: int = 10, n_boot: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """Reliability bins per (model, modality) with ECE, AUROC and the items used (`CALIBRATION`).

    Answered predictions with a confidence only; a group without any keeps one row with
    n_items = 0 (the figure lists it as giving no confidence). ECE and AUROC carry 95%
    percentile bootstrap intervals (n_boot resamples of the items, seeded) and ece_perfect,
    the mean ECE of a perfectly calibrated model with the same confidences
    (`stats.calibration.bootstrap_calibration`).
    """
    frame = PREDICTIONS.validate(predictions)
    frame = frame[frame["label"] != NON_ANSWER]
    parts = []
    for (model, modality), group in frame.groupby(["model", "modality"], sort=True):
        result = calibration(group["confidence"], group["label"] == group["truth"], n_bins=int(n_bins))
        if result["n"] == 0:
            parts.append(pd.DataFrame([{"model": model, "modality": modality, "n_items": 0}]))
            continue
        auroc = auroc_from_confidence(group["label"], group["confidence"], group["truth"])
        spread = bootstrap_calibration(
            group["label"], group["confidence"], group["truth"], int(n_bins), int(n_boot), int(seed)
        )
        parts.append(
            result["bins"].assign(
                model=model, modality=modality, ece=result["ece"], auroc=auroc, n_items=result["n"], **spread
            )
        )
    if not parts:
        return CALIBRATION.empty()
    return CALIBRATION.validate(pd.concat(parts, ignore_index=True).reindex(columns=CALIBRATION.names))


def _accuracy(frame: pd.DataFrame) -> tuple[float, float]:
    """(accuracy on answered items, coverage)."""
    answered = frame["label"] != NON_ANSWER
    n = int(answered.sum())
    accuracy = float((frame.loc[answered, "label"] == frame.loc[answered, "truth"]).mean()) if n else math.nan
    return accuracy, (n / len(frame) if len(frame) else math.nan)


def prompt_sensitivity(predictions: pd.DataFrame) -> pd.DataFrame:
    """Per registry model and modality: accuracy per prompt variant, range, McNemar between variants.

    One row per pair of variants (in the order they appear); a single variant gives one row
    with variant_b empty. Models without a `@variant` (baselines) are left out.
    """
    frame = PREDICTIONS.validate(predictions)
    names = frame["model"].map(lambda m: split_variant(m)[0])
    variants = frame["model"].map(lambda m: split_variant(m)[1])
    frame = frame.assign(name=names, variant=variants)
    frame = frame[frame["variant"] != ""]
    rows = []
    for (name, modality), group in frame.groupby(["name", "modality"], sort=True):
        order = list(dict.fromkeys(group["variant"]))
        by_variant = {v: group[group["variant"] == v].set_index("item_id", drop=False) for v in order}
        accuracy = {v: _accuracy(by_variant[v]) for v in order}
        finite = [a for a, _ in accuracy.values() if not math.isnan(a)]
        spread = max(finite) - min(finite) if finite else math.nan
        pairs = list(itertools.combinations(order, 2)) or [(order[0], "")]
        for first, second in pairs:
            row = {
                "name": name,
                "modality": modality,
                "variant_a": first,
                "variant_b": second,
                "n_items": len(by_variant[first]),
                "accuracy_a": accuracy[first][0],
                "coverage_a": accuracy[first][1],
                "accuracy_range": spread,
                "accuracy_b": math.nan,
                "coverage_b": math.nan,
                "difference": math.nan,
                "agreement": math.nan,
                "n_paired": 0,
                "mcnemar_b": 0,
                "mcnemar_c": 0,
                "mcnemar_p": math.nan,
            }
            if second:
                a, b = by_variant[first], by_variant[second]
                both = a.index.intersection(b.index)
                answered = both[
                    (a.loc[both, "label"] != NON_ANSWER) & (b.loc[both, "label"] != NON_ANSWER).to_numpy()
                ]
                test = mcnemar_exact(_correct(a), _correct(b))
                row.update(
                    n_items=len(both),
                    accuracy_b=accuracy[second][0],
                    coverage_b=accuracy[second][1],
                    difference=accuracy[first][0] - accuracy[second][0],
                    agreement=(
                        float((a.loc[answered, "label"] == b.loc[answered, "label"]).mean())
                        if len(answered)
                        else math.nan
                    ),
                    n_paired=test["n_items"],
                    mcnemar_b=test["b"],
                    mcnemar_c=test["c"],
                    mcnemar_p=test["p_value"] if test["n_items"] else math.nan,
                )
            rows.append(row)
    if not rows:
        return PROMPT_SENSITIVITY.empty()
    return PROMPT_SENSITIVITY.validate(pd.DataFrame(rows))


def crowd_sizes(trials: pd.DataFrame) -> list[int]:
    """1 .. the most raters any dyad has in any modality."""
    frame = _trials(trials)
    if frame.empty:
        return []
    return list(range(1, int(frame.groupby(["modality", "dyad_id"]).size().max()) + 1))


def score_familiarity(
    predictions: pd.DataFrame | Iterable[pd.DataFrame],
    trials: pd.DataFrame,
    design: pd.DataFrame,
    params: Mapping,
    sources: Mapping[str, str] | None = None,
) -> dict[str, pd.DataFrame]:
    """metrics, nonanswer_accuracy, per_rater_sdt, majority_votes, crowd_curves, calibration,
    prompt_sensitivity (module docstring). params: seed, crowd_resamples, calibration_bins,
    calibration_bootstrap. sources: {model: source} of models not inferred here (released)."""
    seed = int(params.get("seed", 0))
    models = model_predictions(predictions, design)
    human = human_source(trials)
    frame = RATED_TRIALS.validate(trials if "source" in trials.columns else trials.assign(source=human))
    truth = truth_map(design)
    people, record = human_predictions(frame, design, seed)
    everyone = pd.concat([models, people], ignore_index=True)
    raters = frame["rater_id"].unique()

    metrics = score_predictions(everyone)
    metrics = _sourced(metrics, rater_types(metrics["model"], raters), human, sources)
    answers = nonanswer_accuracies(
        pd.concat([models, people[people["model"] == MAJORITY_MODEL]], ignore_index=True)
    )
    answers = _sourced(answers, rater_types(answers["model"], raters), human, sources)

    if frame.empty:
        per_rater, curves = PER_RATER.empty(), CROWD_CURVES.empty()
        votes = MAJORITY_VOTES.empty()
    else:
        per_rater = per_rater_sdt(frame, truth).assign(source=human)
        resamples = int(params.get("crowd_resamples", 1000))
        curves = crowd_curve(frame, truth, crowd_sizes(frame), n_resamples=resamples, seed=seed).assign(
            source=human
        )
        votes = record.assign(source=human)
    tables = {
        "metrics": FAM_METRICS.validate(metrics),
        "nonanswer_accuracy": NONANSWER.validate(answers) if len(answers) else NONANSWER.empty(),
        "per_rater_sdt": PER_RATER.validate(per_rater),
        "majority_votes": MAJORITY_VOTES.validate(votes),
        "crowd_curves": CROWD_CURVES.validate(curves),
        "calibration": calibration_table(
            models,
            int(params.get("calibration_bins", 10)),
            int(params.get("calibration_bootstrap", 1000)),
            seed,
        ),
        "prompt_sensitivity": prompt_sensitivity(models),
    }
    log.info(
        "%d models, %d raters, %d metric rows", models["model"].nunique(), len(raters), len(tables["metrics"])
    )
    return tables

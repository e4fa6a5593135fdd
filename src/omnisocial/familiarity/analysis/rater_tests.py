"""Rule rater_tests: McNemar and TOST (best model vs crowd, modality pairs), power, individual differences.

The choices made are listed in `omnisocial.familiarity.analysis`.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Iterable, Mapping

import pandas as pd

from omnisocial.familiarity.analysis.inputs import (
    _correct,
    _trials,
    human_source,
    joined_sources,
    model_predictions,
    model_sources,
)
from omnisocial.familiarity.analysis.scoring import human_predictions
from omnisocial.familiarity.contracts import (
    COMPARISONS,
    INDIVIDUAL_DIFFERENCES,
    MCNEMAR,
    MODALITIES,
    POWER,
    TOST,
)
from omnisocial.stats.sdt import (
    MAJORITY_MODEL,
    nonanswer_accuracies,
    truth_map,
)
from omnisocial.stats.tests import holm, mcnemar_exact, power_table, tost_difference

log = logging.getLogger(__name__)

BEST_MODEL_NOTE = (
    "the best model was chosen on these same dyads (optimistic for the model); "
    "the crowd is the majority vote of the raters per dyad"
)

# --- rater_tests --------------------------------------------------------------------------


def best_models(models: pd.DataFrame) -> dict[str, str]:
    """modality -> the best model (module docstring: non-answers count as wrong, then accuracy, name)."""
    best = {}
    answers = nonanswer_accuracies(models) if len(models) else pd.DataFrame()
    for modality, group in answers.groupby("modality", sort=True) if len(answers) else []:
        ranked = group.assign(
            _wrong=group["accuracy_nonanswer_wrong"].fillna(-1.0),
            _answered=group["accuracy_answered"].fillna(-1.0),
        ).sort_values(["_wrong", "_answered", "model"], ascending=[False, False, True], kind="stable")
        best[modality] = str(ranked["model"].iloc[0])
    return best


def comparisons(everyone: pd.DataFrame) -> list[tuple[str, str, str, str, str]]:
    """(comparison, model_a, modality_a, model_b, modality_b) of the paired tests."""
    models = everyone[everyone["model"] != MAJORITY_MODEL]
    crowd_modalities = set(everyone.loc[everyone["model"] == MAJORITY_MODEL, "modality"])
    out = []
    for modality, model in best_models(models).items():
        if modality in crowd_modalities:
            out.append(("best_model_vs_crowd", model, modality, MAJORITY_MODEL, modality))
    for model, group in everyone.groupby("model", sort=True):
        present = [m for m in MODALITIES if m in set(group["modality"])]
        for first, second in itertools.combinations(present, 2):
            out.append(("modality_pair", model, first, model, second))
    return out


def _pair(everyone: pd.DataFrame, model: str, modality: str) -> pd.Series:
    own = everyone[(everyone["model"] == model) & (everyone["modality"] == modality)]
    return _correct(own)


def paired_tests(
    everyone: pd.DataFrame,
    margin: float,
    alpha: float = 0.05,
    method: str = "tango",
    human: str = "",
    sources: Mapping[str, str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(MCNEMAR, TOST) over `comparisons(everyone)`.

    Holm's correction runs over each family: the rows of one comparison kind
    (best_model_vs_crowd, modality_pair) within a table (p_holm of McNemar, p_tost_holm and
    equivalent_holm of TOST), beside the raw p-values. Rows comparing the best model with
    the crowd carry a `note` that the model was chosen on the same dyads."""
    mcnemar_rows, tost_rows = [], []
    for comparison, model_a, modality_a, model_b, modality_b in comparisons(everyone):
        a, b = _pair(everyone, model_a, modality_a), _pair(everyone, model_b, modality_b)
        keys = {
            "comparison": comparison,
            "model_a": model_a,
            "modality_a": modality_a,
            "model_b": model_b,
            "modality_b": modality_b,
            "source": human
            if MAJORITY_MODEL in (model_a, model_b)
            else joined_sources(model_sources({model_a, model_b}, sources)),
            "note": BEST_MODEL_NOTE if comparison == "best_model_vs_crowd" else "",
        }
        test = mcnemar_exact(a, b)
        both = a.index.intersection(b.index)
        paired = both[a.loc[both].notna().to_numpy() & b.loc[both].notna().to_numpy()]
        mcnemar_rows.append(
            {
                **keys,
                "accuracy_a": float(a.loc[paired].astype(bool).mean()) if len(paired) else math.nan,
                "accuracy_b": float(b.loc[paired].astype(bool).mean()) if len(paired) else math.nan,
                "n_items": test["n_items"],
                "b": test["b"],
                "c": test["c"],
                "statistic": test["statistic"],
                "p_value": test["p_value"] if test["n_items"] else math.nan,
            }
        )
        row = {
            **keys,
            "n_items": len(paired),
            "margin": float(margin),
            "alpha": float(alpha),
            "method": method,
        }
        if len(paired):
            result = tost_difference(a, b, margin, paired=True, alpha=alpha, method=method)
            row.update(
                {k: result[k] for k in ("diff", "se", "ci_low", "ci_high", "p_lower", "p_upper", "p_tost")}
            )
            row["equivalent"] = bool(result["equivalent"])
        else:
            row.update(
                dict.fromkeys(("diff", "se", "ci_low", "ci_high", "p_lower", "p_upper", "p_tost"), math.nan)
            )
            row["equivalent"] = False
        tost_rows.append(row)
    if not mcnemar_rows:
        return MCNEMAR.empty(), TOST.empty()
    mcnemar, tost = pd.DataFrame(mcnemar_rows), pd.DataFrame(tost_rows)
    mcnemar["p_holm"] = math.nan
    tost["p_tost_holm"] = math.nan
    for kind in COMPARISONS:
        rows = mcnemar["comparison"] == kind
        mcnemar.loc[rows, "p_holm"] = holm(mcnemar.loc[rows, "p_value"])
        rows = tost["comparison"] == kind
        tost.loc[rows, "p_tost_holm"] = holm(tost.loc[rows, "p_tost"])
    tost["equivalent_holm"] = tost["p_tost_holm"].lt(float(alpha)).to_numpy()
    return MCNEMAR.validate(mcnemar), TOST.validate(tost)


def power_analysis(params: Mapping, n_dyads: int, method: str = "tango") -> pd.DataFrame:
    """`stats.tests.power_table` for the configured effects and margins, with the design's size
    (exact powers at n_dyads, TOST by `method`)."""
    table = power_table(
        [float(e) for e in params["effect_sizes"]],
        [float(m) for m in params["margins"]],
        alpha=float(params.get("alpha", 0.05)),
        power=float(params.get("power", 0.8)),
        baseline_accuracy=float(params.get("baseline_accuracy", 0.6)),
        n_design=int(n_dyads) or None,
        method=method,
    )
    return POWER.validate(table.assign(n_dyads_design=int(n_dyads)))


def rater_tests(
    predictions: pd.DataFrame | Iterable[pd.DataFrame],
    trials: pd.DataFrame,
    design: pd.DataFrame,
    covariates: pd.DataFrame | None,
    params: Mapping,
    sources: Mapping[str, str] | None = None,
) -> dict[str, pd.DataFrame]:
    """mcnemar, tost, power, individual_differences (module docstring).

    params: seed, tost_margin, tost_alpha, tost_method, power {effect_sizes, margins, alpha,
    power, baseline_accuracy}.
    """
    from omnisocial.familiarity.ratings import individual_differences

    models = model_predictions(predictions, design)
    human = human_source(trials)
    people, _ = human_predictions(trials, design, int(params.get("seed", 0)))
    crowd = people[people["model"] == MAJORITY_MODEL]
    everyone = pd.concat([models, crowd], ignore_index=True)
    mcnemar, tost = paired_tests(
        everyone,
        float(params.get("tost_margin", 0.1)),
        float(params.get("tost_alpha", 0.05)),
        str(params.get("tost_method", "tango")),
        human,
        sources,
    )
    differences = INDIVIDUAL_DIFFERENCES.empty()
    numeric = [
        c
        for c in (covariates.columns if covariates is not None else [])
        if c not in ("rater_id", "modality", "source") and pd.api.types.is_numeric_dtype(covariates[c])
    ]
    if numeric and len(trials):
        table = individual_differences(_trials(trials).assign(source=human), covariates, truth_map(design))
        differences = INDIVIDUAL_DIFFERENCES.validate(table.assign(source=table.get("source", human)))
    else:
        log.info("no rater covariates: individual_differences.csv is empty")
    return {
        "mcnemar": mcnemar,
        "tost": tost,
        "power": power_analysis(
            params["power"], len(truth_map(design)), str(params.get("tost_method", "tango"))
        ),
        "individual_differences": differences,
    }

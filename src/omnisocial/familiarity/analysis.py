"""Statistics of the familiarity study into tables (benchmarks.md 1.8 and 1.9).

Inputs are the model PREDICTIONS (every `{name}@{variant}` of the registry and the offline
baselines), the human trials (`RATED_TRIALS`, with their `source`) and the design (the truth).
Each function returns a dict of tables named like the files the workflow writes.

Choices made here (the published analysis leaves them open):

- humans: every rater is scored as a 'model' named by rater id (rater_type `human`), and the
  majority vote per modality and dyad as `human_majority` (rater_type `crowd`; ties broken by a
  coin seeded with `analysis.seed`, the tie record is in majority_votes.csv);
- the best model of a modality (for the McNemar and TOST comparison with the crowd) is the
  model with the highest accuracy counting non-answers as wrong (a model cannot win by refusing),
  ties broken by accuracy on answered items, then name. It is chosen on the same dyads it is
  tested on, so its comparison with the crowd is optimistic for the model;
- paired tests (McNemar, TOST, prompt sensitivity) use the dyads both raters answered: a
  non-answer is left out of the pair, like accuracy is on answered items;
- modality pairs are tested within every model (each prompt variant its own model) and within
  the crowd, paired on dyads;
- TOST uses the `analysis.tost_method` standard error ("agresti_min" by default: with no
  discordant dyad the plain Wald SE is 0 and nothing could ever be called equivalent);
- calibration covers models only (the crowd's vote share is not a stated confidence);
- Rasch: dyad difficulty per modality for humans (persons = raters) and for models (persons =
  every model@variant and baseline that answered in that modality; answered predictions only);
  the per-dyad human accuracy is the share of raters who were right, the model accuracy the
  mean over the models' answered predictions; partial correlations control for the true class
  by correlating the residuals after removing each class's mean (n - 3 degrees of freedom).
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
from scipy import stats

from omnisocial.familiarity.contracts import (
    CALIBRATION,
    CROWD_CURVES,
    FAM_METRICS,
    GLMM_CONTRASTS,
    GLMM_SUMMARY,
    INDIVIDUAL_DIFFERENCES,
    MAJORITY_VOTES,
    MCNEMAR,
    MODALITIES,
    MODEL_SOURCE,
    NONANSWER,
    PER_RATER,
    POWER,
    PROMPT_SENSITIVITY,
    RASCH_CORRELATIONS,
    RASCH_DIFFICULTY,
    RASCH_FITS,
    RASCH_PARTIAL,
    RATED_TRIALS,
    SURVEY_SOURCE,
    TOST,
    split_variant,
)
from omnisocial.stats.calibration import auroc_from_confidence, calibration
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
from omnisocial.stats.tests import mcnemar_exact, power_table, tost_difference
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


def _sourced(frame: pd.DataFrame, types: np.ndarray, human: str) -> pd.DataFrame:
    return frame.assign(rater_type=types, source=np.where(types == "model", MODEL_SOURCE, human))


def calibration_table(predictions: pd.DataFrame, n_bins: int = 10) -> pd.DataFrame:
    """Reliability bins per (model, modality) with ECE, AUROC and the items used (`CALIBRATION`).

    Answered predictions with a confidence only; a group without any keeps one row with
    n_items = 0 (the figure lists it as giving no confidence).
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
        parts.append(
            result["bins"].assign(
                model=model, modality=modality, ece=result["ece"], auroc=auroc, n_items=result["n"]
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
) -> dict[str, pd.DataFrame]:
    """metrics, nonanswer_accuracy, per_rater_sdt, majority_votes, crowd_curves, calibration,
    prompt_sensitivity (module docstring). params: seed, crowd_resamples, calibration_bins."""
    seed = int(params.get("seed", 0))
    models = model_predictions(predictions, design)
    human = human_source(trials)
    frame = RATED_TRIALS.validate(trials if "source" in trials.columns else trials.assign(source=human))
    truth = truth_map(design)
    people, record = human_predictions(frame, design, seed)
    everyone = pd.concat([models, people], ignore_index=True)
    raters = frame["rater_id"].unique()

    metrics = score_predictions(everyone)
    metrics = _sourced(metrics, rater_types(metrics["model"], raters), human)
    answers = nonanswer_accuracies(
        pd.concat([models, people[people["model"] == MAJORITY_MODEL]], ignore_index=True)
    )
    answers = _sourced(answers, rater_types(answers["model"], raters), human)

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
        "calibration": calibration_table(models, int(params.get("calibration_bins", 10))),
        "prompt_sensitivity": prompt_sensitivity(models),
    }
    log.info(
        "%d models, %d raters, %d metric rows", models["model"].nunique(), len(raters), len(tables["metrics"])
    )
    return tables


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
    everyone: pd.DataFrame, margin: float, alpha: float = 0.05, method: str = "agresti_min", human: str = ""
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(MCNEMAR, TOST) over `comparisons(everyone)`."""
    mcnemar_rows, tost_rows = [], []
    for comparison, model_a, modality_a, model_b, modality_b in comparisons(everyone):
        a, b = _pair(everyone, model_a, modality_a), _pair(everyone, model_b, modality_b)
        keys = {
            "comparison": comparison,
            "model_a": model_a,
            "modality_a": modality_a,
            "model_b": model_b,
            "modality_b": modality_b,
            "source": human if MAJORITY_MODEL in (model_a, model_b) else MODEL_SOURCE,
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
    mcnemar = MCNEMAR.validate(pd.DataFrame(mcnemar_rows)) if mcnemar_rows else MCNEMAR.empty()
    tost = TOST.validate(pd.DataFrame(tost_rows)) if tost_rows else TOST.empty()
    return mcnemar, tost


def power_analysis(params: Mapping, n_dyads: int) -> pd.DataFrame:
    """`stats.tests.power_table` for the configured effects and margins, with the design's size."""
    table = power_table(
        [float(e) for e in params["effect_sizes"]],
        [float(m) for m in params["margins"]],
        alpha=float(params.get("alpha", 0.05)),
        power=float(params.get("power", 0.8)),
        baseline_accuracy=float(params.get("baseline_accuracy", 0.6)),
    )
    return POWER.validate(table.assign(n_dyads_design=int(n_dyads)))


def rater_tests(
    predictions: pd.DataFrame | Iterable[pd.DataFrame],
    trials: pd.DataFrame,
    design: pd.DataFrame,
    covariates: pd.DataFrame | None,
    params: Mapping,
) -> dict[str, pd.DataFrame]:
    """mcnemar, tost, power, individual_differences (module docstring).

    params: seed, tost_margin, tost_alpha, tost_method, power {effect_sizes, margins, alpha,
    power, baseline_accuracy}.
    """
    from omnisocial.ratings import individual_differences

    models = model_predictions(predictions, design)
    human = human_source(trials)
    people, _ = human_predictions(trials, design, int(params.get("seed", 0)))
    crowd = people[people["model"] == MAJORITY_MODEL]
    everyone = pd.concat([models, crowd], ignore_index=True)
    mcnemar, tost = paired_tests(
        everyone,
        float(params.get("tost_margin", 0.1)),
        float(params.get("tost_alpha", 0.05)),
        str(params.get("tost_method", "agresti_min")),
        human,
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
        "power": power_analysis(params["power"], len(truth_map(design))),
        "individual_differences": differences,
    }


# --- glmm ---------------------------------------------------------------------------------


def glmm_tables(trials: pd.DataFrame, params: Mapping, cores: int = 1) -> dict[str, pd.DataFrame]:
    """glmm_summary (fixed effects and group SDs) and glmm_contrasts of
    `correct ~ 0 + modality + (1|rater_id) + (1|dyad_id)` on the human trials.

    params: draws, tune, chains, seed. Every row carries r_hat, ess_bulk, converged and flag.
    """
    from omnisocial.stats import glmm

    frame = _trials(trials)
    if frame.empty:
        raise ValueError("the GLMM needs human trials; the trial table is empty")
    human = human_source(trials)
    result = glmm.fit_glmm(
        frame[["rater_id", "dyad_id", "modality", "correct"]],
        glmm.DEFAULT_FORMULA,
        draws=int(params.get("draws", 2000)),
        tune=int(params.get("tune", 500)),
        chains=int(params.get("chains", 2)),
        seed=int(params.get("seed", 0)),
        cores=max(1, int(cores)),
    )
    summary = glmm.summarize(result, levels=False).assign(
        formula=result.formula,
        sampler=result.sampler,
        n_obs=result.n_obs,
        draws=result.draws,
        tune=result.tune,
        chains=result.chains,
        divergences=result.divergences,
        source=human,
    )
    if len(result.fixed_levels) >= 2:
        contrasts = GLMM_CONTRASTS.validate(glmm.contrasts(result).assign(source=human))
    else:
        log.warning("one modality only: no modality contrasts")
        contrasts = GLMM_CONTRASTS.empty()
    flagged = int((~summary["converged"]).sum())
    if flagged:
        log.warning("%d GLMM parameter(s) flagged as not converged (see the flag column)", flagged)
    return {"glmm_summary": GLMM_SUMMARY.validate(summary), "glmm_contrasts": contrasts}


# --- rasch --------------------------------------------------------------------------------


def _responses(models: pd.DataFrame, trials: pd.DataFrame) -> dict[tuple[str, str], pd.DataFrame]:
    """(modality, rater_type) -> [person, dyad_id, correct] of answered responses."""
    out = {}
    frame = _trials(trials)
    for modality, group in frame.groupby("modality", sort=True):
        out[(modality, "human")] = pd.DataFrame(
            {
                "person": group["rater_id"],
                "dyad_id": group["dyad_id"],
                "correct": group["correct"].astype(bool),
            }
        )
    answered = models[models["label"] != NON_ANSWER]
    for modality, group in answered.groupby("modality", sort=True):
        out[(modality, "model")] = pd.DataFrame(
            {
                "person": group["model"],
                "dyad_id": group["item_id"],
                "correct": group["label"] == group["truth"],
            }
        )
    return out


def partial_correlation(x, y, classes) -> tuple[float, float, float, int]:
    """(r, partial r controlling for `classes`, its two-sided p, n) on the complete cases."""
    frame = pd.DataFrame({"x": x, "y": y, "z": classes}).dropna()
    n = len(frame)
    nan = math.nan
    if n < 4 or np.ptp(frame["x"]) == 0 or np.ptp(frame["y"]) == 0:
        return nan, nan, nan, n
    r = float(stats.pearsonr(frame["x"], frame["y"]).statistic)
    rx = frame["x"] - frame.groupby("z")["x"].transform("mean")
    ry = frame["y"] - frame.groupby("z")["y"].transform("mean")
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return r, nan, nan, n
    partial = float(np.corrcoef(rx, ry)[0, 1])
    df = n - 3
    if abs(partial) >= 1:
        return r, partial, 0.0, n
    t = partial * math.sqrt(df / (1 - partial**2))
    return r, partial, float(2 * stats.t.sf(abs(t), df)), n


def _correlation(x: pd.Series, y: pd.Series) -> dict:
    joined = pd.concat({"x": x, "y": y}, axis=1, join="inner").dropna()
    out = {
        "n": len(joined),
        "pearson_r": math.nan,
        "pearson_p": math.nan,
        "spearman_r": math.nan,
        "spearman_p": math.nan,
    }
    if len(joined) >= 3 and np.ptp(joined["x"]) > 0 and np.ptp(joined["y"]) > 0:
        pearson, spearman = (
            stats.pearsonr(joined["x"], joined["y"]),
            stats.spearmanr(joined["x"], joined["y"]),
        )
        out.update(
            pearson_r=float(pearson.statistic),
            pearson_p=float(pearson.pvalue),
            spearman_r=float(spearman.statistic),
            spearman_p=float(spearman.pvalue),
        )
    return out


def rasch_tables(
    predictions: pd.DataFrame | Iterable[pd.DataFrame],
    trials: pd.DataFrame,
    design: pd.DataFrame,
    params: Mapping,
) -> dict[str, pd.DataFrame]:
    """rasch_difficulty, rasch_fits, rasch_correlations, rasch_partial (module docstring).

    params: draws, tune, chains, seed.
    """
    from omnisocial.stats.rasch import fit_rasch

    models = model_predictions(predictions, design)
    human = human_source(trials)
    truth = truth_map(design)
    difficulty, fits = [], []
    for (modality, rater_type), responses in sorted(_responses(models, trials).items()):
        source = human if rater_type == "human" else MODEL_SOURCE
        n_persons, n_items = responses["person"].nunique(), responses["dyad_id"].nunique()
        fit = {
            "modality": modality,
            "rater_type": rater_type,
            "n_persons": n_persons,
            "n_items": n_items,
            "n_responses": len(responses),
            "source": source,
        }
        if n_persons < 2 or n_items < 2:
            who = "raters" if rater_type == "human" else "models"
            reason = f"{n_persons} {who} and {n_items} dyads (2 of each needed)"
            log.warning("Rasch %s %s: no fit, %s", modality, rater_type, reason)
            fits.append(
                {**fit, "fitted": False, "reason": reason, "converged": False, "flag": "", "divergences": 0}
            )
            continue
        items, info = fit_rasch(
            responses,
            "person",
            "dyad_id",
            "correct",
            draws=int(params.get("draws", 2000)),
            tune=int(params.get("tune", 500)),
            chains=int(params.get("chains", 2)),
            seed=int(params.get("seed", 0)),
        )
        fits.append(
            {**fit, **{k: info[k] for k in RASCH_FITS.names if k in info}, "fitted": True, "reason": ""}
        )
        per_dyad = responses.groupby("dyad_id")["correct"].agg(["mean", "size"])
        difficulty.append(
            pd.DataFrame(
                {
                    "modality": modality,
                    "rater_type": rater_type,
                    "dyad_id": items["item"].astype(str).to_numpy(),
                    "difficulty": items["difficulty"].to_numpy(float),
                    "sd": items["sd"].to_numpy(float),
                    "hdi_low": items["hdi_low"].to_numpy(float),
                    "hdi_high": items["hdi_high"].to_numpy(float),
                    "source": source,
                }
            )
        )
        difficulty[-1]["truth"] = difficulty[-1]["dyad_id"].map(truth)
        difficulty[-1]["accuracy"] = difficulty[-1]["dyad_id"].map(per_dyad["mean"]).astype(float)
        difficulty[-1]["n_responses"] = difficulty[-1]["dyad_id"].map(per_dyad["size"]).astype("int64")
    table = (
        RASCH_DIFFICULTY.validate(pd.concat(difficulty, ignore_index=True))
        if difficulty
        else RASCH_DIFFICULTY.empty()
    )
    fit_table = (
        RASCH_FITS.validate(pd.DataFrame(fits, columns=RASCH_FITS.names)) if fits else RASCH_FITS.empty()
    )

    correlations = []
    for rater_type, group in table.groupby("rater_type", sort=True):
        present = [m for m in MODALITIES if m in set(group["modality"])]
        for first, second in itertools.combinations(present, 2):
            x = group[group["modality"] == first].set_index("dyad_id")["difficulty"]
            y = group[group["modality"] == second].set_index("dyad_id")["difficulty"]
            correlations.append(
                {
                    "rater_type": rater_type,
                    "modality_a": first,
                    "modality_b": second,
                    **_correlation(x, y),
                    "source": human if rater_type == "human" else MODEL_SOURCE,
                }
            )
    partial = []
    for modality in MODALITIES:
        own = table[table["modality"] == modality]
        wide = own.pivot_table(index="dyad_id", columns="rater_type", values=["accuracy", "difficulty"])
        if ("accuracy", "human") not in wide.columns or ("accuracy", "model") not in wide.columns:
            continue
        classes = wide.index.map(truth)
        for measure in ("accuracy", "difficulty"):
            r, partial_r, p_value, n = partial_correlation(
                wide[(measure, "human")].to_numpy(float), wide[(measure, "model")].to_numpy(float), classes
            )
            partial.append(
                {
                    "modality": modality,
                    "measure": measure,
                    "n": n,
                    "r": r,
                    "partial_r": partial_r,
                    "partial_p": p_value,
                    "source": human,
                }
            )
    return {
        "rasch_difficulty": table,
        "rasch_fits": fit_table,
        "rasch_correlations": (
            RASCH_CORRELATIONS.validate(pd.DataFrame(correlations))
            if correlations
            else RASCH_CORRELATIONS.empty()
        ),
        "rasch_partial": RASCH_PARTIAL.validate(pd.DataFrame(partial)) if partial else RASCH_PARTIAL.empty(),
    }

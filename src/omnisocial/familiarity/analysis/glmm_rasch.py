"""Rules glmm and rasch: the Bayesian GLMM tables and Rasch dyad difficulty with its correlations.

The choices made are listed in `omnisocial.familiarity.analysis`.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd

from omnisocial.familiarity.analysis.inputs import (
    _trials,
    human_source,
    joined_sources,
    model_predictions,
    model_sources,
)
from omnisocial.familiarity.contracts import (
    GLMM_CONTRASTS,
    GLMM_SUMMARY,
    MODALITIES,
    RASCH_CORRELATIONS,
    RASCH_DIFFICULTY,
    RASCH_FITS,
    RASCH_PARTIAL,
    RASCH_PERSONS,
)
from omnisocial.processes import fork_context
from omnisocial.settings import Glmm, Rasch
from omnisocial.stats.reliability import (
    bootstrap_corrected,
    classical_reliability,
    disattenuate,
    eap_reliability,
    share_error_variance,
)
from omnisocial.stats.sdt import (
    NON_ANSWER,
    truth_map,
)
from omnisocial.tables import NOT_APPLICABLE

# scipy is imported in the functions that use it: scipy.stats costs ~1.3 s CPU per job start

log = logging.getLogger(__name__)

# --- glmm ---------------------------------------------------------------------------------


def glmm_tables(trials: pd.DataFrame, settings: Glmm, seed: int, cores: int = 1) -> dict[str, pd.DataFrame]:
    """glmm_summary (fixed effects and group SDs) and glmm_contrasts of
    `correct ~ 0 + modality + (1|rater_id) + (1|dyad_id)` on the human trials.

    `settings`: config `analysis.glmm` whole; `seed`: `analysis.seed`. `draws`, `tune` and
    `target_accept` null are the package's own choices, as `omnisocial glmm` makes them
    (`glmm.fit_glmm`): the tuned start (0.65 where every factor is centred, else 0.8) and draws
    sized to the convergence rule, the same chains drawing on until it holds (at most
    `glmm.MAX_ROUNDS` rounds and `glmm.MAX_DRAWS` draws per chain). The convergence rule is the
    command's and the Rasch fits' (`stats.convergence`, applied by `glmm.fit_glmm` and its
    summaries): a fit with more divergent transitions than max_divergences is sampled again
    with a higher target_accept, at most 3 fits; if the last still has too many, every row is
    flagged. Every row carries r_hat, ess_bulk, ess_tail, converged, flag and the fit's
    divergences; the contrasts are on the logit scale and in percentage points of accuracy
    (`glmm.contrasts`).
    """
    from omnisocial.stats import glmm

    frame = _trials(trials)
    if frame.empty:
        # a models-only study: the GLMM is of human trials; its figure says there are none
        log.warning("no human trials (a models-only study): no GLMM fit")
        return {"glmm_summary": GLMM_SUMMARY.empty(), "glmm_contrasts": GLMM_CONTRASTS.empty()}
    human = human_source(trials)
    result = glmm.fit_glmm(
        frame[["rater_id", "dyad_id", "modality", "correct"]],
        glmm.DEFAULT_FORMULA,
        draws=settings.draws,
        tune=settings.tune,
        chains=settings.chains,
        seed=int(seed),
        cores=max(1, int(cores)),
        target_accept=settings.target_accept,
        max_divergences=settings.max_divergences,
    )
    log.info(
        "GLMM: %d draws per chain in %d round(s), target_accept %.3f, %d attempt(s)",
        result.draws,
        result.rounds,
        result.target_accept,
        result.attempts,
    )
    summary = glmm.summarize(result, levels=False).assign(
        formula=result.formula,
        sampler=result.sampler,
        n_obs=result.n_obs,
        draws=result.draws,
        tune=result.tune,
        chains=result.chains,
        divergences=result.divergences,
        target_accept=result.target_accept,
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
    from scipy import stats

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


def _reliabilities(frame: pd.DataFrame, measure: str, classes=None) -> tuple[float, float]:
    """(reliability of x, of y) over the rows of `frame` [x, y, ex, ey]: EAP reliability of
    posterior means with posterior SDs ex/ey (measure "difficulty"), classical reliability of
    shares right with their sampling variances (measure "accuracy"); with `classes`, of the
    values centred within each class (for the partial correlation)."""
    out = []
    for value, error in (("x", "ex"), ("y", "ey")):
        values = frame[value]
        if classes is not None:
            values = values - values.groupby(classes).transform("mean")
        if measure == "difficulty":
            out.append(eap_reliability(values, frame[error]))
        else:
            out.append(classical_reliability(values, frame[error]))
    return out[0], out[1]


def corrected_columns(
    name: str, r: float, rel_x: float, rel_y: float, interval: tuple[float, float], min_reliability: float
) -> dict:
    """`name` (capped at +/-1), `name`_uncapped, `name`_capped (the cap changed it), `name`_low and
    `name`_high (the bootstrap interval, `stats.reliability.bootstrap_corrected`), `name`_note.

    A reliability below `min_reliability` leaves `name`, `name`_uncapped and the interval empty,
    and the note says why: there the reliability's error term is itself off
    (docs/rasch-correction.md) and the correction overshoots."""
    uncapped = disattenuate(r, rel_x, rel_y, cap=False)
    out = {
        name: disattenuate(r, rel_x, rel_y),
        f"{name}_uncapped": uncapped,
        f"{name}_capped": bool(math.isfinite(uncapped) and abs(uncapped) > 1),
        f"{name}_low": interval[0],
        f"{name}_high": interval[1],
        f"{name}_note": "",
    }
    lowest = min(rel_x, rel_y)
    if math.isfinite(lowest) and lowest < min_reliability:
        out.update(
            {
                name: math.nan,
                f"{name}_uncapped": math.nan,
                f"{name}_low": math.nan,
                f"{name}_high": math.nan,
                f"{name}_capped": False,
            }
        )
        out[f"{name}_note"] = f"not corrected: reliability {lowest:.2f} < min_reliability {min_reliability:g}"
    return out


def corrected_partial(
    x,
    y,
    classes,
    error_x,
    error_y,
    measure: str,
    resamples: int = 0,
    seed: int = 0,
    min_reliability: float = 0.0,
) -> dict:
    """r and partial r (`partial_correlation`) with their attenuation-corrected values and, with
    `resamples`, their bootstrap intervals over the dyads; none below `min_reliability`
    (`corrected_columns`).

    measure "difficulty": error_x/y are posterior SDs of posterior means; "accuracy": the
    sampling variances of shares right (`stats.reliability`)."""
    r, partial_r, p_value, n = partial_correlation(x, y, classes)
    frame = pd.DataFrame({"x": x, "y": y, "z": classes, "ex": error_x, "ey": error_y}).dropna(
        subset=["x", "y", "z"]
    )
    rel_x, rel_y = _reliabilities(frame, measure) if n >= 4 else (math.nan, math.nan)
    part_x, part_y = _reliabilities(frame, measure, frame["z"]) if n >= 4 else (math.nan, math.nan)
    reliability = eap_reliability if measure == "difficulty" else classical_reliability
    columns = (frame["x"], frame["y"], frame["ex"], frame["ey"], reliability, resamples, seed)
    return {
        "n": n,
        "r": r,
        "partial_r": partial_r,
        "partial_p": p_value,
        "reliability_human": rel_x,
        "reliability_model": rel_y,
        **corrected_columns("r_corrected", r, rel_x, rel_y, bootstrap_corrected(*columns), min_reliability),
        **corrected_columns(
            "partial_r_corrected",
            partial_r,
            part_x,
            part_y,
            bootstrap_corrected(*columns, classes=frame["z"]),
            min_reliability,
        ),
    }


def _correlation(x: pd.Series, y: pd.Series) -> dict:
    from scipy import stats

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


def _person_rows(persons: pd.DataFrame, responses: pd.DataFrame, key: tuple[str, str], source: str):
    """The fit's person abilities as RASCH_PERSONS rows."""
    counts = responses.groupby(responses["person"].astype(str)).size()
    return persons.assign(
        modality=key[0],
        rater_type=key[1],
        person=persons["person"].astype(str),
        n_responses=persons["person"].astype(str).map(counts).astype("int64"),
        source=source,
    )[RASCH_PERSONS.names]


def _fit_one(task: tuple[pd.DataFrame, dict]):
    from omnisocial.stats.rasch import fit_rasch

    responses, settings = task
    return fit_rasch(responses, "person", "dyad_id", "correct", **settings)


def _fit_all(tasks: list[tuple[pd.DataFrame, dict]], workers: int) -> list:
    """`fit_rasch` of every task, in order; in `workers` processes when there are several fits.

    Processes, not the sampler's threads: a small fit samples its chains in one thread
    (`glmm.chain_threads`), so the job's threads are spent on the fits side by side.
    """
    if workers <= 1 or len(tasks) <= 1:
        return [_fit_one(task) for task in tasks]
    from omnisocial.stats.glmm import preload_fast_path

    preload_fast_path()
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=fork_context()) as pool:
        return list(pool.map(_fit_one, tasks))


RASCH_FIT_KEYS = (
    "draws",
    "tune",
    "chains",
    "until_converged",
    "max_draws",
    "target_accept",
    "max_divergences",
)


def rasch_tables(
    predictions: pd.DataFrame | Iterable[pd.DataFrame],
    trials: pd.DataFrame,
    design: pd.DataFrame,
    settings: Rasch,
    seed: int,
    sources: Mapping[str, str] | None = None,
    workers: int = 1,
) -> dict[str, pd.DataFrame]:
    """rasch_difficulty, rasch_fits, rasch_persons, rasch_correlations, rasch_partial (module docstring).

    settings: config `analysis.rasch` whole (the fits' draws, tune, chains, until_converged: rerun
    a fit with divergences at a higher target_accept, one that misses the R-hat/ESS targets with
    more draws, `stats.rasch`; max_draws, target_accept, max_divergences; correction_bootstrap:
    resamples of the dyads for the intervals of the corrected correlations; min_reliability: no
    corrected value below it); seed: `analysis.seed`. A side with fewer than 2 persons or dyads
    (one model) has no fit to make: its rasch_fits row says so (`fitted` False, `reason`,
    `converged` and `divergences` empty, `flag` "not applicable: <reason>").
    sources: {model: source} of models not inferred here
    (released); a models' fit says the sources of the models in it. `workers` > 1 fits the
    (modality, rater type) models in that many (forked) processes, with the same results.
    """
    models = model_predictions(predictions, design)
    human = human_source(trials)
    truth = truth_map(design)
    resamples, seed = settings.correction_bootstrap, int(seed)
    least = settings.min_reliability
    fits, to_fit = _planned_fits(_responses(models, trials), human, sources)
    fit_settings = {key: getattr(settings, key) for key in RASCH_FIT_KEYS} | {"seed": seed}
    fitted = _fit_all([(responses, fit_settings) for _, _, responses in to_fit], workers)
    difficulty, abilities = [], []
    for (row, fit, responses), (items, persons, info) in zip(to_fit, fitted, strict=True):
        key, source = (fit["modality"], fit["rater_type"]), fit["source"]
        fits[row] = {
            **fit,
            **{k: info[k] for k in RASCH_FITS.names if k in info},
            "fitted": True,
            "reason": "",
            "reliability": eap_reliability(items["difficulty"], items["sd_relative"]),
        }
        abilities.append(_person_rows(persons, responses, key, source))
        difficulty.append(_difficulty_rows(items, responses, key, source, truth))
    table = (
        RASCH_DIFFICULTY.validate(pd.concat(difficulty, ignore_index=True))
        if difficulty
        else RASCH_DIFFICULTY.empty()
    )
    fit_table = (
        RASCH_FITS.validate(pd.DataFrame(fits, columns=RASCH_FITS.names)) if fits else RASCH_FITS.empty()
    )
    correlations = _difficulty_correlations(table, human, resamples, seed, least)
    partial = _partial_correlations(table, truth, human, resamples, seed, least)
    return {
        "rasch_difficulty": table,
        "rasch_fits": fit_table,
        "rasch_persons": (
            RASCH_PERSONS.validate(pd.concat(abilities, ignore_index=True))
            if abilities
            else RASCH_PERSONS.empty()
        ),
        "rasch_correlations": (
            RASCH_CORRELATIONS.validate(pd.DataFrame(correlations))
            if correlations
            else RASCH_CORRELATIONS.empty()
        ),
        "rasch_partial": RASCH_PARTIAL.validate(pd.DataFrame(partial)) if partial else RASCH_PARTIAL.empty(),
    }


def _planned_fits(responses_by_side: Mapping, human: str, sources: Mapping[str, str] | None):
    """(rasch_fits rows in (modality, rater type) order, [(row, fit, responses)] to fit).

    A side with fewer than 2 persons or dyads (one model) has no Rasch model to fit: its row is
    complete now, 'not applicable' with the reason; the others are completed from their fits."""
    fits, to_fit = [], []
    for (modality, rater_type), responses in sorted(responses_by_side.items()):
        people = responses["person"].unique()
        source = human if rater_type == "human" else joined_sources(model_sources(people, sources))
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
            who = ("rater" if rater_type == "human" else "model") + ("" if n_persons == 1 else "s")
            reason = f"{n_persons} {who} and {n_items} dyads (2 of each needed)"
            log.warning("Rasch %s %s: no fit, %s", modality, rater_type, reason)
            fits.append(_not_applicable(fit, reason))
            continue
        to_fit.append((len(fits), fit, responses))
        fits.append(fit)  # completed from its fit, in this order
    return fits, to_fit


def _not_applicable(fit: dict, reason: str) -> dict:
    """The rasch_fits row of a side with no model to fit: not a fit that failed, so no
    convergence to judge (`converged` and `divergences` empty) and the flag says why."""
    return {
        **fit,
        "fitted": False,
        "reason": reason,
        "converged": pd.NA,
        "flag": f"{NOT_APPLICABLE}: {reason}",
        "divergences": pd.NA,
        "target_accept": math.nan,
        "reliability": math.nan,
    }


def _difficulty_rows(items, responses, key: tuple[str, str], source: str, truth: Mapping) -> pd.DataFrame:
    """One fit's dyad difficulties as RASCH_DIFFICULTY rows, with each dyad's truth, accuracy and
    responses."""
    per_dyad = responses.groupby("dyad_id")["correct"].agg(["mean", "size"])
    rows = pd.DataFrame(
        {
            "modality": key[0],
            "rater_type": key[1],
            "dyad_id": items["item"].astype(str).to_numpy(),
            "difficulty": items["difficulty"].to_numpy(float),
            "sd": items["sd"].to_numpy(float),
            "sd_relative": items["sd_relative"].to_numpy(float),
            "hdi_low": items["hdi_low"].to_numpy(float),
            "hdi_high": items["hdi_high"].to_numpy(float),
            "source": source,
        }
    )
    rows["truth"] = rows["dyad_id"].map(truth)
    rows["accuracy"] = rows["dyad_id"].map(per_dyad["mean"]).astype(float)
    rows["n_responses"] = rows["dyad_id"].map(per_dyad["size"]).astype("int64")
    return rows


def _difficulty_correlations(table: pd.DataFrame, human: str, resamples: int, seed: int, least) -> list[dict]:
    """RASCH_CORRELATIONS rows: per rater type, the difficulties of each pair of modalities
    correlated, raw and corrected for their error (`corrected_columns`)."""
    correlations = []
    for rater_type, group in table.groupby("rater_type", sort=True):
        present = [m for m in MODALITIES if m in set(group["modality"])]
        for first, second in itertools.combinations(present, 2):
            # the error of a correlation across dyads: the SD of the relative difficulty
            x = group[group["modality"] == first].set_index("dyad_id")[["difficulty", "sd_relative"]]
            y = group[group["modality"] == second].set_index("dyad_id")[["difficulty", "sd_relative"]]
            raw = _correlation(x["difficulty"], y["difficulty"])
            joined = x.merge(y, left_index=True, right_index=True, suffixes=("_x", "_y")).dropna()
            both = pd.DataFrame(
                {
                    "x": joined["difficulty_x"],
                    "y": joined["difficulty_y"],
                    "ex": joined["sd_relative_x"],
                    "ey": joined["sd_relative_y"],
                }
            )
            rel_a, rel_b = _reliabilities(both, "difficulty")
            correlations.append(
                {
                    "rater_type": rater_type,
                    "modality_a": first,
                    "modality_b": second,
                    **raw,
                    "reliability_a": rel_a,
                    "reliability_b": rel_b,
                    **corrected_columns(
                        "pearson_r_corrected",
                        raw["pearson_r"],
                        rel_a,
                        rel_b,
                        bootstrap_corrected(
                            both["x"], both["y"], both["ex"], both["ey"], eap_reliability, resamples, seed
                        ),
                        least,
                    ),
                    "source": human if rater_type == "human" else joined_sources(group["source"]),
                }
            )
    return correlations


def _partial_correlations(
    table: pd.DataFrame, truth: Mapping, human: str, resamples: int, seed: int, least
) -> list[dict]:
    """RASCH_PARTIAL rows: per modality, human against model accuracy and difficulty across the
    dyads, partialling out the truth, raw and corrected (`corrected_partial`)."""
    partial = []
    for modality in MODALITIES:
        own = table[table["modality"] == modality]
        values = ["accuracy", "difficulty", "sd_relative", "n_responses"]
        wide = own.pivot_table(index="dyad_id", columns="rater_type", values=values)
        if ("accuracy", "human") not in wide.columns or ("accuracy", "model") not in wide.columns:
            continue
        classes = np.asarray(wide.index.map(truth), dtype=object)
        for measure in ("accuracy", "difficulty"):
            x, y = wide[(measure, "human")].to_numpy(float), wide[(measure, "model")].to_numpy(float)
            if measure == "difficulty":
                error_x, error_y = (
                    wide[("sd_relative", "human")].to_numpy(float),
                    wide[("sd_relative", "model")].to_numpy(float),
                )
            else:
                error_x = share_error_variance(x, wide[("n_responses", "human")].to_numpy(float))
                error_y = share_error_variance(y, wide[("n_responses", "model")].to_numpy(float))
            partial.append(
                {
                    "modality": modality,
                    "measure": measure,
                    **corrected_partial(x, y, classes, error_x, error_y, measure, resamples, seed, least),
                    "source": human,
                }
            )
    return partial

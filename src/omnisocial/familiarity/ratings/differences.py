"""Rater covariates against per-rater accuracy, d' and c (see `omnisocial.familiarity.ratings`)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from omnisocial.stats.crowds import per_rater_sdt

# scipy is imported in the functions that use it: scipy.stats costs ~1.3 s CPU per job start

_NOT_COVARIATES = {"rater_id", "modality", "source"}
DIFFERENCE_COLUMNS = [
    "analysis",
    "modality",
    "outcome",
    "covariate",
    "n",
    "pearson_r",
    "pearson_p",
    "spearman_r",
    "spearman_p",
    "estimate",
    "std_error",
    "ci_low",
    "ci_high",
    "p_value",
    "r_squared",
    "se_type",
]


def _correlations(x: np.ndarray, y: np.ndarray) -> dict:
    from scipy import stats

    keep = ~np.isnan(x) & ~np.isnan(y)
    x, y = x[keep], y[keep]
    out = {"n": int(keep.sum()), "pearson_r": math.nan, "pearson_p": math.nan}
    out.update(spearman_r=math.nan, spearman_p=math.nan)
    if len(x) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
        pearson = stats.pearsonr(x, y)
        spearman = stats.spearmanr(x, y)
        out.update(pearson_r=float(pearson.statistic), pearson_p=float(pearson.pvalue))
        out.update(spearman_r=float(spearman.statistic), spearman_p=float(spearman.pvalue))
    return out


def individual_differences(
    trials: pd.DataFrame,
    covariates: pd.DataFrame,
    truth,
    outcomes: Sequence[str] = ("accuracy", "d_prime", "criterion"),
) -> pd.DataFrame:
    """Covariates vs rater accuracy and bias (module docstring), one tidy frame.

    analysis "correlation": one row per (modality, outcome, covariate) with n, pearson_r/p,
    spearman_r/p (NaN under 3 raters or for a constant variable). analysis "ols": one row per
    covariate of `accuracy ~ modality fixed effects + all covariates` (modality "all") with
    estimate, std_error, 95% ci_low/ci_high, p_value, the model's n and r_squared and se_type
    (HC3, or cluster by rater). Covariates are the numeric columns of `covariates` other than
    rater_id/modality/source; they join on rater_id, and on modality too when `covariates`
    has that column. A `source` column in `covariates` or `trials` is carried into the result.
    """
    import statsmodels.api as sm

    per_rater = per_rater_sdt(trials, truth)
    names = [
        c
        for c in covariates.columns
        if c not in _NOT_COVARIATES and pd.api.types.is_numeric_dtype(covariates[c])
    ]
    if not names:
        raise ValueError("covariates hold no numeric column besides rater_id/modality/source")
    keys = ["rater_id", "modality"] if "modality" in covariates.columns else ["rater_id"]
    if covariates.duplicated(keys).any():
        raise ValueError(f"covariates repeat a ({', '.join(keys)}) key")
    joined = per_rater.merge(covariates[keys + names], on=keys, how="left")
    rows = []
    for modality, group in joined.groupby("modality", sort=True):
        for outcome, name in itertools.product(outcomes, names):
            values = _correlations(group[name].to_numpy(float), group[outcome].to_numpy(float))
            rows.append(
                {
                    "analysis": "correlation",
                    "modality": modality,
                    "outcome": outcome,
                    "covariate": name,
                    **values,
                }
            )

    complete = joined.dropna(subset=["accuracy", *names]).sort_values(["modality", "rater_id"])
    levels = sorted(complete["modality"].unique())
    design = pd.DataFrame({"const": 1.0}, index=complete.index)
    for level in levels[1:]:
        design[f"modality[{level}]"] = (complete["modality"] == level).astype(float)
    for name in names:
        design[name] = complete[name].astype(float)
    clustered = complete["rater_id"].duplicated().any()
    se_type = "cluster(rater)" if clustered else "HC3"
    fit = None
    if len(complete) > design.shape[1] and np.linalg.matrix_rank(design.to_numpy()) == design.shape[1]:
        model = sm.OLS(complete["accuracy"].to_numpy(float), design)
        if clustered:
            groups = pd.factorize(complete["rater_id"])[0]
            fit = model.fit(cov_type="cluster", cov_kwds={"groups": groups})
        else:
            fit = model.fit(cov_type="HC3")
    for name in names:
        row = {"analysis": "ols", "modality": "all", "outcome": "accuracy", "covariate": name}
        row.update(n=len(complete), se_type=se_type)
        if fit is not None:
            low, high = fit.conf_int().loc[name]
            row.update(
                estimate=float(fit.params[name]),
                std_error=float(fit.bse[name]),
                ci_low=float(low),
                ci_high=float(high),
                p_value=float(fit.pvalues[name]),
                r_squared=float(fit.rsquared),
            )
        rows.append(row)
    table = pd.DataFrame(rows, columns=DIFFERENCE_COLUMNS)
    table["n"] = table["n"].astype("int64")
    sources = sorted(
        {str(s) for f in (covariates, trials) if "source" in f.columns for s in f["source"].unique()}
    )
    if sources:
        table["source"] = "; ".join(sources)
    return table


# --------------------------------------------------------------------------------------------
# Simulated rater panel (demo)
# --------------------------------------------------------------------------------------------

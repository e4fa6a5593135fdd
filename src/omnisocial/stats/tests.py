"""Paired comparisons of raters on the same dyads: McNemar, TOST equivalence, power.

Notation for two raters a and b scored on the same n items (a 2x2 table of correctness):
b = items a got right and b got wrong, c = items a got wrong and b got right (the
discordant pairs), psi = (b + c) / n the discordance, delta = (b - c) / n = acc_a - acc_b.

- McNemar (exact): under H0 (acc_a == acc_b) b ~ Binomial(b + c, 1/2); the two-sided p-value
  is the exact binomial test, identical to statsmodels' `mcnemar(table, exact=True)`.
- TOST (two one-sided tests, Schuirmann): equivalence within +/- margin is claimed when both
  H01: delta <= -margin and H02: delta >= +margin are rejected at level alpha, i.e. when the
  (1 - 2 alpha) confidence interval of delta lies inside (-margin, +margin). The tests use
  the normal approximation z = (delta_hat -/+ margin) / SE with
    paired ("wald"):        SE = sqrt(psi_hat - delta_hat^2) / sqrt(n)
                            (the Wald SE of a difference of matched proportions),
    paired ("agresti_min"): the same after adding 0.5 to each of the four cells
                            (Agresti & Min 2005), which keeps SE > 0 without discordant pairs,
    unpaired:               SE = sqrt(p_a (1 - p_a) / n_a + p_b (1 - p_b) / n_b)
                            (equals statsmodels `tost_proportions_2indep(method="wald")`).
  With the plain Wald SE and no discordant pair SE is 0: the p-values are then NaN and
  equivalence is not claimed.
- Power (no simulation; z_q is the standard normal quantile, beta = 1 - power):
    McNemar, Connor (1987):  n = [z_{1-alpha/2} sqrt(psi) + z_{1-beta} sqrt(psi - delta^2)]^2 / delta^2
    TOST, paired, true difference delta, margin m > |delta|:
        n = (z_{1-alpha} + z_q)^2 (psi - delta^2) / (m - |delta|)^2,
        with q = 1 - beta/2 when delta == 0 (both one-sided tests share the type II error)
        and q = 1 - beta otherwise (the far-side test has power ~ 1).
  psi is the expected discordance; when it is not given it is derived from the baseline
  accuracy p_b and p_a = p_b + delta assuming independent errors: psi = p_a (1-p_b) + p_b (1-p_a).
  The McNemar formula is that of the asymptotic (z) test; the exact test is slightly
  conservative, so at the formula's n its power is a few points below the target (about
  0.76-0.77 for a nominal 0.80 in the checks of tests/test_stats_scoring.py).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from scipy import stats


def _paired(correct_a: pd.Series, correct_b: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Align two correctness series by index; drop items missing from either or NA in either."""
    for name, series in (("correct_a", correct_a), ("correct_b", correct_b)):
        if not isinstance(series, pd.Series):
            raise TypeError(f"{name} must be a pandas Series indexed by item")
        if not series.index.is_unique:
            raise ValueError(f"{name} has duplicate item ids in its index")
    joined = pd.concat({"a": correct_a, "b": correct_b}, axis=1, join="inner").dropna()
    return _as_bool(joined["a"], "correct_a"), _as_bool(joined["b"], "correct_b")


def _as_bool(series: pd.Series, name: str) -> np.ndarray:
    values = series.to_numpy()
    if values.dtype != bool:
        unique = set(pd.unique(values).tolist())
        if not unique <= {0, 1}:  # True == 1 and False == 0 in a set
            raise ValueError(f"{name} must hold booleans (or 0/1), found {sorted(map(str, unique))[:5]}")
        values = values.astype(bool)
    return values


def mcnemar_exact(correct_a: pd.Series, correct_b: pd.Series) -> dict:
    """Exact McNemar test between two raters on the same items.

    The series are aligned by index (items in only one of them, or NA in either, are left
    out). Returns b (a right, b wrong), c (a wrong, b right), n_discordant = b + c, n_items
    (paired items used), statistic = min(b, c) (as statsmodels) and the exact two-sided
    p-value; p = 1 when there is no discordant pair.
    """
    a, b_ = _paired(correct_a, correct_b)
    b = int(np.sum(a & ~b_))
    c = int(np.sum(~a & b_))
    n = b + c
    p_value = 1.0 if n == 0 else float(stats.binomtest(b, n, 0.5).pvalue)
    return {
        "b": b,
        "c": c,
        "n_discordant": n,
        "n_items": len(a),
        "statistic": float(min(b, c)),
        "p_value": p_value,
    }


def _tost_z(diff, se, margin: float, alpha: float) -> dict:
    """TOST from a point estimate and its SE (arrays allowed). NaN p-values where SE is 0."""
    diff, se = np.asarray(diff, dtype=float), np.asarray(se, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        safe = np.where(se > 0, se, np.nan)
        p_lower = stats.norm.sf((diff + margin) / safe)  # H01: diff <= -margin
        p_upper = stats.norm.cdf((diff - margin) / safe)  # H02: diff >= +margin
    z = stats.norm.ppf(1 - alpha)
    p_tost = np.fmax(p_lower, p_upper)
    p_tost = np.where(np.isnan(p_lower) | np.isnan(p_upper), np.nan, p_tost)
    return {
        "ci_low": diff - z * se,
        "ci_high": diff + z * se,
        "p_lower": p_lower,
        "p_upper": p_upper,
        "p_tost": p_tost,
        "equivalent": np.where(np.isnan(p_tost), False, p_tost < alpha),
    }


def paired_tost_from_counts(b, c, n, margin: float, alpha: float = 0.05, method: str = "wald") -> dict:
    """TOST on delta = (b - c) / n from the discordant counts (arrays allowed). See module docstring."""
    b, c, n = (np.asarray(v, dtype=float) for v in (b, c, n))
    diff = (b - c) / n
    if method == "wald":
        p10, p01, total = b / n, c / n, n
    elif method == "agresti_min":
        p10, p01, total = (b + 0.5) / (n + 2), (c + 0.5) / (n + 2), n + 2
    else:
        raise ValueError(f"method must be 'wald' or 'agresti_min', not {method!r}")
    variance = np.clip((p10 + p01) - (p10 - p01) ** 2, 0, None)
    se = np.sqrt(variance / total)
    return {"diff": diff, "se": se, **_tost_z(diff, se, margin, alpha)}


def tost_difference(
    correct_a: pd.Series,
    correct_b: pd.Series,
    margin: float,
    paired: bool = True,
    alpha: float = 0.05,
    method: str = "wald",
) -> dict:
    """Equivalence (TOST) of accuracy_a - accuracy_b within +/- margin.

    Paired: items aligned by index as in `mcnemar_exact`; `method` picks the SE ("wald" or
    "agresti_min", module docstring). Unpaired: each series is its own sample (NA dropped),
    Wald SE of two independent proportions. Returns diff, se, the (1 - 2 alpha) interval
    ci_low/ci_high, the one-sided p-values p_lower (H0: diff <= -margin) and p_upper
    (H0: diff >= margin), p_tost = max of the two, equivalent = p_tost < alpha, n_a, n_b.
    """
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    if paired:
        a, b_ = _paired(correct_a, correct_b)
        if len(a) == 0:
            raise ValueError("no paired items")
        b, c = int(np.sum(a & ~b_)), int(np.sum(~a & b_))
        result = paired_tost_from_counts(b, c, len(a), margin, alpha, method)
        n_a = n_b = len(a)
    else:
        a = _as_bool(correct_a.dropna(), "correct_a")
        b_ = _as_bool(correct_b.dropna(), "correct_b")
        if len(a) == 0 or len(b_) == 0:
            raise ValueError("each sample needs at least one item")
        p_a, p_b = a.mean(), b_.mean()
        diff = p_a - p_b
        se = math.sqrt(p_a * (1 - p_a) / len(a) + p_b * (1 - p_b) / len(b_))
        result = {"diff": diff, "se": se, **_tost_z(diff, se, margin, alpha)}
        n_a, n_b = len(a), len(b_)
    out = {key: (bool(value) if key == "equivalent" else float(value)) for key, value in result.items()}
    return {**out, "margin": float(margin), "alpha": float(alpha), "n_a": n_a, "n_b": n_b}


def expected_discordance(baseline_accuracy: float, effect_size: float) -> float:
    """psi = p_a (1 - p_b) + p_b (1 - p_a), p_b = baseline, p_a = baseline + effect (independent errors)."""
    p_b = baseline_accuracy
    p_a = baseline_accuracy + effect_size
    if not (0 <= p_b <= 1 and 0 <= p_a <= 1):
        raise ValueError(f"baseline {p_b} + effect {effect_size} leaves [0, 1]")
    return p_a * (1 - p_b) + p_b * (1 - p_a)


def n_mcnemar(effect_size: float, discordance: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Pairs needed for the two-sided McNemar test (Connor 1987); NaN if delta == 0 or |delta| > psi."""
    delta, psi = abs(effect_size), discordance
    if delta == 0 or delta > psi or psi > 1:
        return math.nan
    z_a, z_b = stats.norm.ppf(1 - alpha / 2), stats.norm.ppf(power)
    return (z_a * math.sqrt(psi) + z_b * math.sqrt(psi - delta**2)) ** 2 / delta**2


def n_tost_paired(
    effect_size: float, margin: float, discordance: float, alpha: float = 0.05, power: float = 0.8
) -> float:
    """Pairs needed to show |delta| < margin by paired TOST when the true difference is effect_size.

    NaN if |effect_size| >= margin (equivalence cannot be expected) or |delta| > psi.
    """
    delta, psi = abs(effect_size), discordance
    if delta >= margin or delta > psi or psi > 1:
        return math.nan
    beta = 1 - power
    z_a = stats.norm.ppf(1 - alpha)
    z_b = stats.norm.ppf(1 - beta / 2) if delta == 0 else stats.norm.ppf(1 - beta)
    return (z_a + z_b) ** 2 * (psi - delta**2) / (margin - delta) ** 2


def power_table(
    effect_sizes,
    margins,
    alpha: float = 0.05,
    power: float = 0.8,
    baseline_accuracy: float = 0.6,
    discordance: float | None = None,
) -> pd.DataFrame:
    """Dyads needed per (effect size, margin): to detect the effect, and to show equivalence.

    One row per combination. effect_size is the true accuracy difference delta (acc_a - acc_b);
    n_mcnemar is the number of paired dyads for the exact McNemar test to detect it (two-sided
    alpha, given power); n_tost the number for the paired TOST to establish equivalence within
    +/- margin when the true difference is effect_size (one-sided alpha per test). Both are
    rounded up; NaN (pandas NA) where undefined (delta == 0 for McNemar, |delta| >= margin for
    TOST). `discordance` is the expected share of discordant dyads; None derives it from
    `baseline_accuracy` assuming independent errors (module docstring).
    """
    rows = []
    for effect, margin in itertools.product(effect_sizes, margins):
        psi = expected_discordance(baseline_accuracy, effect) if discordance is None else discordance
        detect = n_mcnemar(effect, psi, alpha, power)
        equivalent = n_tost_paired(effect, margin, psi, alpha, power)
        rows.append(
            {
                "effect_size": float(effect),
                "margin": float(margin),
                "alpha": float(alpha),
                "power": float(power),
                "baseline_accuracy": float(baseline_accuracy),
                "discordance": float(psi),
                "n_mcnemar": pd.NA if math.isnan(detect) else math.ceil(detect),
                "n_tost": pd.NA if math.isnan(equivalent) else math.ceil(equivalent),
            }
        )
    table = pd.DataFrame(
        rows,
        columns=[
            "effect_size",
            "margin",
            "alpha",
            "power",
            "baseline_accuracy",
            "discordance",
            "n_mcnemar",
            "n_tost",
        ],
    )
    return table.astype({"n_mcnemar": "Int64", "n_tost": "Int64"})

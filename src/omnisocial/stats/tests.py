"""Paired comparisons of raters on the same dyads: McNemar, TOST equivalence, power.

Notation for two raters a and b scored on the same n items (a 2x2 table of correctness):
b = items a got right and b got wrong, c = items a got wrong and b got right (the
discordant pairs), psi = (b + c) / n the discordance, delta = (b - c) / n = acc_a - acc_b.

- McNemar (exact): under H0 (acc_a == acc_b) b ~ Binomial(b + c, 1/2); the two-sided p-value
  is the exact binomial test, identical to statsmodels' `mcnemar(table, exact=True)`.
- TOST (two one-sided tests, Schuirmann): equivalence within +/- margin is claimed when both
  H01: delta <= -margin and H02: delta >= +margin are rejected at level alpha, i.e. when the
  (1 - 2 alpha) confidence interval of delta lies inside (-margin, +margin). `method`:
    "tango" (default):  Tango's (1998) score test and interval: z(delta0) = (b - c - n delta0)
                        / sqrt(n (2 q + delta0 (1 - delta0))), q the restricted maximum
                        likelihood estimate of P(a wrong, b right) under delta = delta0
                        (`tango_z`); p_lower = P(Z > z(-margin)), p_upper = P(Z < z(margin)),
                        the interval inverts the test (`tango_interval`). Finite without
                        discordant pairs. Its type-I error is close to alpha, not bounded by
                        it: the exact size (sup over the discordance at |delta| = margin,
                        `tost_exact_size`) swings with n; at alpha 0.05 and the margin 0.1 it
                        is 0.048 at n = 96 (0.045-0.048 for discordances 0.12-0.16) but 0.053
                        at n = 60, 0.058 at n = 100 and 0.057 at n = 200, the excess where the
                        discordance equals the margin (every discordant pair one way). The
                        Wald test's size is 0.078 at n = 96, 0.136 at n = 60 and 0.093 at
                        n = 200 (exact enumeration, tests/test_stats_paired.py);
    "wald":             z = (delta_hat -/+ margin) / SE, SE = sqrt(psi_hat - delta_hat^2) / sqrt(n);
                        with no discordant pair SE is 0: the p-values are NaN and equivalence is
                        not claimed;
    "agresti_min":      Agresti & Min (2005): 0.5 added to each of the four cells, the Wald
                        interval centred at (b - c) / (n + 2) with the adjusted cells' SE over
                        n + 2 (anti-conservative like Wald at small discordance);
    unpaired:           SE = sqrt(p_a (1 - p_a) / n_a + p_b (1 - p_b) / n_b)
                        (equals statsmodels `tost_proportions_2indep(method="wald")`).
  `diff` is always the observed (b - c) / n.
- Power. Sample sizes from normal approximations (z_q the standard normal quantile,
  beta = 1 - power):
    McNemar, Connor (1987):  n = [z_{1-alpha/2} sqrt(psi) + z_{1-beta} sqrt(psi - delta^2)]^2 / delta^2
    TOST, paired, true difference delta, margin m > |delta|:
        n = (z_{1-alpha} + z_q)^2 (psi - delta^2) / (m - |delta|)^2,
        with q = 1 - beta/2 when delta == 0 (both one-sided tests share the type II error)
        and q = 1 - beta otherwise (the far-side test has power ~ 1).
  Connor's n gives the exact McNemar test only 0.77-0.78 power for a nominal 0.80, so the
  McNemar sample size of `power_table` is searched by exact power instead (`n_mcnemar_exact`:
  the discordant count d ~ Binomial(n, psi), b | d ~ Binomial(d, (psi + delta) / (2 psi)),
  summed over the exact test's rejection region). `tost_exact_power` enumerates every
  multinomial table (b, c, n - b - c) for the exact chance that TOST claims equivalence;
  `tost_exact_size` takes its sup over the discordance at the margin (the test's size).
  psi is the expected discordance; when it is not given it is derived from the baseline
  accuracy p_b and p_a = p_b + delta assuming independent errors: psi = p_a (1-p_b) + p_b (1-p_a).
- Multiple testing: `holm` adjusts a family of p-values (Holm 1979, statsmodels).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

# scipy is imported in the functions that use it: scipy.stats costs ~1.3 s CPU per job start


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
    from scipy import stats

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


def _tost_z(diff, se, margin: float, alpha: float, centre=None) -> dict:
    """TOST from a point estimate and its SE (arrays allowed). NaN p-values where SE is 0.

    `centre` (default: diff) is where the interval and the z statistics are centred
    (Agresti-Min centre the adjusted difference, not the observed one)."""
    from scipy import stats

    diff, se = np.asarray(diff, dtype=float), np.asarray(se, dtype=float)
    centre = diff if centre is None else np.asarray(centre, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        safe = np.where(se > 0, se, np.nan)
        p_lower = stats.norm.sf((centre + margin) / safe)  # H01: diff <= -margin
        p_upper = stats.norm.cdf((centre - margin) / safe)  # H02: diff >= +margin
    z = stats.norm.ppf(1 - alpha)
    return {"ci_low": centre - z * se, "ci_high": centre + z * se, **_decision(p_lower, p_upper, alpha)}


def _decision(p_lower, p_upper, alpha: float) -> dict:
    p_tost = np.fmax(p_lower, p_upper)
    p_tost = np.where(np.isnan(p_lower) | np.isnan(p_upper), np.nan, p_tost)
    return {
        "p_lower": p_lower,
        "p_upper": p_upper,
        "p_tost": p_tost,
        "equivalent": np.where(np.isnan(p_tost), False, p_tost < alpha),
    }


def tango_z(b, c, n, delta0):
    """Tango's (1998) score statistic for H0: delta = delta0 (arrays broadcast).

    z = (b - c - n delta0) / sqrt(n (2 q + delta0 (1 - delta0))), q the restricted maximum
    likelihood estimate of P(a wrong, b right) under delta = delta0:
    q = (sqrt(B^2 - 4 A C) - B) / (2 A), A = 2n, B = -b - c + (2n - b + c) delta0,
    C = -c delta0 (1 - delta0). z decreases in delta0; it is NaN only at |delta0| = 1.
    """
    b, c, n, d = (np.asarray(v, dtype=float) for v in (b, c, n, delta0))
    a_, b_, c_ = 2 * n, -b - c + (2 * n - b + c) * d, -c * d * (1 - d)
    q = (np.sqrt(np.clip(b_**2 - 4 * a_ * c_, 0, None)) - b_) / (2 * a_)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (b - c - n * d) / np.sqrt(n * np.clip(2 * q + d * (1 - d), 0, None))


def tango_interval(b, c, n, level: float = 0.9, iterations: int = 60):
    """Tango's score interval of delta at confidence `level`: {delta0 : |tango_z| <= z_(1+level)/2}.

    Found by bisection on each side of the estimate (vectorised; 60 halvings of [-1, 1]
    leave an error below 1e-17). Returns (low, high) arrays."""
    from scipy import stats

    b, c, n = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (b, c, n)))
    z = stats.norm.ppf((1 + level) / 2)
    estimate = (b - c) / n

    def solve(lo, hi, target_sign):
        lo, hi = lo.copy(), hi.copy()
        for _ in range(iterations):
            mid = (lo + hi) / 2
            inside = target_sign * tango_z(b, c, n, mid) <= z  # mid lies in the interval
            # lower limit: inside means the limit is below mid; upper limit: above mid
            if target_sign > 0:
                hi, lo = np.where(inside, mid, hi), np.where(inside, lo, mid)
            else:
                lo, hi = np.where(inside, mid, lo), np.where(inside, hi, mid)
        return (lo + hi) / 2

    low = solve(np.full_like(estimate, -1.0), estimate, +1)
    high = solve(estimate, np.full_like(estimate, 1.0), -1)
    return low, high


PAIRED_METHODS = ("tango", "agresti_min", "wald")


def paired_tost_from_counts(b, c, n, margin: float, alpha: float = 0.05, method: str = "tango") -> dict:
    """TOST on delta = (b - c) / n from the discordant counts (arrays allowed). See module docstring.

    diff is always the observed (b - c) / n; se the Wald SE for "wald" and "tango" (for
    "tango" it only describes the estimate: the tests and the interval are the score ones)
    and the adjusted SE for "agresti_min"."""
    from scipy import stats

    b, c, n = (np.asarray(v, dtype=float) for v in (b, c, n))
    diff = (b - c) / n
    if method == "tango":
        se = np.sqrt(np.clip((b + c) / n - diff**2, 0, None) / n)
        p_lower = stats.norm.sf(tango_z(b, c, n, -margin))
        p_upper = stats.norm.cdf(tango_z(b, c, n, margin))
        low, high = tango_interval(b, c, n, level=1 - 2 * alpha)
        return {"diff": diff, "se": se, "ci_low": low, "ci_high": high, **_decision(p_lower, p_upper, alpha)}
    if method == "wald":
        p10, p01, total, centre = b / n, c / n, n, diff
    elif method == "agresti_min":
        p10, p01, total = (b + 0.5) / (n + 2), (c + 0.5) / (n + 2), n + 2
        centre = (b - c) / (n + 2)
    else:
        raise ValueError(f"method must be one of {', '.join(PAIRED_METHODS)}, not {method!r}")
    variance = np.clip((p10 + p01) - (p10 - p01) ** 2, 0, None)
    se = np.sqrt(variance / total)
    return {"diff": diff, "se": se, **_tost_z(diff, se, margin, alpha, centre)}


def tost_difference(
    correct_a: pd.Series,
    correct_b: pd.Series,
    margin: float,
    paired: bool = True,
    alpha: float = 0.05,
    method: str = "tango",
) -> dict:
    """Equivalence (TOST) of accuracy_a - accuracy_b within +/- margin.

    Paired: items aligned by index as in `mcnemar_exact`; `method` picks the interval
    ("tango", "agresti_min" or "wald", module docstring). Unpaired: each series is its own
    sample (NA dropped), Wald SE of two independent proportions. Returns diff, se, the (1 - 2 alpha) interval
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
    from scipy import stats

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
    from scipy import stats

    delta, psi = abs(effect_size), discordance
    if delta >= margin or delta > psi or psi > 1:
        return math.nan
    beta = 1 - power
    z_a = stats.norm.ppf(1 - alpha)
    z_b = stats.norm.ppf(1 - beta / 2) if delta == 0 else stats.norm.ppf(1 - beta)
    return (z_a + z_b) ** 2 * (psi - delta**2) / (margin - delta) ** 2


def _all_tables(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (b, c) with b + c <= n."""
    b, c = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = b + c <= n
    return b[keep], c[keep]


def _multinomial_pmf(b, c, n: int, p10: float, p01: float) -> np.ndarray:
    from scipy import stats

    counts = np.stack([b, c, n - b - c], axis=1)
    rest = max(0.0, 1.0 - p10 - p01)
    return np.exp(stats.multinomial.logpmf(counts, n, [p10, p01, rest]))


def tost_exact_power(
    n: int, effect_size: float, discordance: float, margin: float, alpha: float = 0.05, method: str = "tango"
) -> float:
    """P(paired TOST claims equivalence), exactly: the sum of the multinomial probabilities of
    every table (b, c, n - b - c) whose test is significant, with P(a right, b wrong) =
    (psi + delta) / 2 and P(a wrong, b right) = (psi - delta) / 2. At |delta| = margin it is the
    type-I error. NaN if |delta| > psi."""
    delta, psi, n = float(effect_size), float(discordance), int(n)
    if abs(delta) > psi or psi > 1 or n < 1:
        return math.nan
    b, c = _all_tables(n)
    significant = _tost_claims(b, c, n, margin, alpha, method)
    return float(_multinomial_pmf(b, c, n, (psi + delta) / 2, (psi - delta) / 2)[significant].sum())


def _tost_claims(b, c, n: int, margin: float, alpha: float, method: str) -> np.ndarray:
    """Whether paired TOST claims equivalence on each table (b, c, n - b - c)."""
    from scipy import stats

    if method == "tango":  # the decision needs the two score statistics only, not the interval
        z = stats.norm.ppf(1 - alpha)
        return (tango_z(b, c, n, -margin) > z) & (tango_z(b, c, n, margin) < -z)
    return paired_tost_from_counts(b, c, n, margin, alpha, method)["equivalent"]


def tost_exact_size(n: int, margin: float, alpha: float = 0.05, method: str = "tango") -> tuple[float, float]:
    """(size, discordance at the size): the exact type-I error of paired TOST with n pairs.

    H0 is |delta| >= margin; the chance of claiming equivalence is largest on its edge
    |delta| = margin, where it still depends on the discordance psi in [margin, 1]. The size
    is the sup over psi of that chance (`tost_exact_power` at delta = +/- margin): each
    claiming table's multinomial probability is summed on a grid of max(451, n + 1)
    discordances (the chance is a polynomial of degree n in psi), and the best grid point is
    refined by bounded maximisation between its neighbours. psi = margin means every
    discordant pair goes one way. NaN for n < 1."""
    from scipy import optimize, special

    n, margin = int(n), float(margin)
    if n < 1:
        return math.nan, math.nan
    b, c = _all_tables(n)
    claims = _tost_claims(b, c, n, margin, alpha, method)
    b, c = b[claims].astype(float), c[claims].astype(float)
    rest = n - b - c
    log_coefficient = special.gammaln(n + 1) - special.gammaln(b + 1) - special.gammaln(c + 1)
    log_coefficient -= special.gammaln(rest + 1)

    def chance(psi: float) -> float:
        """Both edges: delta = +margin (b the larger cell) and -margin (c the larger cell)."""
        high, low = (psi + margin) / 2, max(psi - margin, 0.0) / 2
        plus = special.xlogy(b, high) + special.xlogy(c, low)
        minus = special.xlogy(b, low) + special.xlogy(c, high)
        other = special.xlogy(rest, max(1.0 - psi, 0.0)) + log_coefficient
        return max(float(np.exp(plus + other).sum()), float(np.exp(minus + other).sum()))

    grid = np.linspace(margin, 1.0, max(451, n + 1))
    values = np.array([chance(psi) for psi in grid])
    best = int(values.argmax())
    size, at = float(values[best]), float(grid[best])
    if len(grid) > 1 and margin < 1:
        low, high = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
        fit = optimize.minimize_scalar(
            lambda psi: -chance(psi), bounds=(low, high), method="bounded", options={"xatol": 1e-10}
        )
        if -fit.fun > size:
            size, at = float(-fit.fun), float(fit.x)
    return size, at


def _mcnemar_power_given_d(d_max: int, share: float, alpha: float) -> np.ndarray:
    """g[d] = P(exact McNemar rejects | d discordant pairs), b | d ~ Binomial(d, share).

    The two-sided exact p-value is min(1, 2 min(P(B <= b), P(B >= b))) with B ~ Bin(d, 1/2);
    it is <= alpha exactly when b <= k_d or b >= d - k_d, k_d the largest k with
    2 P(B <= k) <= alpha (k_d = -1: no rejection possible)."""
    from scipy import stats

    d = np.arange(d_max + 1)
    k = stats.binom.ppf(alpha / 2, d, 0.5)
    k = np.where(2 * stats.binom.cdf(k, d, 0.5) <= alpha * (1 + 1e-12), k, k - 1)
    return stats.binom.cdf(k, d, share) + stats.binom.sf(d - k - 1, d, share)


def mcnemar_exact_power(n: int, effect_size: float, discordance: float, alpha: float = 0.05) -> float:
    """Exact power of the exact (conditional) McNemar test with n pairs: the discordant count
    d ~ Binomial(n, psi) and b | d ~ Binomial(d, (psi + delta) / (2 psi)); NaN if |delta| > psi."""
    from scipy import stats

    delta, psi = float(effect_size), float(discordance)
    if abs(delta) > psi or psi > 1 or psi <= 0 or n < 1:
        return math.nan
    g = _mcnemar_power_given_d(int(n), (psi + delta) / (2 * psi), alpha)
    return float(stats.binom.pmf(np.arange(n + 1), n, psi) @ g)


def n_mcnemar_exact(
    effect_size: float, discordance: float, alpha: float = 0.05, power: float = 0.8, start: float = 0.75
) -> float:
    """The fewest pairs whose exact power (`mcnemar_exact_power`) reaches `power`; NaN where
    `n_mcnemar` is. The search scans upward from `start` times the normal approximation
    (the exact test is conservative, so the answer lies above that). Exact power is a sawtooth
    in n: a few n just above the answer can fall back below the target."""
    from scipy import stats

    approx = n_mcnemar(effect_size, discordance, alpha, power)
    if math.isnan(approx):
        return math.nan
    delta, psi = abs(effect_size), discordance
    share = (psi + delta) / (2 * psi)
    n = max(1, math.floor(start * approx))
    d_max = max(2 * math.ceil(approx) + 50, n + 50)
    g = _mcnemar_power_given_d(d_max, share, alpha)
    while True:
        if n > d_max:
            d_max *= 2
            g = _mcnemar_power_given_d(d_max, share, alpha)
        if stats.binom.pmf(np.arange(n + 1), n, psi) @ g[: n + 1] >= power:
            return float(n)
        n += 1


def power_table(
    effect_sizes,
    margins,
    alpha: float = 0.05,
    power: float = 0.8,
    baseline_accuracy: float = 0.6,
    discordance: float | None = None,
    n_design: int | None = None,
    method: str = "tango",
) -> pd.DataFrame:
    """Dyads needed per (effect size, margin): to detect the effect, and to show equivalence.

    One row per combination. effect_size is the true accuracy difference delta (acc_a - acc_b);
    n_mcnemar is the fewest paired dyads for which the exact McNemar test reaches the power
    (exact power, `n_mcnemar_exact`), n_mcnemar_approx Connor's normal approximation (whose
    n gives the exact test only about 0.76-0.79 power); n_tost the number for the paired TOST
    to establish equivalence within +/- margin when the true difference is effect_size (normal
    approximation, one-sided alpha per test). All rounded up; NaN (pandas NA) where undefined
    (delta == 0 for McNemar, |delta| >= margin for TOST). `discordance` is the expected share
    of discordant dyads; None derives it from `baseline_accuracy` assuming independent errors.

    With `n_design`: power_mcnemar_design and power_tost_design are the exact powers at that
    many dyads (TOST with `method`), tost_reachable says whether power_tost_design reaches
    the target power, tost_size_design is the TOST's exact size at the row's margin and alpha
    (`tost_exact_size`: the sup over the discordance, the same for every effect size), and
    `note` says in words when equivalence or detection is out of reach, or when that size
    exceeds alpha.
    """
    rows = []
    detect_cache: dict[tuple[float, float], float] = {}
    size_cache: dict[float, float] = {}
    for effect, margin in itertools.product(effect_sizes, margins):
        psi = expected_discordance(baseline_accuracy, effect) if discordance is None else discordance
        key = (float(effect), float(psi))
        if key not in detect_cache:
            detect_cache[key] = n_mcnemar_exact(effect, psi, alpha, power)
        detect, approx = detect_cache[key], n_mcnemar(effect, psi, alpha, power)
        equivalent = n_tost_paired(effect, margin, psi, alpha, power)
        row = {
            "effect_size": float(effect),
            "margin": float(margin),
            "alpha": float(alpha),
            "power": float(power),
            "baseline_accuracy": float(baseline_accuracy),
            "discordance": float(psi),
            "n_mcnemar": pd.NA if math.isnan(detect) else math.ceil(detect),
            "n_mcnemar_approx": pd.NA if math.isnan(approx) else math.ceil(approx),
            "n_tost": pd.NA if math.isnan(equivalent) else math.ceil(equivalent),
            "power_mcnemar_design": math.nan,
            "power_tost_design": math.nan,
            "tost_reachable": pd.NA,
            "tost_size_design": math.nan,
            "note": "",
        }
        if n_design:
            if float(margin) not in size_cache:
                size_cache[float(margin)] = tost_exact_size(n_design, margin, alpha, method)[0]
            row["tost_size_design"] = size_cache[float(margin)]
            row["power_mcnemar_design"] = (
                mcnemar_exact_power(n_design, effect, psi, alpha) if effect != 0 else math.nan
            )
            row["power_tost_design"] = (
                tost_exact_power(n_design, effect, psi, margin, alpha, method)
                if abs(effect) < margin
                else math.nan
            )
            notes = []
            if not math.isnan(row["power_tost_design"]):
                row["tost_reachable"] = bool(row["power_tost_design"] >= power)
                if not row["tost_reachable"]:
                    notes.append(
                        f"equivalence within {margin:g} out of reach with {n_design} dyads "
                        f"(exact chance {row['power_tost_design']:.2g} of showing it)"
                    )
            if not math.isnan(row["power_mcnemar_design"]) and row["power_mcnemar_design"] < power:
                notes.append(
                    f"a difference of {effect:g} is detected with exact power "
                    f"{row['power_mcnemar_design']:.2f} only"
                )
            if row["tost_size_design"] > alpha:
                notes.append(
                    f"the TOST at margin {margin:g} has exact size {row['tost_size_design']:.3f} "
                    f"with {n_design} dyads, above alpha {alpha:g}"
                )
            row["note"] = "; ".join(notes)
        rows.append(row)
    table = pd.DataFrame(rows, columns=POWER_COLUMNS)
    return table.astype(
        {"n_mcnemar": "Int64", "n_mcnemar_approx": "Int64", "n_tost": "Int64", "tost_reachable": "boolean"}
    )


POWER_COLUMNS = [
    "effect_size",
    "margin",
    "alpha",
    "power",
    "baseline_accuracy",
    "discordance",
    "n_mcnemar",
    "n_mcnemar_approx",
    "n_tost",
    "power_mcnemar_design",
    "power_tost_design",
    "tost_reachable",
    "tost_size_design",
    "note",
]


def holm(p_values) -> np.ndarray:
    """Holm-adjusted p-values (`statsmodels multipletests(method="holm")`) over the finite
    entries; NaN stays NaN and does not count towards the family size."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    finite = np.isfinite(p)
    if finite.any():
        from statsmodels.stats.multitest import multipletests

        out[finite] = multipletests(p[finite], method="holm")[1]
    return out

"""Agreement between judges, and between automatic and human scores.

- `krippendorff_alpha`: from its definition (Krippendorff 2011, "Computing Krippendorff's
  alpha-reliability"): the coincidence matrix o_ck of pairable values (each unit with m_u
  >= 2 values adds 1/(m_u - 1) per ordered pair of its values), n_c = sum_k o_ck,
  D_o = sum o_ck d2_ck / n, D_e = sum n_c n_k d2_ck / (n (n - 1)), alpha = 1 - D_o / D_e;
  d2 nominal = [c != k], interval = (c - k)^2, ordinal = (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2.
  Missing values (NaN) are allowed; units with fewer than two values are dropped.
- `icc`: ICC(2,1) and ICC(2,k) of Shrout & Fleiss (1979), two-way random effects, absolute
  agreement, from the two-way ANOVA mean squares; units with a missing rating are dropped.
- `spearman_with_humans`: Spearman's rho (scipy) between automatic and human scores on the
  items both have.
- `rater_agreement`: all of the above between raters of one long table (alpha at the asked
  levels, ICC where at least 2 raters scored 2 units alike, the share of units every rater
  scored identically), one row a group: how and the streaming tasks report it alike.

Data layout everywhere: a (raters x units) array, or a long frame via `to_matrix`.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

LEVELS = ("nominal", "ordinal", "interval")
AGREEMENT_COLUMNS = (
    "n_judges",
    "n_items",
    "n_complete",
    "alpha_nominal",
    "alpha_ordinal",
    "alpha_interval",
    "icc_2_1",
    "icc_2_k",
    "exact_agreement",
)
log = logging.getLogger(__name__)


def to_matrix(
    frame: pd.DataFrame, rater: str = "judge", unit: str = "item_id", value: str = "score"
) -> pd.DataFrame:
    """Long (rater, unit, value) rows -> raters x units frame, NaN where a rater gave no value."""
    duplicated = frame.duplicated([rater, unit])
    if duplicated.any():
        row = frame[duplicated].iloc[0]
        raise ValueError(f"two values for rater {row[rater]!r} on unit {row[unit]!r}")
    return frame.pivot(index=rater, columns=unit, values=value).astype(float)


def _coincidences(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, coincidence matrix o_ck) of a raters x units array."""
    data = np.asarray(matrix, dtype=float)
    if data.ndim != 2:
        raise ValueError("expected a 2-D raters x units array")
    values = np.unique(data[np.isfinite(data)])
    index = {v: i for i, v in enumerate(values)}
    o = np.zeros((len(values), len(values)))
    for column in data.T:
        present = column[np.isfinite(column)]
        m = present.size
        if m < 2:
            continue
        counts = np.zeros(len(values))
        for v in present:
            counts[index[v]] += 1
        # ordered pairs of distinct raters: counts_c * counts_k, minus the self-pairs on the diagonal
        o += (np.outer(counts, counts) - np.diag(counts)) / (m - 1)
    return values, o


def _delta2(values: np.ndarray, n_c: np.ndarray, level: str) -> np.ndarray:
    if level == "nominal":
        return 1.0 - np.eye(len(values))
    if level == "interval":
        return np.subtract.outer(values, values) ** 2
    if level == "ordinal":
        cumulative = np.concatenate([[0.0], np.cumsum(n_c)])
        low = np.minimum.outer(np.arange(len(values)), np.arange(len(values)))
        high = np.maximum.outer(np.arange(len(values)), np.arange(len(values)))
        between = cumulative[high + 1] - cumulative[low]  # sum of n_g for g from c to k
        return (between - (n_c[:, None] + n_c[None, :]) / 2.0) ** 2
    raise ValueError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")


def krippendorff_alpha(matrix, level: str = "interval") -> float:
    """Krippendorff's alpha of a raters x units array (NaN = missing).

    NaN when there are fewer than two pairable values or no variation at all (D_e = 0).
    """
    values, o = _coincidences(np.asarray(matrix, dtype=float))
    n_c = o.sum(axis=1)
    n = n_c.sum()
    if n < 2 or len(values) == 0:
        return float("nan")
    d2 = _delta2(values, n_c, level)
    observed = (o * d2).sum() / n
    expected = (np.outer(n_c, n_c) * d2).sum() / (n * (n - 1))
    if expected == 0:
        return float("nan")
    return float(1.0 - observed / expected)


@dataclass(frozen=True)
class ICCResult:
    icc_2_1: float  # a single rater's reliability
    icc_2_k: float  # reliability of the mean of the k raters
    n_units: int
    k_raters: int
    ms_rows: float
    ms_cols: float
    ms_error: float


def icc(matrix) -> ICCResult:
    """ICC(2,1) and ICC(2,k) (Shrout & Fleiss 1979) of a raters x units array.

    With n units (targets) and k raters, from the two-way ANOVA:
    ICC(2,1) = (MSR - MSE) / (MSR + (k - 1) MSE + k (MSC - MSE) / n),
    ICC(2,k) = (MSR - MSE) / (MSR + (MSC - MSE) / n),
    where R = units, C = raters. Units with any missing rating are dropped.
    """
    data = np.asarray(matrix, dtype=float).T  # units x raters
    data = data[np.all(np.isfinite(data), axis=1)]
    n, k = data.shape
    if n < 2 or k < 2:
        raise ValueError(f"ICC needs at least 2 complete units and 2 raters (have {n} x {k})")
    grand = data.mean()
    ss_rows = k * ((data.mean(axis=1) - grand) ** 2).sum()
    ss_cols = n * ((data.mean(axis=0) - grand) ** 2).sum()
    ss_error = ((data - grand) ** 2).sum() - ss_rows - ss_cols
    msr, msc = ss_rows / (n - 1), ss_cols / (k - 1)
    mse = ss_error / ((n - 1) * (k - 1))
    denominator_1 = msr + (k - 1) * mse + k * (msc - mse) / n
    denominator_k = msr + (msc - mse) / n
    nan = float("nan")
    return ICCResult(
        icc_2_1=float((msr - mse) / denominator_1) if denominator_1 != 0 else nan,
        icc_2_k=float((msr - mse) / denominator_k) if denominator_k != 0 else nan,
        n_units=int(n),
        k_raters=int(k),
        ms_rows=float(msr),
        ms_cols=float(msc),
        ms_error=float(mse),
    )


@dataclass(frozen=True)
class SpearmanResult:
    rho: float
    p_value: float
    n: int


def spearman_with_humans(automatic, human) -> SpearmanResult:
    """Spearman's rho between automatic and human scores, on items where both are present.

    Accepts two equal-length sequences, or two Series indexed by item (aligned on the index).
    """
    from scipy.stats import spearmanr

    if isinstance(automatic, pd.Series) and isinstance(human, pd.Series):
        automatic, human = automatic.align(human, join="inner")
    a, h = np.asarray(automatic, dtype=float), np.asarray(human, dtype=float)
    if a.shape != h.shape:
        raise ValueError(f"automatic and human scores differ in length ({a.size} vs {h.size})")
    keep = np.isfinite(a) & np.isfinite(h)
    n = int(keep.sum())
    if n < 3:
        return SpearmanResult(float("nan"), float("nan"), n)
    result = spearmanr(a[keep], h[keep])
    return SpearmanResult(float(result.statistic), float(result.pvalue), n)


def rater_agreement(
    frame: pd.DataFrame,
    rater: str = "judge",
    unit: str = "item_id",
    value: str = "score",
    levels: tuple[str, ...] = ("ordinal", "interval"),
) -> dict:
    """AGREEMENT_COLUMNS of long (rater, unit, value) rows; NaN values are missing ratings.

    alpha at `levels` (the others NaN); ICC(2,1) / ICC(2,k) and exact agreement over the
    units every rater scored (`n_complete`); NaN where there is too little to compute.
    """
    matrix = to_matrix(frame.dropna(subset=[value]), rater=rater, unit=unit, value=value)
    data = matrix.to_numpy()
    complete = matrix.dropna(axis=1)
    row = {
        "n_judges": int(matrix.shape[0]),
        "n_items": int(matrix.shape[1]),
        "n_complete": int(complete.shape[1]) if matrix.shape[0] >= 2 else 0,
    }
    for level in LEVELS:
        row[f"alpha_{level}"] = krippendorff_alpha(data, level) if level in levels else math.nan
    row |= {"icc_2_1": math.nan, "icc_2_k": math.nan, "exact_agreement": math.nan}
    if matrix.shape[0] >= 2 and complete.shape[1]:
        row["exact_agreement"] = float((complete.nunique(axis=0) == 1).mean())
        try:
            result = icc(data)
            row["icc_2_1"], row["icc_2_k"] = result.icc_2_1, result.icc_2_k
        except ValueError as error:
            log.info("ICC not computed: %s", error)
    return row

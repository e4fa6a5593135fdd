"""Formula parsing, data preparation, simulation, and the fast path's design and priors.

`standard_design` builds what the fast path needs from the data alone, without bambi: the level
order of the fixed factor and of each grouping factor, the one-hot design of the fixed factor,
and bambi 0.17's automatic priors for a Bernoulli logit model
(`bambi/priors/scaler.py`, `PriorScaler`):

- the `0 + F` term (categorical, one column per level): Normal(mu=0, sigma=1) per level;
- each `(1|G)` intercept: Normal(0, sigma_G) with sigma_G ~ HalfNormal(s), where
  s = sqrt(2.5^2 + sum_m 1^2 * mean(X[:, m])^2), mean(X[:, m]) the share of rows at level m
  (`PriorScaler.get_intercept_stats`, which adjusts the intercept scale by the common terms).

Levels are sorted as strings, as formulae orders them (the columns are strings here).
`tests/test_glmm_rasch.py` checks levels, design and priors against a `bambi.Model`.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

log = logging.getLogger("omnisocial.stats.glmm")

_NAME = r"[A-Za-z_][A-Za-z0-9_.]*"
_GROUP_TERM = re.compile(rf"^\(\s*1\s*\|\s*({_NAME})\s*\)$")
_TRUE = {"true", "1", "yes", "1.0"}
_FALSE = {"false", "0", "no", "0.0"}


# --- formula ----------------------------------------------------------------------------


@dataclass(frozen=True)
class StandardFormula:
    """`response ~ 0 + fixed + (1|group_1) + ... + (1|group_k)`."""

    response: str
    fixed: str
    groups: tuple[str, ...]

    @property
    def group_terms(self) -> tuple[str, ...]:
        return tuple(f"1|{group}" for group in self.groups)


def parse_standard_formula(formula: str) -> StandardFormula | None:
    """Return the parts of a standard crossed formula, or None when it has another shape."""
    if formula.count("~") != 1:
        return None
    lhs, rhs = (side.strip() for side in formula.split("~"))
    if not re.fullmatch(_NAME, lhs):
        return None
    terms = _split_terms(rhs)
    if terms is None:
        return None
    zero = [term for term in terms if term in ("0", "-1")]
    groups = [_GROUP_TERM.match(term) for term in terms]
    fixed = [term for term, group in zip(terms, groups, strict=True) if group is None and term not in zero]
    names = [group.group(1) for group in groups if group is not None]
    if len(zero) != 1 or len(fixed) != 1 or not re.fullmatch(_NAME, fixed[0]) or not names:
        return None
    if len(set(names)) != len(names) or fixed[0] in names or lhs in (fixed[0], *names):
        return None
    return StandardFormula(lhs, fixed[0], tuple(names))


def _split_terms(rhs: str) -> list[str] | None:
    """Split the right-hand side on top-level '+' (a leading '-1' counts as a term)."""
    terms, depth, current = [], 0, ""
    for char in rhs:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return None
        if char == "+" and depth == 0:
            terms.append(current.strip())
            current = ""
        else:
            current += char
    terms.append(current.strip())
    if depth != 0 or any(not term for term in terms):
        return None
    return terms


# --- data -------------------------------------------------------------------------------


def coerce_binary(series: pd.Series, name: str = "response") -> pd.Series:
    """Map booleans, 0/1 numbers or true/false/yes/no strings to integers 0/1."""
    if series.dtype == bool or str(series.dtype) == "boolean":
        return series.astype(int)
    if pd.api.types.is_numeric_dtype(series):
        values = series.to_numpy()
        if not np.isin(values, (0, 1)).all():
            raise ValueError(f"column {name}: values other than 0/1")
        return series.astype(int)
    text = series.astype(str).str.strip().str.lower()
    bad = ~text.isin(_TRUE | _FALSE)
    if bad.any():
        raise ValueError(f"column {name}: {series[bad].iloc[0]!r} is not a 0/1 or true/false value")
    return text.isin(_TRUE).astype(int)


def _formula_columns(formula: str, data: pd.DataFrame) -> list[str]:
    tokens = set(re.findall(_NAME, formula))
    return [column for column in data.columns if column in tokens]


def _prepare(data: pd.DataFrame, formula: str, standard: StandardFormula | None, family: str) -> pd.DataFrame:
    """Keep the formula's columns, drop incomplete rows (with a warning), coerce a 0/1 response."""
    if standard is not None:
        missing = [c for c in (standard.response, standard.fixed, *standard.groups) if c not in data.columns]
        if missing:
            raise ValueError(f"data lacks column(s) {', '.join(missing)}")
    frame = data[_formula_columns(formula, data)].copy()
    incomplete = frame.isna().any(axis=1) | frame.astype(str).eq("").any(axis=1)
    if incomplete.any():
        log.warning("dropping %d of %d rows with a missing value", int(incomplete.sum()), len(frame))
        frame = frame.loc[~incomplete].reset_index(drop=True)
    if frame.empty:
        raise ValueError("no complete rows to fit")
    response = formula.split("~")[0].strip()
    if family == "bernoulli":
        if response not in frame.columns:
            raise ValueError(f"data lacks the response column {response!r}")
        frame[response] = coerce_binary(frame[response], response)
    if standard is not None:
        for column in (standard.fixed, *standard.groups):
            frame[column] = frame[column].astype(str)
    return frame


# --- design and priors without bambi -----------------------------------------------------

_STD = 2.5  # bambi's PriorScaler.STD


@dataclass
class StandardDesign:
    """Levels, design and bambi's default priors of a standard Bernoulli-logit formula."""

    fixed_levels: list[str]
    fixed_design: np.ndarray  # (n_rows, n_levels) one-hot, float64, as bambi's common term data
    prior_mu: np.ndarray  # Normal prior of each fixed level
    prior_sd: np.ndarray
    group_levels: dict[str, list[str]]  # column -> levels in bambi's order
    group_codes: dict[str, np.ndarray]  # column -> level index of each row
    group_prior_sd: dict[str, float]  # column -> HalfNormal scale of the SD


def _levels_and_codes(column: pd.Series) -> tuple[list[str], np.ndarray]:
    levels, codes = np.unique(column.to_numpy(dtype=str), return_inverse=True)
    return [str(level) for level in levels], codes.astype(np.int64).ravel()


def standard_design(frame: pd.DataFrame, standard: StandardFormula) -> StandardDesign:
    """Design and bambi 0.17's automatic priors of `y ~ 0 + F + (1|G1) + ...`, family bernoulli.

    `frame` is `_prepare`d: F and the groups are strings, the response 0/1 integers.
    """
    fixed_levels, fixed_codes = _levels_and_codes(frame[standard.fixed])
    design = np.zeros((len(frame), len(fixed_levels)))
    design[np.arange(len(frame)), fixed_codes] = 1.0
    prior_sd = np.ones(len(fixed_levels))
    x_mean = design.mean(axis=0)
    # PriorScaler.get_intercept_stats: sigma = (STD^2 + sigmas^2 . x_mean^2) ** 0.5, with the same
    # numpy operations so that the value is bambi's to the last bit.
    sigma = (_STD**2 + np.dot(np.hstack([prior_sd]) ** 2, x_mean**2)) ** 0.5
    group_levels, group_codes, group_sd = {}, {}, {}
    for column in standard.groups:
        group_levels[column], group_codes[column] = _levels_and_codes(frame[column])
        group_sd[column] = float(np.squeeze(np.atleast_1d(sigma)))
    return StandardDesign(
        fixed_levels=fixed_levels,
        fixed_design=design,
        prior_mu=np.zeros(len(fixed_levels)),
        prior_sd=prior_sd,
        group_levels=group_levels,
        group_codes=group_codes,
        group_prior_sd=group_sd,
    )


# --- simulation -------------------------------------------------------------------------


def simulate_trials(
    n_raters_per_modality: int = 92,
    n_dyads: int = 96,
    dyads_per_rater: int = 32,
    modality_effects: dict[str, float] | None = None,
    rater_sd: float = 0.5,
    dyad_sd: float = 1.0,
    seed: int = 0,
) -> pd.DataFrame:
    """Simulate a TRIALS-like table from the GLMM, one separate rater pool per modality.

    Each rater rates `dyads_per_rater` distinct dyads: a window of a per-modality random
    permutation of the dyads, so every dyad gets n_raters * dyads_per_rater / n_dyads ratings
    (+-1) per modality (the planned-missing design, docs/benchmarks/familiarity.md#ratings).
    logit P(correct) = modality effect + rater effect + dyad effect, the dyad effect shared across
    modalities.

    Columns: rater_id, dyad_id, modality, response, correct, and the truth: `truth` (the
    dyad's relationship), `rater_effect`, `dyad_effect`. `frame.attrs["truth"]` holds the
    generating values (modality_effects, rater_sd, dyad_sd).
    """
    if modality_effects is None:
        modality_effects = {"text": 0.3, "audio": 0.6, "video": 0.9}
    if not 0 < dyads_per_rater <= n_dyads:
        raise ValueError("dyads_per_rater must be in 1..n_dyads")
    rng = np.random.default_rng(seed)
    dyad_effect = rng.normal(0.0, dyad_sd, n_dyads)
    relationship = np.array(["familiar", "stranger"])[np.arange(n_dyads) % 2]
    relationship = relationship[rng.permutation(n_dyads)]
    width = len(str(max(n_dyads, n_raters_per_modality) - 1))
    parts = []
    for modality, effect in modality_effects.items():
        order = rng.permutation(n_dyads)
        starts = np.arange(n_raters_per_modality) * dyads_per_rater
        dyads = order[(starts[:, None] + np.arange(dyads_per_rater)[None, :]) % n_dyads]
        rater_effect = rng.normal(0.0, rater_sd, n_raters_per_modality)
        raters = np.repeat(np.arange(n_raters_per_modality), dyads_per_rater)
        dyads = dyads.ravel()
        logit = effect + rater_effect[raters] + dyad_effect[dyads]
        correct = rng.random(logit.size) < 1.0 / (1.0 + np.exp(-logit))
        truth = relationship[dyads]
        other = np.where(truth == "familiar", "stranger", "familiar")
        parts.append(
            pd.DataFrame(
                {
                    "rater_id": [f"{modality}-r{r:0{width}d}" for r in raters],
                    "dyad_id": [f"d{d:0{width}d}" for d in dyads],
                    "modality": modality,
                    "response": np.where(correct, truth, other),
                    "correct": correct,
                    "truth": truth,
                    "rater_effect": rater_effect[raters],
                    "dyad_effect": dyad_effect[dyads],
                }
            )
        )
    frame = pd.concat(parts, ignore_index=True)
    frame.attrs["truth"] = {
        "modality_effects": dict(modality_effects),
        "rater_sd": rater_sd,
        "dyad_sd": dyad_sd,
    }
    return frame

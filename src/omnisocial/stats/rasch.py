"""Rasch model of item difficulty on a long table of scored responses (docs/statistics.md#rasch).

    logit P(person p answers item i correctly) = theta_p - b_i
    theta_p ~ Normal(0, sigma),  sigma ~ HalfNormal(person_sd_prior)
    b_i ~ Normal(mu, tau),  mu ~ Normal(0, difficulty_mean_prior_sd),  tau ~ HalfNormal(difficulty_sd_prior)

A larger difficulty b_i means a harder item. `fit_rasch` reports b_i and the person abilities
theta_p (posterior mean, SD, 95% HDI) on that one logit scale, and mu and tau.

Why a hierarchical prior on the difficulties: the spread tau of the difficulties is estimated
from the data, so each b_i is shrunken towards mu by as much as its data warrant. With a fixed
prior (formerly Normal(0, 2.5^2)) the shrinkage did not match the difficulties' real spread
(SD about 1 on these logit scales), and the EAP reliability var(means) / (var(means) + mean
posterior var) (`stats.reliability`), which equals the shrinkage factor only when the prior's
spread is the difficulties', was overstated: the attenuation-corrected correlation of two sets
of difficulties stayed low (latent r 0.87, 8 raters per item: 0.72). With tau estimated, the
prior is (approximately) the population the difficulties come from, the law of total variance
var(b) = var(E[b | y]) + E[var(b | y)] makes the EAP reliability var(E[b | y]) / var(b), and
the correction recovers the latent r (`benchmarks/bench_rasch_attenuation.py`) when the
error term is the posterior variance of the *relative* difficulty b_i - mean_j b_j (`sd_relative`
of the item table): the posterior SD of b_i also holds the uncertainty of the scale's origin
(the mean of a few raters' abilities), an error shared by all items that moves no correlation
across them (with 8 raters it was a fifth of the posterior variance, and the reliability came
out 0.54 against a true 0.60; with sd_relative 0.59).

Parameterization: the Rasch model is the crossed GLMM `correct ~ 1 + (1|item) + (1|person)`
with intercept -mu and item effects -(b_i - mu) (the Normal priors are symmetric), and is
sampled with the GLMM fast path's layout (`omnisocial.stats.glmm`): both factors are split
into a block mean and a zero-sum part (the person mean otherwise trades off against every
difficulty, and the item mean against mu), the sampler moves the identified intercept, and
each factor's zero-sum part is centred or non-centred by the fast path's information rule
(centred when the data inform a level more than the prior does). The likelihood uses Binomial
counts per (person, item). The posterior is the one of the model above; only the
coordinates differ.

Two implementations of that same density, both sampled with nutpie's NUTS:

- `method="fast"` (default): the GLMM fast path's numba kernel; no compilation per fit;
- `method="pymc"`: the same layout written in PyMC (`glmm.build_pymc_model`), compiled by
  nutpie (numba), compiled per fit (slow: docs/performance.md#code).

Draws: `until_converged=True` samples `draws` per chain, and when a difficulty, mu, tau, the
person SD or an ability misses R-hat <= 1.01 or bulk or tail ESS >= 400 (`stats.convergence`,
the rule of the GLMM command and workflow as well) samples again from the
start with more draws (the GLMM's `next_draws`: scaled to the ESS target, or to the R-hat
miss), up to `max_draws` per chain and `max_attempts` fits in all; the same seed every time, so
the result is deterministic. The draws used and the attempts are in the fit's info.
Divergent transitions count against convergence (`stats.convergence`): more than
`max_divergences` (none by default) flag the fit, and `until_converged` first reruns with a
higher `target_accept` (0.8 -> 0.9 -> 0.95: smaller steps), then sizes the draws. The person
abilities are checked as the difficulties are (docs/rasch-correction.md).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

import numpy as np
import pandas as pd

from omnisocial.stats.convergence import divergence_problem, fit_problems, flag_text, raised_target_accept
from omnisocial.stats.glmm import (
    ESS_MIN,
    MAX_ROUNDS,
    RHAT_MAX,
    GroupSpec,
    build_pymc_model,
    chain_threads,
    coerce_binary,
    make_fast_model,
    next_draws,
    sample_fast_model,
    summary_frame,
)
from omnisocial.stats.glmm._sample import _sample_pymc

log = logging.getLogger(__name__)

ITEM_COLUMNS = ["item", "difficulty", "sd", "hdi_low", "hdi_high", "sd_relative", "sd_unscaled"]
PERSON_COLUMNS = ["person", "ability", "sd", "hdi_low", "hdi_high", "r_hat", "ess_bulk", "ess_tail"]
METHODS = ("fast", "pymc")
MAX_DRAWS = 20000  # per chain, the GLMM's cap
# the fast model's names: the intercept (-mu) of its one level, and the two factors' terms
INTERCEPT, LEVEL, ITEM_TERM, PERSON_TERM = "intercept", "all", "1|item", "1|person"


def _responses(frame: pd.DataFrame, person: str, item: str, correct: str):
    missing = [column for column in (person, item, correct) if column not in frame.columns]
    if missing:
        raise ValueError(f"data lacks column(s) {', '.join(missing)}")
    data = pd.DataFrame(
        {
            "person": frame[person].astype(str),
            "item": frame[item].astype(str),
            "correct": coerce_binary(frame[correct], correct),
        }
    )
    persons = sorted(data["person"].unique())
    items = sorted(data["item"].unique())
    if len(persons) < 2 or len(items) < 2:
        raise ValueError("a Rasch model needs at least 2 persons and 2 items")
    return data, persons, items


def rasch_fast_model(data: pd.DataFrame, persons, items, priors: tuple[float, float, float], centered="auto"):
    """The fast-path layout of the model (module docstring) for `_responses` data.

    priors: (difficulty_mean_prior_sd, difficulty_sd_prior, person_sd_prior).
    """
    mean_sd, difficulty_sd, person_sd = priors
    return make_fast_model(
        data.assign(**{INTERCEPT: LEVEL}),
        "correct",
        INTERCEPT,
        [LEVEL],
        0.0,
        mean_sd,
        [
            GroupSpec("item", ITEM_TERM, list(items), difficulty_sd),
            GroupSpec("person", PERSON_TERM, list(persons), person_sd),
        ],
        centered=centered,
    )


def build_rasch_model(
    frame: pd.DataFrame,
    person: str,
    item: str,
    correct: str,
    difficulty_mean_prior_sd: float = 2.5,
    difficulty_sd_prior: float = 2.5,
    person_sd_prior: float = 2.5,
):
    """The PyMC model of the fast layout (module docstring) and the person and item labels, sorted."""
    data, persons, items = _responses(frame, person, item, correct)
    priors = (difficulty_mean_prior_sd, difficulty_sd_prior, person_sd_prior)
    fast = rasch_fast_model(data, persons, items, priors)
    return build_pymc_model(fast), persons, items


def _draws(idata) -> dict[str, np.ndarray]:
    """Draws (chain, draw, ...) of the difficulties, mu, tau, the person SD and the abilities."""

    def get(name):
        return idata.posterior[name].transpose("chain", "draw", ...).to_numpy()

    intercept = get(INTERCEPT)[..., 0]  # = -mu
    return {
        "difficulty": -(intercept[..., None] + get(ITEM_TERM)),
        "difficulty_mean": -intercept,
        "difficulty_sd": get(f"{ITEM_TERM}_sigma"),
        "person_sd": get(f"{PERSON_TERM}_sigma"),
        "theta": get(PERSON_TERM),
    }


def _unscaled_sd(relative: np.ndarray) -> np.ndarray:
    """Posterior SD of each relative difficulty with each draw's common scale removed: a draw d_s
    is regressed on the posterior means m (c_s = d_s.m / m.m) and the SD is of d_s - c_s m.

    Experimental (bench_rasch_attenuation.py compares it): the uncertainty of the spread tau
    scales all difficulties together, an error shared by the items that moves no correlation
    across them (docs/rasch-correction.md, small spreads)."""
    means = relative.mean(axis=0)
    norm = float(means @ means)
    if norm <= 0:
        return relative.std(axis=0, ddof=1)
    scale = relative @ means / norm
    return (relative - scale[:, None] * means[None, :]).std(axis=0, ddof=1)


def _summaries(draws: dict, items, persons):
    """(item table, person table, the summary rows of the hyperparameters, r_hat max, bulk ESS
    min, tail ESS min).

    The worst R-hat and ESS run over the difficulties, mu, tau, the person SD and the person
    abilities: every quantity the fit reports."""
    hyper = ["difficulty_mean", "difficulty_sd", "person_sd"]
    stacked = np.concatenate([draws["difficulty"], *[draws[name][..., None] for name in hyper]], axis=-1)
    stats = summary_frame([*items, *hyper], stacked, "item")
    relative = draws["difficulty"] - draws["difficulty"].mean(axis=-1, keepdims=True)
    table = stats.iloc[: len(items)].rename(columns={"mean": "difficulty"}).reset_index(drop=True)
    flat = relative.reshape(-1, len(items))
    table["sd_relative"] = flat.std(axis=0, ddof=1)
    table["sd_unscaled"] = _unscaled_sd(flat)
    table = table[ITEM_COLUMNS]
    abilities = summary_frame(persons, draws["theta"], "person").rename(columns={"mean": "ability"})
    rows = stats.iloc[len(items) :].set_index("item")
    diagnostics = ["r_hat", "ess_bulk", "ess_tail"]
    every = pd.concat([stats[diagnostics], abilities[diagnostics]])
    return (
        table,
        abilities[PERSON_COLUMNS],
        rows,
        float(every["r_hat"].max(skipna=False)),
        float(every["ess_bulk"].min(skipna=False)),
        float(every["ess_tail"].min(skipna=False)),
    )


def fit_rasch(
    frame: pd.DataFrame,
    person: str,
    item: str,
    correct: str,
    draws: int = 2000,
    tune: int = 500,
    chains: int = 2,
    seed: int = 0,
    difficulty_mean_prior_sd: float = 2.5,
    difficulty_sd_prior: float = 2.5,
    person_sd_prior: float = 2.5,
    method: str = "fast",
    until_converged: bool = False,
    max_draws: int = MAX_DRAWS,
    max_attempts: int = MAX_ROUNDS,
    target_accept: float = 0.8,
    max_divergences: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Fit the Rasch model; return (items, persons, info).

    items: one row per item (sorted by label): item, difficulty (posterior mean), sd,
    hdi_low, hdi_high (95% HDI), sd_relative (posterior SD of b_i - mean_j b_j, the error that
    attenuates a correlation across items; see the module docstring). persons: one row per
    person (sorted): person, ability (posterior mean of theta, on the difficulties' logit
    scale), sd, hdi_low, hdi_high, r_hat, ess_bulk, ess_tail.
    info: person_sd_mean and its 95% HDI, difficulty_mean (of mu), difficulty_sd_mean (of tau)
    and its HDI, r_hat_max, ess_bulk_min and ess_tail_min over the difficulties, mu, tau, the
    person SD and the abilities, converged, flag (`stats.convergence.fit_problems`: non-empty and
    logged at WARNING level when r_hat > 1.01 or bulk or tail ESS < 400 anywhere, or more than
    `max_divergences` divergent transitions), divergences,
    the counts, the sampler settings, target_accept, draws (per chain, of the last fit) and
    attempts. `until_converged`: after too many divergences rerun with a higher target_accept
    (`stats.convergence.raised_target_accept`, and more draws if R-hat/ESS missed too), else on
    an R-hat/ESS miss with more draws.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    if draws < 1 or tune < 0 or chains < 1 or max_attempts < 1:
        raise ValueError("draws, chains and max_attempts must be positive, tune non-negative")
    data, persons, items = _responses(frame, person, item, correct)
    priors = (difficulty_mean_prior_sd, difficulty_sd_prior, person_sd_prior)
    fast = rasch_fast_model(data, persons, items, priors)
    sample = sample_fast_model if method == "fast" else _sample_pymc
    cores = chain_threads(chains, len(data)) if method == "fast" else min(chains, os.cpu_count() or 1)
    attempts = 1
    while True:
        idata = sample(fast, draws, tune, chains, cores, seed, {"target_accept": target_accept})
        table, abilities, rows, r_hat_max, ess_min, tail_min = _summaries(_draws(idata), items, persons)
        divergences = int(idata.sample_stats["diverging"].sum()) if "diverging" in idata.sample_stats else 0
        if not until_converged or attempts >= max_attempts:
            break
        diagnostics = (r_hat_max, ess_min, tail_min, divergences)
        again = _next_attempt(draws, target_accept, chains, max_draws, max_divergences, diagnostics)
        if again is None:
            break
        (draws, target_accept), attempts = again, attempts + 1
    why = fit_problems(r_hat_max, ess_min, tail_min, divergence_problem(divergences, max_divergences))
    flag = flag_text(why)
    if flag:
        log.warning("Rasch fit: %s (%d draws per chain, %d attempt(s))", flag, draws, attempts)
    info = {
        **_hyperparameters(rows),
        "r_hat_max": r_hat_max,
        "ess_bulk_min": ess_min,
        "ess_tail_min": tail_min,
        "converged": not why,
        "flag": flag,
        "divergences": divergences,
        "n_persons": len(persons),
        "n_items": len(items),
        "n_responses": len(data),
        "method": method,
        "draws": draws,
        "attempts": attempts,
        "tune": tune,
        "chains": chains,
        "seed": seed,
        "target_accept": target_accept,
    }
    log.info(
        "Rasch fit: %d items, %d persons, person SD %.3f [%.3f, %.3f], difficulty SD %.3f, "
        "%d draws per chain, %d attempt(s)",
        len(items),
        len(persons),
        info["person_sd_mean"],
        info["person_sd_hdi_low"],
        info["person_sd_hdi_high"],
        info["difficulty_sd_mean"],
        draws,
        attempts,
    )
    return table, abilities, info


def _next_attempt(
    draws: int, target_accept: float, chains: int, max_draws: int, max_divergences: int, diagnostics: tuple
) -> tuple[int, float] | None:
    """(draws, target_accept) of `until_converged`'s next fit, None to stop. `diagnostics`:
    (r_hat_max, ess_bulk_min, ess_tail_min, divergences) of the fit just made.

    Too many divergences: a higher target_accept (`stats.convergence.raised_target_accept`),
    with more draws if R-hat or ESS missed too; else an R-hat/ESS miss: more draws
    (`glmm.next_draws`), at most `max_draws` per chain."""
    r_hat_max, ess_min, tail_min, divergences = diagnostics
    worst_ess = min(ess_min, tail_min) if np.isfinite(ess_min) and np.isfinite(tail_min) else np.nan
    more = next_draws(draws, worst_ess, 1.0 if chains == 1 else r_hat_max, ESS_MIN, RHAT_MAX)
    more = None if more is None or draws >= max_draws else min(more, max_draws)
    if divergence_problem(divergences, max_divergences) and target_accept < 0.99:
        more_accept = raised_target_accept(target_accept)
        log.info(
            "Rasch fit: %d divergent transitions at target_accept %.3f; sampling again at %.3f",
            divergences,
            target_accept,
            more_accept,
        )
        return more or draws, more_accept
    if more is None:
        return None
    log.info(
        "Rasch fit, %d draws per chain: min ESS %.0f, max R-hat %.3f; sampling again with %d",
        draws,
        ess_min,
        r_hat_max,
        more,
    )
    return more, target_accept


def _hyperparameters(rows: pd.DataFrame) -> dict:
    """The fit's info on the person SD, mu and tau: posterior means and 95% HDIs (`_summaries`' rows)."""
    return {
        "person_sd_mean": float(rows.loc["person_sd", "mean"]),
        "person_sd_hdi_low": float(rows.loc["person_sd", "hdi_low"]),
        "person_sd_hdi_high": float(rows.loc["person_sd", "hdi_high"]),
        "difficulty_mean": float(rows.loc["difficulty_mean", "mean"]),
        "difficulty_sd_mean": float(rows.loc["difficulty_sd", "mean"]),
        "difficulty_sd_hdi_low": float(rows.loc["difficulty_sd", "hdi_low"]),
        "difficulty_sd_hdi_high": float(rows.loc["difficulty_sd", "hdi_high"]),
    }


def simulate_responses(difficulty, n_persons: int, rng, ability_sd: float = 0.5) -> pd.DataFrame:
    """Every one of `n_persons` persons (abilities ~ N(0, ability_sd)) answers every item once,
    right with probability logistic(theta - difficulty); long table [person, item, correct]."""
    difficulty = np.asarray(difficulty, dtype=float)
    ability = rng.normal(0.0, ability_sd, n_persons)
    logit = ability[:, None] - difficulty[None, :]
    right = rng.random(logit.shape) < 1 / (1 + np.exp(-logit))
    return pd.DataFrame(
        {
            "person": [f"p{p:03d}" for p in np.repeat(np.arange(n_persons), difficulty.size)],
            "item": [f"i{i:03d}" for i in np.tile(np.arange(difficulty.size), n_persons)],
            "correct": right.ravel(),
        }
    )


# --- command line -----------------------------------------------------------------------


def sidecar_path(output: str) -> str:
    """The JSON written next to the items CSV: `ITEMS.csv` -> `ITEMS.csv.json`."""
    return f"{output}.json"


def add_cli(subparsers) -> None:
    """Register `omnisocial rasch RESPONSES.csv --person COL --item COL --correct COL -o ITEMS.csv`."""
    parser = subparsers.add_parser(
        "rasch",
        help="Rasch item difficulties from a long table of scored responses",
        description=(
            "Fit logit P(correct) = theta_person - b_item (nutpie NUTS) and write one row per "
            "item: item, difficulty, sd, hdi_low, hdi_high (with --persons, one row per person too). "
            "The person SD and the convergence diagnostics go to the log and to the sidecar "
            "JSON ITEMS.csv.json (the output path with '.json' appended)."
        ),
    )
    parser.add_argument("data", help="long CSV, one scored response per row")
    parser.add_argument("--person", required=True, help="column naming the person (rater)")
    parser.add_argument("--item", required=True, help="column naming the item (dyad)")
    parser.add_argument("--correct", required=True, help="0/1 or true/false column")
    parser.add_argument("-o", "--output", required=True, help="items CSV to write")
    parser.add_argument(
        "--persons", help="also write person abilities (person, ability, sd, hdi_low, hdi_high) here"
    )
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--method", choices=METHODS, default="fast")
    parser.add_argument(
        "--until-converged",
        action="store_true",
        help="sample again with more draws (at most 3 fits) while R-hat > 1.01 or bulk or tail ESS < 400",
    )
    parser.add_argument("--max-draws", type=int, default=MAX_DRAWS, help="per chain, with --until-converged")
    parser.add_argument("--target-accept", type=float, default=0.8, help="NUTS target acceptance (first fit)")
    parser.add_argument(
        "--max-divergences", type=int, default=0, help="divergent transitions a converged fit may have"
    )
    parser.set_defaults(func=run_cli)


def run_cli(args: argparse.Namespace) -> int:
    from omnisocial.errors import InputError
    from omnisocial.io import read_csv_strings, write_csv, write_json

    try:
        frame = read_csv_strings(args.data)
    except FileNotFoundError:
        raise InputError(f"{args.data}: no such file") from None
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise InputError(f"{args.data}: not a readable CSV ({error})") from None
    try:
        items, persons, info = fit_rasch(
            frame,
            args.person,
            args.item,
            args.correct,
            draws=args.draws,
            tune=args.tune,
            chains=args.chains,
            seed=args.seed,
            method=args.method,
            until_converged=args.until_converged,
            max_draws=args.max_draws,
            target_accept=args.target_accept,
            max_divergences=args.max_divergences,
        )
    except ValueError as error:
        raise InputError(f"{args.data}: {error}") from None
    write_csv(args.output, items)
    if args.persons:
        write_csv(args.persons, persons)
    write_json(sidecar_path(args.output), {"source": args.data, **info})
    print(
        f"rasch: person SD {info['person_sd_mean']:.3f} "
        f"[{info['person_sd_hdi_low']:.3f}, {info['person_sd_hdi_high']:.3f}] (95% HDI), "
        f"r_hat max {info['r_hat_max']:.3f}, ess_bulk min {info['ess_bulk_min']:.0f}, "
        f"ess_tail min {info['ess_tail_min']:.0f}" + (f"; {info['flag']}" if info["flag"] else ""),
        file=sys.stderr,
    )
    print(
        json.dumps(
            {
                "output": args.output,
                "items": len(items),
                "person_sd_mean": round(info["person_sd_mean"], 4),
                "converged": info["converged"],
            }
        )
    )
    return 0

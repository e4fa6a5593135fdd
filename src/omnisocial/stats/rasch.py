"""Rasch model of item difficulty on a long table of scored responses (benchmarks.md 1.8).

    logit P(person p answers item i correctly) = theta_p - b_i
    theta_p ~ Normal(0, sigma),  sigma ~ HalfNormal(person_sd_prior),  b_i ~ Normal(0, difficulty_prior_sd)

A larger difficulty b_i means a harder item. `fit_rasch` reports both b_i and the person
abilities theta_p (posterior mean, SD, 95% HDI) on that one logit scale.

Parameterization: the mean of the person abilities trades off against every difficulty (adding
c to all theta and all b changes nothing but the priors), which makes NUTS slow. As in the
GLMM's fast path (`omnisocial.stats.glmm`), abilities are split into their mean and a zero-sum
part, theta = sigma * (eta / sqrt(P) + z) with eta ~ N(0, 1) and z ~ ZeroSumNormal(1) (exactly
i.i.d. Normal(0, sigma) abilities), and the sampler moves the identified item locations
c_i = b_i - mean(theta) with the Normal prior kept on b_i = c_i + sigma * eta / sqrt(P). The
likelihood uses Binomial counts per (person, item). The posterior is the one of the model
above; only the coordinates differ.

Two implementations of that same density, both sampled with nutpie's NUTS:

- `method="pymc"`: the PyMC model of `build_rasch_model`, compiled by nutpie (numba); the
  compilation alone takes 20-40 s;
- `method="fast"` (default): the GLMM fast path's numba kernel, since the Rasch model is the
  GLMM `correct ~ 0 + item + (1|person)` with b_item = -difficulty (the Normal prior is
  symmetric) and the same block/zero-sum reparameterization; no compilation per fit.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys

import numpy as np
import pandas as pd

from omnisocial.stats.glmm import (
    GroupSpec,
    coerce_binary,
    convergence_problems,
    make_fast_model,
    sample_fast_model,
    summary_frame,
)

log = logging.getLogger(__name__)

ITEM_COLUMNS = ["item", "difficulty", "sd", "hdi_low", "hdi_high"]
PERSON_COLUMNS = ["person", "ability", "sd", "hdi_low", "hdi_high"]
METHODS = ("fast", "pymc")


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


def build_rasch_model(
    frame: pd.DataFrame,
    person: str,
    item: str,
    correct: str,
    difficulty_prior_sd: float = 2.5,
    person_sd_prior: float = 2.5,
):
    """The PyMC model (see the module docstring) and the person and item labels, sorted."""
    import pymc as pm

    data, persons, items = _responses(frame, person, item, correct)
    cells = data.groupby(["person", "item"], sort=True)["correct"].agg(["sum", "count"]).reset_index()
    person_idx = cells["person"].map({p: i for i, p in enumerate(persons)}).to_numpy()
    item_idx = cells["item"].map({p: i for i, p in enumerate(items)}).to_numpy()

    root = math.sqrt(len(persons))
    with pm.Model(coords={"person": persons, "item": items}) as model:
        sigma = pm.HalfNormal("person_sd", sigma=person_sd_prior)
        eta = pm.Normal("person_mean_z", 0.0, 1.0)
        z = pm.ZeroSumNormal("person_zs", sigma=1.0, dims="person")
        location = pm.Flat("item_location", dims="item")
        pm.Deterministic("theta", sigma * (eta / root + z), dims="person")
        difficulty = pm.Deterministic("difficulty", location + sigma * eta / root, dims="item")
        pm.Potential("difficulty_prior", pm.logp(pm.Normal.dist(0.0, difficulty_prior_sd), difficulty).sum())
        pm.Binomial(
            "correct",
            n=cells["count"].to_numpy(),
            logit_p=sigma * z[person_idx] - location[item_idx],
            observed=cells["sum"].to_numpy(),
        )
    return model, persons, items


def _draws(idata, names: tuple[str, str, str], sign: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draws (chain, draw, ...) of the difficulties, the person SD and the abilities."""
    difficulty, person_sd, theta = (
        idata.posterior[name].transpose("chain", "draw", ...).to_numpy() for name in names
    )
    return sign * difficulty, person_sd, theta


def _sample_fast(data, persons, items, settings, priors):
    fast = make_fast_model(
        data, "correct", "item", items, 0.0, priors[0], [GroupSpec("person", "1|person", persons, priors[1])]
    )
    idata = sample_fast_model(fast, *settings)
    # the GLMM's item effect is minus the difficulty; its person effects are the abilities
    return idata, _draws(idata, ("item", "1|person_sigma", "1|person"), -1.0)


def _sample_pymc(frame, columns, settings, priors):
    import nutpie

    model, _, _ = build_rasch_model(frame, *columns, *priors)
    draws, tune, chains, cores, seed = settings
    idata = nutpie.sample(
        nutpie.compile_pymc_model(model),
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        seed=seed,
        progress_bar=False,
        save_warmup=False,
    )
    return idata, _draws(idata, ("difficulty", "person_sd", "theta"), 1.0)


def fit_rasch(
    frame: pd.DataFrame,
    person: str,
    item: str,
    correct: str,
    draws: int = 2000,
    tune: int = 500,
    chains: int = 2,
    seed: int = 0,
    difficulty_prior_sd: float = 2.5,
    person_sd_prior: float = 2.5,
    method: str = "fast",
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Fit the Rasch model; return (items, persons, info).

    items: one row per item (sorted by label): item, difficulty (posterior mean), sd,
    hdi_low, hdi_high (95% HDI). persons: one row per person (sorted): person, ability
    (posterior mean of theta, on the difficulties' logit scale), sd, hdi_low, hdi_high.
    info: person_sd_mean, person_sd_hdi_low, person_sd_hdi_high, r_hat_max and ess_bulk_min
    over the difficulties and the person SD, converged, flag (non-empty and logged at WARNING
    level when r_hat > 1.01 or bulk ESS < 400 anywhere), divergences, the counts and the
    sampler settings.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    data, persons, items = _responses(frame, person, item, correct)
    settings = (draws, tune, chains, min(chains, os.cpu_count() or 1), seed)
    priors = (difficulty_prior_sd, person_sd_prior)
    if method == "fast":
        idata, (difficulty, person_sd, theta) = _sample_fast(data, persons, items, settings, priors)
    else:
        idata, (difficulty, person_sd, theta) = _sample_pymc(frame, (person, item, correct), settings, priors)
    stats = summary_frame(
        [*items, "person_sd"], np.concatenate([difficulty, person_sd[..., None]], axis=-1), "item"
    )
    table = stats.iloc[:-1].rename(columns={"mean": "difficulty"})[ITEM_COLUMNS].reset_index(drop=True)
    abilities = summary_frame(persons, theta, "person").rename(columns={"mean": "ability"})[PERSON_COLUMNS]
    sd_row = stats.iloc[-1]
    r_hat_max = float(stats["r_hat"].max(skipna=False))
    ess_min = float(stats["ess_bulk"].min(skipna=False))
    why = convergence_problems(r_hat_max, ess_min)
    flag = f"not converged: {'; '.join(why)}" if why else ""
    if flag:
        log.warning("Rasch fit: %s", flag)
    divergences = int(idata.sample_stats["diverging"].sum()) if "diverging" in idata.sample_stats else 0
    if divergences:
        log.warning("Rasch fit: %d divergent transitions", divergences)
    info = {
        "person_sd_mean": float(sd_row["mean"]),
        "person_sd_hdi_low": float(sd_row["hdi_low"]),
        "person_sd_hdi_high": float(sd_row["hdi_high"]),
        "r_hat_max": r_hat_max,
        "ess_bulk_min": ess_min,
        "converged": not why,
        "flag": flag,
        "divergences": divergences,
        "n_persons": len(persons),
        "n_items": len(items),
        "n_responses": len(data),
        "method": method,
        "draws": draws,
        "tune": tune,
        "chains": chains,
        "seed": seed,
    }
    log.info(
        "Rasch fit: %d items, %d persons, person SD %.3f [%.3f, %.3f]",
        len(items),
        len(persons),
        info["person_sd_mean"],
        info["person_sd_hdi_low"],
        info["person_sd_hdi_high"],
    )
    return table, abilities, info


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
        f"r_hat max {info['r_hat_max']:.3f}, ess_bulk min {info['ess_bulk_min']:.0f}"
        + (f"; {info['flag']}" if info["flag"] else ""),
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

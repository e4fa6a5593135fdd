"""`omnisocial glmm DATA.csv -o SUMMARY.csv`: fit a GLMM (`omnisocial.stats.glmm.fit_glmm`) from the
command line and write its summary, contrasts and variance components (docs/command-line.md)."""

from __future__ import annotations

import argparse
import json
import logging
import re

import pandas as pd

from omnisocial.stats.glmm import (
    DEFAULT_FORMULA,
    FAST_TARGET_ACCEPT,
    SAMPLERS,
    TARGET_ACCEPT,
    contrasts,
    fit_divergence,
    fit_glmm,
    parse_standard_formula,
    summarize,
    variance_components,
)
from omnisocial.stats.glmm._design import _NAME, _formula_columns

log = logging.getLogger("omnisocial.stats.glmm")


def add_cli(subparsers) -> None:
    """Register `omnisocial glmm DATA.csv --formula ... -o SUMMARY.csv`."""
    parser = subparsers.add_parser(
        "glmm",
        help="Bayesian logistic GLMM (bambi formula) of trial-level data",
        description=(
            "Fit a bambi-formula logistic GLMM and write one row per parameter "
            "(term, mean, sd, hdi_low, hdi_high, r_hat, ess_bulk, ess_tail, converged, flag). Pairwise "
            "contrasts of the `0 + factor` term (logit scale, and in percentage points of accuracy) "
            "go to SUMMARY_contrasts.csv and variance components to SUMMARY_variance.csv when the "
            "formula has that form. A row is flagged when R-hat > 1.01 or bulk or tail ESS < 400; "
            "every row when the fit has more than --max-divergences divergent transitions."
        ),
    )
    parser.add_argument("data", help="trial-level CSV (e.g. a TRIALS table)")
    parser.add_argument(
        "--formula", default=DEFAULT_FORMULA, help=f"bambi formula (default: {DEFAULT_FORMULA!r})"
    )
    parser.add_argument("--family", default="bernoulli")
    parser.add_argument("-o", "--output", required=True, help="summary CSV to write")
    parser.add_argument(
        "--draws",
        type=int,
        default=None,
        help="draws per chain (default: sized to R-hat <= 1.01, ESS >= 400)",
    )
    parser.add_argument("--tune", type=int, default=None, help="tuning steps (default: 300 fast, 500 bambi)")
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sampler", choices=SAMPLERS, default="auto")
    parser.add_argument(
        "--target-accept",
        type=float,
        default=None,
        help=f"NUTS target acceptance of the first fit, raised after divergences (default: "
        f"{FAST_TARGET_ACCEPT} on the fast path when every factor is centred, else {TARGET_ACCEPT})",
    )
    parser.add_argument(
        "--max-divergences",
        type=int,
        default=0,
        help="divergent transitions a converged fit may have (more: sampled again, then flagged)",
    )
    parser.set_defaults(func=run_cli)


def read_data(path: str, formula: str) -> pd.DataFrame:
    """Read a CSV as strings; formula columns that are all numbers (and not groups) become numeric."""
    from omnisocial.io import read_csv_strings

    frame = read_csv_strings(path)
    standard = parse_standard_formula(formula)
    groups = set(re.findall(rf"\|\s*({_NAME})", formula))
    keep_text = groups | ({standard.fixed} if standard else set())
    for column in _formula_columns(formula, frame):
        if column in keep_text:
            continue
        numbers = pd.to_numeric(frame[column], errors="coerce")
        if numbers.notna().all():
            frame[column] = numbers
    return frame


def run_cli(args: argparse.Namespace) -> int:
    from omnisocial.errors import InputError
    from omnisocial.io import write_csv

    try:
        data = read_data(args.data, args.formula)
    except FileNotFoundError:
        raise InputError(f"{args.data}: no such file") from None
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise InputError(f"{args.data}: not a readable CSV ({error})") from None
    try:
        result = fit_glmm(
            data,
            formula=args.formula,
            family=args.family,
            draws=args.draws,
            tune=args.tune,
            chains=args.chains,
            seed=args.seed,
            sampler=args.sampler,
            target_accept=args.target_accept,
            max_divergences=args.max_divergences,
        )
    except ValueError as error:
        raise InputError(f"{args.data}: {error}") from None
    summary = summarize(result)
    tables = [summary]
    write_csv(args.output, summary)
    stem = args.output[:-4] if args.output.endswith(".csv") else args.output
    if result.fixed_term is not None and len(result.fixed_levels) > 1:
        tables.append(contrasts(result))
        write_csv(f"{stem}_contrasts.csv", tables[-1])
    if result.group_terms:
        tables.append(variance_components(result))
        write_csv(f"{stem}_variance.csv", tables[-1])
    bad = int((~summary["converged"]).sum())
    converged = all(bool(table["converged"].all()) for table in tables)
    log.info("glmm: %s sampler %s, %d rows, %d flagged", args.data, result.sampler, len(summary), bad)
    report = {"output": args.output, "sampler": result.sampler, "rows": len(summary), "flagged": bad}
    report.update({"converged": converged, "fit_flag": fit_divergence(result)})
    report.update({"draws": result.draws, "rounds": result.rounds, "divergences": result.divergences})
    report.update({"target_accept": result.target_accept, "attempts": result.attempts})
    if "n_steps" in result.trace.sample_stats:  # leapfrog steps per draw: the time per draw
        report["mean_steps"] = round(float(result.trace.sample_stats["n_steps"].mean()), 2)
    if result.fast_model is not None:
        report["centered"] = {factor.column: factor.centered for factor in result.fast_model.factors}
    print(json.dumps(report))
    return 0

"""The familiarity figures: which rows of the result tables each family draws, and the call.

`draw_figure(family, tables, stem, options)` writes `<stem>.png` and `<stem>.pdf` with the
family's function, one module per family in this package (tables in, PNG + PDF out, through
the shared `omnisocial.figures.style`):

- `accuracy.accuracy_figure`: accuracy by modality (raters, crowd, models, Wilson intervals);
- `sdt.sdt_figure`: d' against c for raters, crowd and models;
- `crowds.crowd_figure`: majority-vote accuracy against crowd size, per modality;
- `difficulty.difficulty_figure` (+ `dyad_accuracy`, `from_rasch`): dyad difficulty across
  modalities and between humans and models;
- `glmm.glmm_contrast_figure`: GLMM modality contrasts with 95% HDIs and P(> 0);
- `convergence`: the not-converged marks of the GLMM and Rasch figures (the summary's targets);
- `calibration.calibration_figure` (+ `calibration.reliability_table`): reliability diagrams;
- `power.power_figure`: dyads needed against effect size (McNemar, TOST).

Every family function takes DataFrames (never paths to read), a path stem to write
`<stem>.png` and `<stem>.pdf` to (via `style.save_figure`, atomic and byte-reproducible), and
title / subtitle / caption text. `simulated=None` flags simulated inputs automatically from a
`source` column mentioning "simulated"; the subtitle then says so.

Choices of `draw_figure`:

- models in the accuracy, d'/c and crowd figures are those at the primary prompt variant
  (`options["variant"]`, the first of `inference.prompt_variants`) plus the offline baselines;
  the other variants are compared in prompt_sensitivity.csv. Individual raters come from
  per_rater_sdt.csv, the crowd from the `human_majority` rows of metrics.csv;
- difficulty: the Rasch dyad difficulties (larger = harder) of rasch_difficulty.csv, with the
  convergence of each fit from rasch_fits.csv; glmm: each contrast's own R-hat and bulk ESS;
- power: the dashed line is the design's number of dyads;
- every figure whose rows come from the simulated rater panel says so in its subtitle (the
  tables' `source` column, read by `figures.style`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from omnisocial.familiarity.contracts import split_variant
from omnisocial.familiarity.figures.accuracy import accuracy_figure
from omnisocial.familiarity.figures.calibration import calibration_figure, reliability_table
from omnisocial.familiarity.figures.crowds import crowd_figure
from omnisocial.familiarity.figures.difficulty import difficulty_figure, dyad_accuracy, from_rasch
from omnisocial.familiarity.figures.duplicates import drop_duplicate_models
from omnisocial.familiarity.figures.glmm import glmm_contrast_figure
from omnisocial.familiarity.figures.power import power_figure
from omnisocial.familiarity.figures.sdt import sdt_figure
from omnisocial.figures.style import save_figure

DEMO_CORPUS_NOTE = "SIMULATED DATA: demo corpus"
# what a figure says when a kind of rater is absent (a models-only or a ratings-only study)
RATER_KINDS = {"human": "human ratings", "model": "model predictions"}
FAMILIES = ("accuracy", "sdt", "crowds", "difficulty", "glmm", "calibration", "power")
# the tables (result files without .csv) each family reads
INPUTS = {
    "accuracy": ("per_rater_sdt", "metrics"),
    "sdt": ("per_rater_sdt", "metrics"),
    "crowds": ("crowd_curves", "metrics"),
    "difficulty": ("rasch_difficulty", "rasch_fits"),
    "glmm": ("glmm_summary", "glmm_contrasts"),
    "calibration": ("calibration",),
    "power": ("power",),
}


def shown_models(metrics: pd.DataFrame, variant: str) -> pd.DataFrame:
    """Metric rows of the crowd and of the models at `variant` (models without a variant too)."""
    kinds = (
        metrics["rater_type"] if "rater_type" in metrics.columns else pd.Series("model", index=metrics.index)
    )
    variants = metrics["model"].map(lambda m: split_variant(m)[1])
    keep = (kinds == "crowd") | ((kinds == "model") & ((variants == "") | (variants == variant)))
    return drop_duplicate_models(metrics[keep].reset_index(drop=True))


def draw_figure(
    family: str, tables: Mapping[str, pd.DataFrame], stem, options: Mapping | None = None
) -> list[Path]:
    """Draw one figure family from its tables (`INPUTS[family]`); returns [png, pdf].

    options: variant (primary prompt variant), seed (jitter), n_dyads (power figure),
    corpus_source (demo: the calibration figure, model outputs only, says so).
    """
    options = dict(options or {})
    if family not in FAMILIES:
        raise ValueError(f"unknown figure family {family!r}; known: {', '.join(FAMILIES)}")
    missing = [name for name in INPUTS[family] if name not in tables]
    if missing:
        raise ValueError(f"figure {family} needs table(s) {', '.join(missing)}")
    variant = str(options.get("variant", "v1"))
    note = f"models at prompt variant {variant} and offline baselines"
    if family in ("accuracy", "sdt", "crowds"):
        # a ratings-only or a models-only study: the figure draws what exists and says what does not
        shown = shown_models(tables["metrics"], variant)
        kinds = (
            shown["rater_type"] if "rater_type" in shown.columns else pd.Series("model", index=shown.index)
        )
        if not (kinds == "model").any():
            note = "no model predictions"
        humans = tables["crowd_curves"] if family == "crowds" else tables["per_rater_sdt"]
        if humans.empty:
            note += " | no human ratings"
    if family == "accuracy":
        return accuracy_figure(
            tables["per_rater_sdt"],
            shown_models(tables["metrics"], variant),
            stem,
            seed=int(options.get("seed", 0)),
            subtitle=note,
            caption="Accuracy on answered trials; intervals are 95% Wilson intervals.",
        )
    if family == "sdt":
        return sdt_figure(
            tables["per_rater_sdt"],
            shown_models(tables["metrics"], variant),
            stem,
            subtitle=note,
            caption="Log-linear corrected d' and c; c > 0 is a bias toward 'stranger'.",
        )
    if family == "crowds":
        return crowd_figure(
            tables["crowd_curves"],
            stem,
            models=shown_models(tables["metrics"], variant),
            subtitle=note,
            caption="k raters resampled per dyad; ties broken by a fair coin.",
        )
    if family == "difficulty":
        kinds = set(tables["rasch_difficulty"]["rater_type"])
        absent = [what for kind, what in RATER_KINDS.items() if kind not in kinds]
        return difficulty_figure(
            tables["rasch_difficulty"],
            stem,
            fits=tables["rasch_fits"],
            value="difficulty",
            value_label="Rasch dyad difficulty (larger = harder)",
            subtitle=" | ".join(f"no {what}" for what in absent),
            caption="Posterior mean difficulties; persons are raters (humans) or models.",
        )
    if family == "glmm":
        # a models-only study has no GLMM fit (the GLMM is of human trials); one modality, no contrast
        fitted = not tables["glmm_summary"].empty
        return glmm_contrast_figure(
            tables["glmm_contrasts"],
            stem,
            subtitle="" if fitted else "no human ratings",
            empty="no modality contrasts: one modality rated" if fitted else "no human ratings: no GLMM fit",
            caption="correct ~ 0 + modality + (1|rater) + (1|dyad), bernoulli; human trials.",
        )
    if family == "calibration":  # model outputs only: no simulated rater panel to flag
        return calibration_figure(
            tables["calibration"],
            stem,
            subtitle=DEMO_CORPUS_NOTE if options.get("corpus_source") == "demo" else "",
            caption="Equal-width confidence bins; answered predictions with a confidence only.",
        )
    n_dyads = options.get("n_dyads")
    if n_dyads is None and "n_dyads_design" in tables["power"].columns and len(tables["power"]):
        n_dyads = int(tables["power"]["n_dyads_design"].iloc[0])
    return power_figure(
        tables["power"],
        stem,
        n_dyads=int(n_dyads) if n_dyads else None,
        caption="Dyads needed at the configured alpha and power (no simulation).",
    )


__all__ = [
    "FAMILIES",
    "INPUTS",
    "accuracy_figure",
    "calibration_figure",
    "crowd_figure",
    "difficulty_figure",
    "draw_figure",
    "dyad_accuracy",
    "from_rasch",
    "glmm_contrast_figure",
    "power_figure",
    "reliability_table",
    "save_figure",
    "sdt_figure",
    "shown_models",
]

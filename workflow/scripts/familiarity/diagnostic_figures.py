"""Rule fam_figure_diagnostics: confusion matrices, accuracy per design cell, prompt-variant
sensitivity and the person-item map (PNG + PDF each)."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.contracts import ANALYSIS_TABLES, RATED_TRIALS
from omnisocial.familiarity.figures import DEMO_CORPUS_NOTE
from omnisocial.familiarity.figures.diagnostics import (
    cell_accuracy_figure,
    confusion_figure,
    person_item_map,
    prompt_sensitivity_figure,
)
from omnisocial.figures.style import configure as configure_figures
from omnisocial.tables import DESIGN, PREDICTIONS
from omnisocial.workflow import start

log = start(snakemake)
configure_figures(snakemake.params.figure_settings)  # the config's figures: block
out = snakemake.output
inputs = snakemake.input
variant = str(snakemake.params.options["variant"])
# a ratings-only study has no prediction file: the figures draw the humans and say "no model predictions"
frames = [PREDICTIONS.read(path) for path in inputs.predictions]
predictions = pd.concat(frames, ignore_index=True) if frames else PREDICTIONS.empty()
trials = RATED_TRIALS.read(inputs.trials)
design = DESIGN.read(inputs.design)
demo = snakemake.params.corpus_source == "demo"
note = (
    f"models at prompt variant {variant} and offline baselines"
    if len(predictions)
    else "no model predictions"
)
confusion_figure(
    predictions,
    Path(out.confusion_png).with_suffix(""),
    variant=variant,
    subtitle=(f"{DEMO_CORPUS_NOTE} | " if demo else "") + note,
    simulated=False,
)
cell_accuracy_figure(trials, design, predictions, Path(out.cells_png).with_suffix(""), variant=variant)
prompt_sensitivity_figure(
    ANALYSIS_TABLES["prompt_sensitivity"].read(inputs.prompt_sensitivity),
    Path(out.prompts_png).with_suffix(""),
    subtitle=DEMO_CORPUS_NOTE if demo else "",
    simulated=False,
)
person_item_map(
    ANALYSIS_TABLES["rasch_difficulty"].read(inputs.rasch_difficulty),
    Path(out.map_png).with_suffix(""),
    persons=ANALYSIS_TABLES["rasch_persons"].read(inputs.rasch_persons),
    fits=ANALYSIS_TABLES["rasch_fits"].read(inputs.rasch_fits),
)
log.info("4 figures written to %s", Path(out.confusion_png).parent)

"""Rule rating_experiment: one modality's browser experiment from the design, lists and stimuli."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.contracts import MODALITY_ASSIGNMENTS
from omnisocial.familiarity.ratings import BLOCKS, assignments_by_modality
from omnisocial.familiarity.ratings.experiment import build_experiment, read_lists
from omnisocial.tables import DESIGN
from omnisocial.workflow import start

log = start(snakemake)
modality = snakemake.wildcards.modality
inputs = snakemake.input
build = build_experiment(
    modality,
    read_lists(inputs.surveys, modality),
    assignments_by_modality(MODALITY_ASSIGNMENTS.read(inputs.assignments))[modality],
    BLOCKS.read(inputs.blocks),
    inputs.media,
    dict(snakemake.params.settings),
    snakemake.params.jspsych_dir,
    snakemake.output[0],
    design=DESIGN.read(inputs.design),
    design_keys=dict(snakemake.params.design_keys),
)
log.info(
    "%s: %d lists, %d trials, practice %s, jsPsych %s",
    modality,
    build["lists"],
    build["trials"],
    build["practice"] or "none",
    build["jspsych"]["jspsych"],
)

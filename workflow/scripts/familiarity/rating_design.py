"""Rule rating_design: blocks, rater assignments per modality and every rater's survey list."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.contracts import MODALITY_ASSIGNMENTS
from omnisocial.familiarity.ratings import BLOCKS, rating_design, write_survey_lists
from omnisocial.tables import DESIGN
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
plan = rating_design(
    DESIGN.read(snakemake.input.design),
    params.n_blocks,
    params.blocks_per_rater,
    dict(params.raters_per_modality),
    params.seed,
)
BLOCKS.write(snakemake.output.blocks, plan.blocks)
MODALITY_ASSIGNMENTS.write(snakemake.output.assignments, plan.assignments)
Path(snakemake.output.surveys).mkdir(parents=True, exist_ok=True)  # empty in a models-only study
for modality in plan.assignments["modality"].unique():
    paths = write_survey_lists(plan.survey_lists(modality), snakemake.output.surveys, modality)
    log.info("%s: %d survey lists", modality, len(paths))

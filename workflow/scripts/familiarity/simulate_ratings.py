"""Rule simulate_ratings (demo): the simulated rater panel as survey exports, named 'simulated'."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.contracts import MODALITY_ASSIGNMENTS
from omnisocial.familiarity.ratings import BLOCKS, simulate_exports
from omnisocial.io import write_csv
from omnisocial.tables import DESIGN
from omnisocial.workflow import start

log = start(snakemake)
exports, covariates = simulate_exports(
    DESIGN.read(snakemake.input.design),
    BLOCKS.read(snakemake.input.blocks),
    MODALITY_ASSIGNMENTS.read(snakemake.input.assignments),
    dict(snakemake.params.simulation),
    snakemake.params.seed,
)
for modality, export in exports.items():
    log.info("%s: simulated export with %d rows", modality, len(export))
    write_csv(snakemake.output[modality], export)
write_csv(snakemake.output.covariates, covariates)

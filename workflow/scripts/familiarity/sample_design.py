"""Rule sample_design: the seeded, fully crossed stratified design."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.contracts import CLIP_CANDIDATES, FILTER_REPORT, INTERACTIONS
from omnisocial.familiarity.sampling import sample_design
from omnisocial.tables import DESIGN
from omnisocial.workflow import start

log = start(snakemake)
design = sample_design(
    FILTER_REPORT.read(snakemake.input.report),
    CLIP_CANDIDATES.read(snakemake.input.candidates),
    INTERACTIONS.read(snakemake.input.interactions),
    dict(snakemake.params.sampling),
)
log.info("%d dyads in %d cells", len(design), design["cell"].nunique())
DESIGN.write(snakemake.output.design, design)

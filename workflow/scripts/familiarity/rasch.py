"""Rule rasch: dyad difficulty per modality and rater type, its correlations, and humans vs models."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.analysis import rasch_tables, released_sources
from omnisocial.familiarity.contracts import ANALYSIS_TABLES, RATED_TRIALS
from omnisocial.settings import Rasch
from omnisocial.tables import DESIGN, PREDICTIONS
from omnisocial.workflow import start, threads

log = start(snakemake)
frames = {path: PREDICTIONS.read(path) for path in snakemake.input.predictions}
tables = rasch_tables(
    list(frames.values()),
    RATED_TRIALS.read(snakemake.input.trials),
    DESIGN.read(snakemake.input.design),
    Rasch.of(snakemake.params.rasch),
    snakemake.params.seed,
    released_sources(frames, snakemake.input.released),
    workers=threads(snakemake),
)
for name, table in tables.items():
    ANALYSIS_TABLES[name].write(snakemake.output[name], table)

"""Rule rater_tests: McNemar and TOST (best model vs crowd, modality pairs), power, individual differences."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.analysis import rater_tests, released_sources
from omnisocial.familiarity.contracts import ANALYSIS_TABLES, RATED_TRIALS
from omnisocial.familiarity.ratings import read_covariates
from omnisocial.tables import DESIGN, PREDICTIONS
from omnisocial.workflow import start

log = start(snakemake)
frames = {path: PREDICTIONS.read(path) for path in snakemake.input.predictions}
tables = rater_tests(
    list(frames.values()),
    RATED_TRIALS.read(snakemake.input.trials),
    DESIGN.read(snakemake.input.design),
    read_covariates(snakemake.input.covariates),
    dict(snakemake.params.analysis),
    released_sources(frames, snakemake.input.released),
)
for name, table in tables.items():
    ANALYSIS_TABLES[name].write(snakemake.output[name], table)

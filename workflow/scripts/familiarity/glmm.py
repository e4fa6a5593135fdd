"""Rule glmm: Bayesian crossed random-effects GLMM of the human trials, summary and modality contrasts."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.analysis import glmm_tables
from omnisocial.familiarity.contracts import ANALYSIS_TABLES, RATED_TRIALS
from omnisocial.settings import Glmm
from omnisocial.workflow import start, threads

log = start(snakemake)
tables = glmm_tables(
    RATED_TRIALS.read(snakemake.input.trials),
    Glmm.of(snakemake.params.glmm),
    snakemake.params.seed,
    cores=threads(snakemake),
)
for name, table in tables.items():
    ANALYSIS_TABLES[name].write(snakemake.output[name], table)

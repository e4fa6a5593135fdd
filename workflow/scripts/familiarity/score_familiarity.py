"""Rule score_familiarity: metrics of models, raters and crowd; non-answers; crowds; calibration; prompts."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.analysis import released_sources, score_familiarity
from omnisocial.familiarity.contracts import ANALYSIS_TABLES, RATED_TRIALS
from omnisocial.tables import DESIGN, PREDICTIONS
from omnisocial.workflow import start

log = start(snakemake)
frames = {path: PREDICTIONS.read(path) for path in snakemake.input.predictions}
tables = score_familiarity(
    list(frames.values()),
    RATED_TRIALS.read(snakemake.input.trials),
    DESIGN.read(snakemake.input.design),
    dict(snakemake.params.analysis),
    released_sources(frames, snakemake.input.released),
)
for name, table in tables.items():
    ANALYSIS_TABLES[name].write(snakemake.output[name], table)

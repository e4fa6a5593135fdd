"""Rule duplexeval_figures: the streaming score figure by subtask (PNG + PDF)."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.duplexeval.figures import streaming_figure
from omnisocial.workflow import start

log = start(snakemake)
out = snakemake.output
streaming_figure(pd.read_csv(snakemake.input.streaming), Path(out.streaming_png).with_suffix(""))
log.info("1 figure written to %s", Path(out.streaming_png).parent)

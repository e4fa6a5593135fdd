"""Rule render_table: one reported CSV as HTML (for the report), markdown and LaTeX."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

import pandas as pd

from omnisocial.summary import render_table
from omnisocial.workflow import start

log = start(snakemake)
table = pd.read_csv(snakemake.input.csv)
paths = render_table(table, str(Path(snakemake.output.html).with_suffix("")), title=snakemake.params.title)
log.info("wrote %s", ", ".join(map(str, paths)))

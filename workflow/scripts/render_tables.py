"""Rule render_tables: every reported CSV as HTML (for the report), markdown and LaTeX."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

from omnisocial.summary import render_tables
from omnisocial.workflow import start

log = start(snakemake)
stems = [str(Path(csv).with_suffix("")) for csv in snakemake.input]
render_tables(dict(zip(stems, snakemake.params.titles, strict=True)), log)

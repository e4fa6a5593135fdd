"""Rule report_summary: the run's first page (summary.md / .html and one CSV per section)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

from omnisocial.familiarity.ratings.panel import raters_section
from omnisocial.summary import build_summary, read_optional, write_summary
from omnisocial.workflow import start

log = start(snakemake)
config = dict(snakemake.params.config)
tables = {name: read_optional(path) for name, path in snakemake.input.items()}
# the benchmark's own section, built here: the summary layer knows no benchmark package
tables["raters"] = raters_section(config.get("ratings") or {}, tables.get("trials"))
sections = build_summary(config, tables, variant=snakemake.params.variant)
paths = write_summary(sections, Path(snakemake.output.md).parent, explorer=snakemake.params.explorer)
log.info("wrote %s", ", ".join(map(str, paths)))

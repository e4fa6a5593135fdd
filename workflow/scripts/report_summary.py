"""Rule report_summary: the run's first page (summary.md / .html and one CSV per section)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

from omnisocial.familiarity.ratings.panel import raters_section
from omnisocial.summary import GENERATED_KEY, build_summary, read_optional, write_summary
from omnisocial.workflow import start

log = start(snakemake)
config = dict(snakemake.params.config)
inputs = dict(snakemake.input.items())
# a generated release's mark (its folder's GENERATED_BY_OMNISOCIAL.json): its inputs are simulated
config[GENERATED_KEY] = inputs.pop("generated_release", "")
tables = {name: read_optional(path) for name, path in inputs.items()}
# the benchmark's own section, built here: the summary layer knows no benchmark package
tables["raters"] = raters_section(config.get("ratings") or {}, tables.get("trials"))
sections = build_summary(config, tables, variant=snakemake.params.variant)
paths = write_summary(sections, Path(snakemake.output.md).parent, explorer=snakemake.params.explorer)
log.info("wrote %s", ", ".join(map(str, paths)))

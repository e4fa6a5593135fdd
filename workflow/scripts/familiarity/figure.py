"""Rule fam_figures: the result-figure families (PNG + PDF) from their result tables, in one job."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.contracts import ANALYSIS_TABLES
from omnisocial.familiarity.figures import FAMILIES, INPUTS, draw_figure
from omnisocial.figures.style import configure as configure_figures
from omnisocial.workflow import start

log = start(snakemake)
configure_figures(snakemake.params.figure_settings)  # the config's figures: block
tables = {name: ANALYSIS_TABLES[name].read(path) for name, path in snakemake.input.items()}
for family in FAMILIES:
    paths = draw_figure(
        family,
        {name: tables[name] for name in INPUTS[family]},
        str(Path(snakemake.output[family]).with_suffix("")),
        dict(snakemake.params.options),
    )
    log.info("wrote %s", ", ".join(map(str, paths)))

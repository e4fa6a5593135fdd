"""Rules fam_figure_*: one familiarity figure family as PNG + PDF from its result tables."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.contracts import ANALYSIS_TABLES
from omnisocial.familiarity.figures import draw_figure
from omnisocial.figures.style import configure as configure_figures
from omnisocial.workflow import start

log = start(snakemake)
configure_figures(snakemake.params.figure_settings)  # the config's figures: block
params = snakemake.params
paths = draw_figure(
    params.family,
    {name: ANALYSIS_TABLES[name].read(path) for name, path in snakemake.input.items()},
    str(Path(snakemake.output.png).with_suffix("")),
    dict(params.options),
)
log.info("wrote %s", ", ".join(map(str, paths)))

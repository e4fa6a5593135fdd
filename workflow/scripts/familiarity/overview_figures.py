"""Rule fam_figure_overview: the filter funnel and model coverage figures (PNG + PDF)."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.figures import DEMO_CORPUS_NOTE
from omnisocial.familiarity.figures.overview import coverage_figure, funnel_figure
from omnisocial.figures.style import configure as configure_figures
from omnisocial.summary import funnel_section
from omnisocial.workflow import start

log = start(snakemake)
configure_figures(snakemake.params.figure_settings)  # the config's figures: block
out = snakemake.output
released = snakemake.params.design_source != "pipeline"  # a released design: no corpus, no filters
report = None if released else pd.read_csv(snakemake.input.filter_report)
funnel = funnel_section(report, pd.read_csv(snakemake.input.design))
demo = snakemake.params.corpus_source == "demo"
if released:
    subtitle = "design imported from a released data set: no corpus filters ran"
else:
    subtitle = DEMO_CORPUS_NOTE if demo else f"corpus: {snakemake.params.corpus_source}"
funnel_figure(funnel, Path(out.funnel_png).with_suffix(""), simulated=False, subtitle=subtitle)
coverage_figure(
    pd.read_csv(snakemake.input.metrics),
    Path(out.coverage_png).with_suffix(""),
    subtitle=DEMO_CORPUS_NOTE if demo else "",
)
log.info("2 figures written to %s", Path(out.funnel_png).parent)

"""Rule duplexeval_figures: the streaming score figure by subtask (PNG + PDF)."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.duplexeval.figures import streaming_figure
from omnisocial.figures.style import configure as configure_figures
from omnisocial.figures.style import social_subtitle
from omnisocial.workflow import start

log = start(snakemake)
configure_figures(snakemake.params.figure_settings)  # the config's figures: block
out = snakemake.output
subtitle = social_subtitle("", bool(snakemake.params.simulated))  # social.source demo: generated clips
streaming = pd.read_csv(snakemake.input.streaming)
streaming_figure(streaming, Path(out.streaming_png).with_suffix(""), subtitle=subtitle)
log.info("1 figure written to %s", Path(out.streaming_png).parent)

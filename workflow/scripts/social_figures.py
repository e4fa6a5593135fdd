"""Rule social_figures: profile, timing, rank scatter and streaming figures (PNG + PDF)."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1] / "src"))

from omnisocial.figures.social import profile_figure, rank_scatter, streaming_figure, timing_figure
from omnisocial.social.contracts import WHEN_STREAM_SCORES
from omnisocial.workflow import start

log = start(snakemake)
out = snakemake.output
profile = pd.read_csv(snakemake.input.profile)
profile_figure(profile, Path(out.profile_png).with_suffix(""))
timing_figure(
    WHEN_STREAM_SCORES.read(snakemake.input.stream_scores),
    Path(out.timing_png).with_suffix(""),
    thresholds=tuple(snakemake.params.thresholds),
)
rank_scatter(profile, Path(out.rank_png).with_suffix(""))
streaming_figure(pd.read_csv(snakemake.input.streaming), Path(out.streaming_png).with_suffix(""))
log.info("4 figures written to %s", Path(out.profile_png).parent)

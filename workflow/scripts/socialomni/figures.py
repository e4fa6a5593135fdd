"""Rule socialomni_figures: profile, timing and rank scatter figures (PNG + PDF)."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.figures.style import configure as configure_figures
from omnisocial.figures.style import social_subtitle
from omnisocial.socialomni.contracts import SOCIAL_PROFILE, WHEN_STREAM_SCORES
from omnisocial.socialomni.figures import (
    profile_figure,
    rank_scatter,
    timing_figure,
    who_confusion_figure,
)
from omnisocial.workflow import start

log = start(snakemake)
configure_figures(snakemake.params.figure_settings)  # the config's figures: block
out = snakemake.output
simulated = bool(snakemake.params.simulated)  # social.source demo: generated clips
profile = SOCIAL_PROFILE.read(snakemake.input.profile)
profile_figure(profile, Path(out.profile_png).with_suffix(""), simulated=simulated)
timing_figure(
    WHEN_STREAM_SCORES.read(snakemake.input.stream_scores),
    Path(out.timing_png).with_suffix(""),
    thresholds=tuple(snakemake.params.thresholds),
    subtitle=social_subtitle("", simulated),
)
rank_scatter(profile, Path(out.rank_png).with_suffix(""), subtitle=social_subtitle("", simulated))
confusion = pd.read_csv(snakemake.input.who_confusion)
who_confusion_figure(confusion, Path(out.who_confusion_png).with_suffix(""), simulated=simulated)
log.info("4 figures written to %s", Path(out.profile_png).parent)

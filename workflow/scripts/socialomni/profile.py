"""Rule socialomni_profile: the who / when / how profile (counts, 95% intervals) and the ranks."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.socialomni.contracts import ACCURACY_BREAKDOWN, HOW_JUDGEMENTS, SOCIAL_PROFILE
from omnisocial.socialomni.profile import social_profile
from omnisocial.workflow import start

log = start(snakemake)
inp = snakemake.input
profile = social_profile(
    pd.read_csv(inp.who),
    ACCURACY_BREAKDOWN.read(inp.when_single),
    pd.read_csv(inp.rates),
    pd.read_csv(inp.tolerance),
    pd.read_csv(inp.how),
    delta=float(snakemake.params.profile_delta),
    how_items=HOW_JUDGEMENTS.read(inp.how_items),
)
log.info("profile of %d models", len(profile))
SOCIAL_PROFILE.write(snakemake.output.profile, profile)

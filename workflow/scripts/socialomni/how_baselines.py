"""Rule socialomni_how_baselines: previous-utterance and random-utterance candidates for the how items."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.socialomni.baselines import how_baseline_replies
from omnisocial.socialomni.contracts import REPLIES, WHEN_ITEMS
from omnisocial.workflow import start

log = start(snakemake)
replies = how_baseline_replies(WHEN_ITEMS.read(snakemake.input.when_items), snakemake.params.seed)
log.info("%d how candidates", len(replies))
REPLIES.write(snakemake.output.replies, replies)

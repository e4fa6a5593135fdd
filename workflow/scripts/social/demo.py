"""Rule social_demo: multi-party (SocialOmni) and visual-event (Omni-DuplexEval) demo clips."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.demo_kit import build_demo
from omnisocial.duplexeval.demo import write_duplexeval
from omnisocial.socialomni.demo import write_socialomni
from omnisocial.workflow import start

log = start(snakemake)
parts = [("socialomni", write_socialomni), ("duplexeval", write_duplexeval)]
manifest = build_demo(Path(snakemake.output[0]), dict(snakemake.params.demo), parts)
log.info("social demo written to %s: %s", snakemake.output[0], manifest["counts"])

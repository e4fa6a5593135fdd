"""Rule social_demo: multi-party and visual-event clips in the released formats."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1] / "src"))

from omnisocial.corpus.demo_social import generate_social_demo
from omnisocial.workflow import start

log = start(snakemake)
manifest = generate_social_demo(Path(snakemake.output[0]), dict(snakemake.params.demo))
log.info("social demo written to %s: %s", snakemake.output[0], manifest["counts"])

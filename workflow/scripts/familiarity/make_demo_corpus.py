"""Rule make_demo_corpus: generate the demo corpus in the Seamless Interaction layout."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.corpus.demo import generate_demo_corpus
from omnisocial.workflow import start

log = start(snakemake)
generate_demo_corpus(Path(snakemake.output[0]), dict(snakemake.params.demo))
log.info("demo corpus written to %s", snakemake.output[0])

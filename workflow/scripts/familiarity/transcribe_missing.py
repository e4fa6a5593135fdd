"""Rule transcribe_missing: ASR for participants without a corpus transcript."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.asr import transcribe_missing
from omnisocial.familiarity.contracts import ASR_FAILURES, INTERACTIONS, SEGMENTS
from omnisocial.workflow import start

log = start(snakemake)
interactions = INTERACTIONS.read(snakemake.input.interactions)
segments, failures = transcribe_missing(interactions, dict(snakemake.params.asr))
log.info("%d ASR segments, %d failures", len(segments), len(failures))
SEGMENTS.write(snakemake.output.segments, segments)
ASR_FAILURES.write(snakemake.output.failures, failures)

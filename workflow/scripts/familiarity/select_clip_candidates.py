"""Rule select_clip_candidates: early and late clip windows snapped to turn edges."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.clips import clip_candidates
from omnisocial.familiarity.contracts import CLIP_CANDIDATES, INTERACTIONS, SEGMENTS, SIGNALS, SPEECH
from omnisocial.workflow import start

log = start(snakemake)
candidates = clip_candidates(
    INTERACTIONS.read(snakemake.input.interactions),
    SEGMENTS.read(snakemake.input.segments),
    SPEECH.read(snakemake.input.speech),
    SIGNALS.read(snakemake.input.signals),
    dict(snakemake.params.clips),
    snakemake.params.turn_gap_s,
)
log.info("%d clip windows", len(candidates))
CLIP_CANDIDATES.write(snakemake.output.candidates, candidates)

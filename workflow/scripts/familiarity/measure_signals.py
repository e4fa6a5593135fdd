"""Rule measure_signals: durations, speech, track similarity/lag and A/V lag per interaction."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.contracts import INTERACTIONS, SEGMENTS, SIGNALS, SPEECH
from omnisocial.familiarity.signals import measure_all
from omnisocial.familiarity.transcripts import combine_segments
from omnisocial.settings import Signals, Vad
from omnisocial.workflow import start, threads

log = start(snakemake)
interactions = INTERACTIONS.read(snakemake.input.interactions)
parts = [SEGMENTS.read(snakemake.input.transcripts)]
if hasattr(snakemake.input, "asr"):
    parts.append(SEGMENTS.read(snakemake.input.asr))
segments = combine_segments(*parts)
corpus_speech = SPEECH.read(snakemake.input.speech)
signals, speech = measure_all(
    interactions,
    corpus_speech,
    segments,
    Vad.of(snakemake.params.vad),
    Signals.of(snakemake.params.signals),
    bool(snakemake.params.measure_av_sync),
    workers=threads(snakemake),
)
log.info("measured %d interactions, %d failed", len(signals), int((~signals["measure_ok"]).sum()))
SIGNALS.write(snakemake.output.signals, signals)
SPEECH.write(snakemake.output.speech, speech)
SEGMENTS.write(snakemake.output.segments, segments)

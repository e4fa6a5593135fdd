"""Rule apply_filters: the filter report, one row per interaction."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.contracts import (
    ASR_FAILURES,
    CLIP_CANDIDATES,
    FILTER_REPORT,
    INTERACTIONS,
    SEGMENTS,
    SIGNALS,
)
from omnisocial.familiarity.filters import apply_filters
from omnisocial.familiarity.transcripts import mark_asr_failures
from omnisocial.settings import Filters
from omnisocial.workflow import start

log = start(snakemake)
interactions = INTERACTIONS.read(snakemake.input.interactions)
if hasattr(snakemake.input, "asr_failures"):
    interactions = mark_asr_failures(interactions, ASR_FAILURES.read(snakemake.input.asr_failures))
report = apply_filters(
    interactions,
    SIGNALS.read(snakemake.input.signals),
    CLIP_CANDIDATES.read(snakemake.input.candidates),
    SEGMENTS.read(snakemake.input.segments),
    Filters.of(snakemake.params.filters),
)
log.info("%d of %d interactions pass every filter", int(report["passed"].sum()), len(report))
for row in report.loc[~report["passed"]].itertuples():
    log.info("excluded %s: %s", row.interaction_id, row.reasons)
FILTER_REPORT.write(snakemake.output.report, report)

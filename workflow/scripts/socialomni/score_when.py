"""Rule socialomni_score_when: single-cut accuracy and the streaming timing metrics."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.importing import concat_frames
from omnisocial.io import write_csv
from omnisocial.socialomni.contracts import (
    ACCURACY_BREAKDOWN,
    REPLIES,
    WHEN_ITEMS,
    WHEN_SCORES,
    WHEN_STREAM_RESPONSES,
    WHEN_STREAM_SCORES,
    WRITTEN_ANSWERS,
)
from omnisocial.socialomni.stream import RATE_COUNTS, timing_table, with_stream_counts
from omnisocial.socialomni.when import score_when_replies, score_when_stream
from omnisocial.streaming import STREAM_SUMMARY
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
items = WHEN_ITEMS.read(snakemake.input.when_items)
replies = pd.concat([REPLIES.read(path) for path in snakemake.input.replies], ignore_index=True)
written = WRITTEN_ANSWERS.read(snakemake.input.written_answers)  # released compares them as written
single, breakdown = score_when_replies(items, replies, params.parser, written)
# the silence baseline's response times, then each streamed registry model's
responses = concat_frames(
    [WHEN_STREAM_RESPONSES.read(path) for path in snakemake.input.stream], WHEN_STREAM_RESPONSES
)
streamed, rates, tolerance = score_when_stream(responses, list(params.thresholds), list(params.deltas))
summaries = concat_frames([STREAM_SUMMARY.read(path) for path in snakemake.input.summaries], STREAM_SUMMARY)
rates = with_stream_counts(rates, summaries, RATE_COUNTS)  # unparsed beside the rates: never read as NO
for row in rates.itertuples():
    log.info(
        "%s: on time %.3f, early %.3f, late %.3f over %d items%s",
        row.model,
        row.on_time,
        row.early,
        row.late,
        row.n,
        "" if pd.isna(row.n_steps) else f" ({row.n_unparsed} of {row.n_steps} replies unparsed)",
    )
WHEN_SCORES.write(snakemake.output.single_scores, single)
ACCURACY_BREAKDOWN.write(snakemake.output.single_metrics, breakdown)
WHEN_STREAM_SCORES.write(snakemake.output.stream_scores, streamed)
write_csv(snakemake.output.rates, rates)
write_csv(snakemake.output.tolerance, tolerance)
write_csv(snakemake.output.timing, timing_table(streamed, tolerance, summaries))

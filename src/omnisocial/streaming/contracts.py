"""The streaming driver's tables: one row per answered step, and one summary row per job."""

from __future__ import annotations

from omnisocial.streaming.protocol import STEP_KINDS
from omnisocial.tables import Column, Contract

STREAM_STEPS = Contract(
    "stream_steps",
    (
        Column("model"),
        Column("item_id"),
        Column("step", "int", doc="0-based index of the query time"),
        Column("t", "float", doc="query time (s): the media ends here"),
        Column("window_start", "float", doc="where the step's media starts (s)"),
        Column("kind", allowed=STEP_KINDS, doc="silence / utterance / unparsed / failed (no reply)"),
        Column("text", doc="the utterance's text (utterance rows), else empty"),
        Column("reply", doc="the model's raw reply; empty when failed"),
        Column("error", doc="why the call failed (failed rows), else empty"),
        Column("cached", "bool", doc="answered from the result cache, no call in this run"),
        Column("latency_s", "float", nullable=True),
    ),
    key=("model", "item_id", "step"),
)

STREAM_SUMMARY = Contract(
    "stream_summary",
    (
        Column("model"),
        Column("benchmark"),
        Column("protocol"),
        Column("n_items", "int"),
        Column("n_planned", "int", doc="planned calls (an upper bound for stop-at-first protocols)"),
        Column("n_steps", "int", doc="steps asked (rows of the steps table)"),
        Column("n_calls", "int", doc="calls made in this run (the rest came from the cache)"),
        Column(
            "n_cached",
            "int",
            doc="steps answered from the cache (an earlier run's calls): after an interruption "
            "n_calls + n_cached equals an uninterrupted run's n_calls",
        ),
        Column("n_silence", "int"),
        Column("n_utterance", "int"),
        Column("n_unparsed", "int", doc="replies the benchmark's parser could not read (never silence)"),
        Column("n_failed_items", "int", doc="items whose stream ended on a failed call"),
    ),
    key=("model", "benchmark", "protocol"),
)

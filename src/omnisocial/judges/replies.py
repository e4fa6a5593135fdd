"""The table of an LLM judge's raw replies (`judges.llm.run_judge`), importable without the model layer.

The scoring rules (socialomni_judge_how, duplexeval_score) read it with this contract only,
so their environments need no HTTP client, jsonschema or tqdm.
"""

from __future__ import annotations

from omnisocial.tables import Column, Contract

JUDGE_TASKS = ("how", "rtd_temporal", "rtd_content", "pr")
STREAM_TASKS = ("rtd_temporal", "rtd_content", "pr")
KIND = {"rtd_temporal": "temporal", "rtd_content": "content", "pr": "reminder"}
FRAME_KEY = "image:{:03d}"

LLM_JUDGE_REPLIES = Contract(
    "llm_judge_replies",
    (
        Column("judge"),
        Column("task", allowed=JUDGE_TASKS),
        Column("model", doc="the judged model"),
        Column("modality", doc="how: the judged model's input modality; streaming: empty"),
        Column("split", doc="streaming split; empty for how"),
        Column("item_id"),
        Column("kind", doc="how, temporal, content or reminder"),
        Column("index", "int", nullable=True, doc="sentence_index (temporal) or event index (reminder)"),
        Column("n_media", "int", doc="media files sent (frames, video)"),
        Column("ok", "bool", doc="the call succeeded (False: a judge failure, never a score)"),
        Column("reply", doc="the judge's raw reply"),
        Column("error", doc="why the call failed (redacted)"),
        Column("cached", "bool", doc="answered from the cache, no call in this run"),
    ),
    key=("judge", "task", "model", "modality", "split", "item_id", "kind", "index"),
)

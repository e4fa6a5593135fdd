"""Streaming a model through a benchmark's protocol: ask it along the clip, step by step.

A shared layer: it knows no benchmark. A benchmark hands it items and a protocol, and reads
back one row per answered step.

- `Schedule(start, end, step_s=1.0)`: the query times t_k = start + k * step_s up to end
  (inclusive, rounded to the microsecond; 0.5 s steps as well as the paper's 1 s);
  `format_time(t)` writes one as prompts and request ids show it (microseconds, no trailing 0).
- `StreamItem(item_id, source, schedule, media_start=0.0, context={})`: one clip; `context`
  is whatever the benchmark's prompt builder needs (target speaker, question, ...).
- `StreamProtocol(name, prompt, parse, stop_at_first, window_s=None, carries_history=False,
  settings={})`: `prompt(item, t, history) -> (system, prompt)` (history: the `Said(t, text)`
  utterances so far, when the protocol carries it); `parse(reply) -> Parsed(kind, text)`
  with kind silence, utterance or unparsed (an unparseable reply is unparsed, never silence);
  `stop_at_first`: stop an item at its first utterance (SocialOmni's when) or run to its end
  (Omni-DuplexEval's RTD / PR); `window_s`: None for the whole prefix [media_start, t], else
  the last `window_s` seconds.
- `streaming.media`: `cut_segments` cuts an item ONCE into the spans between step bounds
  (video segments with their frame counts, plus AAC tracks of the item's sound, one per frame grid
  a step end needs, so its decoded audio ends exactly at t; wav for
  audio; bitexact, atomic; a rule's declared output shared by every model); `assemble`
  joins a step's segments by stream copy, deterministically (the result cache keys on the
  media's sha256), its audio and video as long as a direct cut's (docs/streaming.md,
  "Prefix media").
- `stream(backend, items, protocol, modality=, segments_root=, cache_path=, entry=, ...)`:
  the driver (`streaming.driver`): `backend.concurrency` steps in flight whenever an item has
  one to ask (items independent, the steps of an item in order, no rounds), media prepared
  ahead by a bounded prefetch, each step through the runner's `InferenceSession` (cache keyed
  per step, failure policy). Returns `StreamRun(steps, summary, plan)`: STREAM_STEPS rows
  (model, item_id, step, t, window_start, kind silence / utterance / unparsed / failed, text,
  reply, error, cached, latency_s; sorted by item and step) and the STREAM_SUMMARY row (calls
  made in this run, steps answered from the cache, unparsed, failed item streams).
  `first_utterances(steps)`: item -> t of its first utterance.
- `streaming.cost.check_job_budget`: a job of several streams (Omni-DuplexEval's RTD and PR)
  checks the sum of its parts' plans once, before its first call, naming each part.
- Cost before calls (`streaming.cost`): `plan_calls` (items x steps; an upper bound for
  stop-at-first), logged before the first call with the entry's `price_per_call` /
  `price_per_1k_tokens`; `check_budget` raises `CallBudgetExceeded` (no call made) when the
  plan exceeds the entry's `max_calls`, naming planned calls, max_calls, items, steps, model.
"""

from omnisocial.streaming.contracts import STREAM_STEPS, STREAM_SUMMARY
from omnisocial.streaming.cost import CallBudgetExceeded, CallPlan, check_budget, plan_calls, price_line
from omnisocial.streaming.driver import StreamRun, first_utterances, media_key, stream
from omnisocial.streaming.media import (
    assemble,
    cut_all_segments,
    cut_segments,
    segment_bounds,
    segment_paths,
)
from omnisocial.streaming.protocol import (
    FAILED,
    SILENCE,
    STEP_KINDS,
    UNPARSED,
    UTTERANCE,
    Parsed,
    Said,
    StreamItem,
    StreamProtocol,
)
from omnisocial.streaming.schedule import Schedule, format_time

__all__ = [
    "FAILED",
    "SILENCE",
    "STEP_KINDS",
    "STREAM_STEPS",
    "STREAM_SUMMARY",
    "UNPARSED",
    "UTTERANCE",
    "CallBudgetExceeded",
    "CallPlan",
    "Parsed",
    "Said",
    "Schedule",
    "StreamItem",
    "StreamProtocol",
    "StreamRun",
    "assemble",
    "check_budget",
    "cut_all_segments",
    "cut_segments",
    "first_utterances",
    "format_time",
    "media_key",
    "plan_calls",
    "price_line",
    "segment_bounds",
    "segment_paths",
    "stream",
]

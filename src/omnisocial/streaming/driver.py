"""The streaming driver: items asked step by step through any backend, via the runner.

`stream(backend, items, protocol, ...)` walks every item's schedule in rounds: round k asks
step k of every item still streaming, as one batch through `models.runner.InferenceSession`
(so `backend.concurrency` calls run side by side across items, and the steps of one item
stay in order: step k+1 is built only after step k's reply, with its history). Each step is
one runner request: item id '<item_id>@<t>', the protocol's (system, prompt) for t, and the
step's media assembled from the item's segments (`streaming.media`), so its cache key holds
the prompt (t and any history) and the media's sha256: a job killed mid-item replays its
answered steps from the cache, repeats no call, and goes on from the first unanswered step.

A reply is read by the protocol's parser: silence, utterance, or unparsed (counted, never
read as silence; the stream goes on). A failed call (no reply after the backend's retries)
ends that item's stream with a `failed` row naming the reason; the runner's failure policy
(consecutive failures, probe) applies across the job, and its `max_failed_share` to the
share of items whose stream failed. A stop-at-first protocol ends an item at its first
utterance; others run to the schedule's end.

Before the first call the job logs its planned calls (`streaming.cost`) and stops, with no
call made, when they exceed the entry's `max_calls`.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from omnisocial.models.base import Backend, Request
from omnisocial.models.runner import FailurePolicy, InferenceSession
from omnisocial.streaming.contracts import STREAM_STEPS, STREAM_SUMMARY
from omnisocial.streaming.cost import CallPlan, check_budget, plan_calls, price_line
from omnisocial.streaming.media import assemble, segment_paths, step_segments
from omnisocial.streaming.protocol import (
    FAILED,
    SILENCE,
    UNPARSED,
    UTTERANCE,
    Said,
    StreamItem,
    StreamProtocol,
)
from omnisocial.streaming.schedule import format_time

log = logging.getLogger(__name__)

ASSEMBLY_THREADS = 4  # joins are stream copies: a few cheap ffmpeg runs at once


@dataclass
class StreamRun:
    """What `stream` returns: the STREAM_STEPS rows, the STREAM_SUMMARY row and the plan."""

    steps: pd.DataFrame
    summary: dict
    plan: CallPlan


def media_key(modality: str) -> str:
    """The Request.media key of a modality's clips ('audio' for audio, else 'video')."""
    return "audio" if modality == "audio" else "video"


def step_request(
    item: StreamItem, protocol: StreamProtocol, t: float, history: tuple[Said, ...], media: Path, key: str
):
    system, prompt = protocol.prompt(item, t, history if protocol.carries_history else ())
    return Request(
        f"{item.item_id}@{format_time(t)}",
        prompt,
        system=system,
        media={key: media},
        settings=dict(protocol.settings),
    )


def _step_media(item, protocol, root, modality, t, folder: Path) -> Path:
    """Step t's media joined from the segments into `folder`; a missing segment is returned
    as the media path, so the runner records the step failed naming it (never a new cut)."""
    paths = segment_paths(root, modality, item, protocol.window_s)
    parts = paths[step_segments(item, protocol.window_s, protocol.window_start(item, t), t)]
    missing = [path for path in parts if not path.is_file()]
    if missing:
        return missing[0]
    return assemble(parts, folder / f"{item.item_id}@{format_time(t)}{paths[0].suffix}")


def stream(
    backend: Backend,
    items: Sequence[StreamItem],
    protocol: StreamProtocol,
    *,
    modality: str,
    segments_root: str | os.PathLike,
    cache_path: str | os.PathLike,
    model: str | None = None,
    entry: Mapping | None = None,
    benchmark: str = "",
    policy: FailurePolicy | None = None,
    progress: bool = True,
    work_dir: str | os.PathLike | None = None,
) -> StreamRun:
    """Stream `items` through `backend` (module doc); `entry` supplies max_calls and prices."""
    entry = dict(entry or {})
    model = model or str(entry.get("name") or getattr(backend, "name", type(backend).__name__))
    items = list(items)
    plan = plan_calls(model, items, protocol.stop_at_first)
    price = price_line(plan, entry)
    log.info("%s%s", plan.describe(), f"; price: {price}" if price else "")
    check_budget(plan, entry.get("max_calls"))
    key = media_key(modality)
    times = {item.item_id: item.schedule.times() for item in items}
    history: dict[str, tuple[Said, ...]] = {item.item_id: () for item in items}
    rows: list[dict] = []
    failed_items: dict[str, str] = {}
    active = list(items)
    step = 0
    work_parent = Path(work_dir) if work_dir is not None else None
    if work_parent is not None:
        work_parent.mkdir(parents=True, exist_ok=True)
    with (
        InferenceSession(backend, cache_path, progress, policy, progress_total=plan.calls) as session,
        tempfile.TemporaryDirectory(prefix="stream-", dir=work_parent) as scratch,
        ThreadPoolExecutor(max_workers=ASSEMBLY_THREADS) as pool,
    ):
        while active:
            folder = Path(scratch) / f"step{step:05d}"
            folder.mkdir()
            ts = [times[item.item_id][step] for item in active]
            media = list(
                pool.map(
                    _step_media,
                    active,
                    [protocol] * len(active),
                    [segments_root] * len(active),
                    [modality] * len(active),
                    ts,
                    [folder] * len(active),
                )
            )
            requests = [
                step_request(item, protocol, t, history[item.item_id], path, key)
                for item, t, path in zip(active, ts, media, strict=True)
            ]
            frame = session.answer(requests)
            still = []
            for item, t, record in zip(active, ts, frame.to_dict("records"), strict=True):
                row = _row(model, item, protocol, step, t, record)
                rows.append(row)
                if row["kind"] == FAILED:
                    failed_items[item.item_id] = row["error"]
                    log.warning(
                        "%s: item %s stream failed at t = %.3f s: %s", model, item.item_id, t, row["error"]
                    )
                    continue
                if row["kind"] == UTTERANCE:
                    history[item.item_id] += (Said(t, row["text"]),)
                    if protocol.stop_at_first:
                        continue
                if step + 1 < len(times[item.item_id]):
                    still.append(item)
            for path in folder.iterdir():  # the joined media are hashed and sent: no longer needed
                path.unlink()
            folder.rmdir()
            active = still
            step += 1
        calls = session.calls
        outcomes = pd.DataFrame(
            {
                "ok": [item.item_id not in failed_items for item in items],
                "error": [failed_items.get(item.item_id) for item in items],
            }
        )
        session.check_failed_share(outcomes, what="item streams")
    steps = STREAM_STEPS.validate(pd.DataFrame(rows, columns=STREAM_STEPS.names))
    summary = summarise(steps, model, benchmark, protocol.name, len(items), plan.calls, calls)
    log.info(
        "%s: %d items, %d steps (%d calls, %d cached), %d utterances, %d unparsed, %d item streams failed",
        model,
        summary["n_items"],
        summary["n_steps"],
        summary["n_calls"],
        summary["n_cached"],
        summary["n_utterance"],
        summary["n_unparsed"],
        summary["n_failed_items"],
    )
    return StreamRun(steps, summary, plan)


def _row(
    model: str, item: StreamItem, protocol: StreamProtocol, step: int, t: float, record: Mapping
) -> dict:
    base = {
        "model": model,
        "item_id": item.item_id,
        "step": step,
        "t": t,
        "window_start": protocol.window_start(item, t),
        "cached": bool(record["cached"]),
        "latency_s": record["latency_s"],
    }
    if not record["ok"]:
        return {
            **base,
            "kind": FAILED,
            "text": "",
            "reply": "",
            "error": str(record["error"] or "call failed"),
        }
    reply = str(record["text"] or "")
    parsed = protocol.parse(reply)
    text = parsed.text if parsed.kind == UTTERANCE else ""
    return {**base, "kind": parsed.kind, "text": text, "reply": reply, "error": ""}


def summarise(
    steps: pd.DataFrame, model: str, benchmark: str, protocol: str, n_items: int, planned: int, calls: int
) -> dict:
    """The STREAM_SUMMARY row of one job."""
    kinds = steps["kind"].value_counts()
    row = {
        "model": model,
        "benchmark": benchmark,
        "protocol": protocol,
        "n_items": n_items,
        "n_planned": planned,
        "n_steps": len(steps),
        "n_calls": calls,
        "n_cached": int(steps["cached"].sum()),
        "n_silence": int(kinds.get(SILENCE, 0)),
        "n_utterance": int(kinds.get(UTTERANCE, 0)),
        "n_unparsed": int(kinds.get(UNPARSED, 0)),
        "n_failed_items": int(steps.loc[steps["kind"] == FAILED, "item_id"].nunique()),
    }
    return STREAM_SUMMARY.validate(pd.DataFrame([row])).iloc[0].to_dict()


def first_utterances(steps: pd.DataFrame) -> dict[str, float | None]:
    """item_id -> t of its first utterance (None: none) for the items whose stream did not fail."""
    out: dict[str, float | None] = {}
    for item_id, group in steps.sort_values(["item_id", "step"]).groupby("item_id", sort=True):
        if (group["kind"] == FAILED).any():
            continue
        said = group[group["kind"] == UTTERANCE]
        out[str(item_id)] = float(said["t"].iloc[0]) if len(said) else None
    return out

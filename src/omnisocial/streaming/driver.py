"""The streaming driver: items asked step by step through any backend, via the runner.

`stream(backend, items, protocol, ...)` keeps `backend.concurrency` calls in flight (each of
up to `backend.batch_size` steps) whenever any item has a step to ask: the items are
independent, and the steps of one item go in order (step k+1 is asked only after step k's
reply, with its history), so a slot freed by one item's reply goes at once to the next step
that can be asked. The item with the most planned steps left goes first (among equals, the
one opened first: an item under way keeps going), and items open longest plan first (the
lowest-numbered among equals), up to 2 x the slots streaming at a time
(the next opens when one ends): the longest items bound the job (their steps go one after
another whatever the slots), so starting them last would leave slots idle at the end; this
is highest-level-first scheduling of the items' chains of steps, within the open items. No
round waits for every item's step. Each step is one runner request
(`models.runner.InferenceSession.answer`, from the call threads): item id '<item_id>@<t>',
the protocol's (system, prompt) for t, and the step's media assembled from the item's
segments (`streaming.media`), so its cache key holds the prompt (t and any history) and the
media's sha256: a job killed mid-item replays its
answered steps from the cache, repeats no call, and goes on from the first unanswered step.

Media are prepared ahead, off the request path, by a bounded prefetch (`prepare_threads`
threads): when step k of an item is sent, step k+1's media are joined, and the first step of
the next items to open; a backend with `prepare_media` (OpenAI-compatible: frames sampled,
audio extracted, base64 built) prepares its message parts there too, unless the store already
answered that item with these media (a resumed run need not prepare what it replays), told
what the step's segments hold (`streaming.media.StepMedia`: whether it has sound, its frames
taken from the item's frames sampled once), so no step is probed or decoded again. At most
about 2 x (in-flight steps + lookahead) steps' media exist at once; each is deleted when its
step is answered (or its item stopped).

A reply is read by the protocol's parser: silence, utterance, or unparsed (counted, never
read as silence; the stream goes on). A failed call (no reply after the backend's retries)
ends that item's stream with a `failed` row naming the reason; the runner's failure policy
(consecutive failures, probe) applies across the job, and its `max_failed_share` to the
share of items whose stream failed. A stop-at-first protocol ends an item at its first
utterance; others run to the schedule's end. The steps table is sorted by item (in the
order given) and step, whatever order the replies came in.

Before the first call the job logs its planned calls (`streaming.cost`) and stops, with no
call made, when they exceed the entry's `max_calls`. The summary counts the calls made in
this run (`n_calls`) and the steps answered from the cache (`n_cached`) apart: after an
interruption and a rerun, n_calls + n_cached equals an uninterrupted run's n_calls.
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from omnisocial.models.base import Backend, Request
from omnisocial.models.runner import FailurePolicy, InferenceSession
from omnisocial.streaming.contracts import STREAM_STEPS, STREAM_SUMMARY
from omnisocial.streaming.cost import CallPlan, check_budget, plan_calls, price_line
from omnisocial.streaming.media import StepMedia, assemble, describe_step, segment_paths, step_segments
from omnisocial.streaming.protocol import (
    FAILED,
    SILENCE,
    UNPARSED,
    UTTERANCE,
    Parsed,
    Said,
    StreamItem,
    StreamProtocol,
)
from omnisocial.streaming.schedule import format_time

log = logging.getLogger(__name__)

# media preparation (joins in process; frame sampling, an item's once, by ffmpeg): at least 4
PREPARE_THREADS = max(4, os.cpu_count() or 1)
PARSE_MEMO_CHARS, PARSE_MEMO_SIZE = 256, 4096  # replies read once each (`_Streams._parse`)


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


def _step_media(item, protocol, root, modality, t, folder: Path) -> tuple[Path, StepMedia | None]:
    """Step t's media joined from the segments into `folder`, with what is known of them
    (`StepMedia`, for mp4); a missing segment is returned as the media path, so the runner
    records the step failed naming it (never a new cut)."""
    paths = segment_paths(root, modality, item, protocol.window_s)
    span = step_segments(item, protocol.window_s, protocol.window_start(item, t), t)
    parts = paths[span]
    missing = [path for path in parts if not path.is_file()]
    if missing:
        return missing[0], None
    joined = assemble(parts, folder / f"{item.item_id}@{format_time(t)}{paths[0].suffix}")
    return joined, (describe_step(paths, span.start, span.stop, joined) if joined.suffix == ".mp4" else None)


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
    prepare_threads: int | None = None,
) -> StreamRun:
    """Stream `items` through `backend` (module doc); `entry` supplies max_calls and prices."""
    entry = dict(entry or {})
    model = model or str(entry.get("name") or getattr(backend, "name", type(backend).__name__))
    items = list(items)
    plan = plan_calls(model, items, protocol.stop_at_first)
    price = price_line(plan, entry)
    log.info("%s%s", plan.describe(), f"; price: {price}" if price else "")
    check_budget(plan, entry.get("max_calls"))
    work_parent = Path(work_dir) if work_dir is not None else None
    if work_parent is not None:
        work_parent.mkdir(parents=True, exist_ok=True)
    with (
        InferenceSession(backend, cache_path, progress, policy, progress_total=plan.calls) as session,
        tempfile.TemporaryDirectory(prefix="stream-", dir=work_parent) as scratch,
    ):
        streams = _Streams(
            backend,
            session,
            items,
            protocol,
            model,
            modality=modality,
            segments_root=segments_root,
            scratch=Path(scratch),
            prepare_threads=prepare_threads or PREPARE_THREADS,
        )
        rows, failed_items = streams.run()
        calls = session.calls
        outcomes = pd.DataFrame(
            {
                "ok": [item.item_id not in failed_items for item in items],
                "error": [failed_items.get(item.item_id) for item in items],
            }
        )
        session.check_failed_share(outcomes, what="item streams")
    order = {item.item_id: index for index, item in enumerate(items)}
    rows.sort(key=lambda row: (order[row["item_id"]], row["step"]))
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


@dataclass
class _Step:
    index: int  # the item's position in the job
    step: int
    t: float
    media: Path


class _Streams:
    """The scheduler of one `stream` job (module doc): slots, ready items, the media prefetch."""

    def __init__(
        self, backend, session, items, protocol, model, *, modality, segments_root, scratch, prepare_threads
    ):
        self.backend, self.session, self.items, self.protocol, self.model = (
            backend,
            session,
            items,
            protocol,
            model,
        )
        self.modality, self.segments_root, self.scratch = modality, segments_root, scratch
        self.key = media_key(modality)
        self.slots = max(1, int(getattr(backend, "concurrency", 1) or 1))
        self.batch = max(1, int(getattr(backend, "batch_size", 1) or 1))
        # items streaming at once: every slot's item and as many ready to take a freed slot,
        # so the item with the most steps left can go first (module doc)
        self.live_limit = 2 * self.slots * self.batch
        self.times = [item.schedule.times() for item in items]
        # the order items open in: the longest plan first (the lowest-numbered among equals)
        self.opening = sorted(range(len(items)), key=lambda index: (-len(self.times[index]), index))
        self.rank = {index: rank for rank, index in enumerate(self.opening)}
        self.history: list[tuple[Said, ...]] = [() for _ in items]
        self.next_step = [0] * len(items)
        self.ready: list[tuple[int, int, int]] = []  # heap of (-steps left, rank, item) to ask
        self.opened = 0  # items opening[:opened] have been opened
        self.live = 0  # opened and not ended
        self.media: dict[tuple[int, int], Future] = {}  # (item, step) -> Future[Path]
        self.in_flight: dict[Future, list[_Step]] = {}
        self.rows: list[dict] = []
        self.parsed: dict[str, Parsed] = {}  # `_parse`
        self.failed: dict[str, str] = {}
        self.prepare = getattr(backend, "prepare_media", None)
        self.release = getattr(backend, "release_media", None)
        self.prepare_pool = ThreadPoolExecutor(
            max_workers=max(1, prepare_threads), thread_name_prefix="stream-media"
        )
        self.call_pool = ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="stream-call")

    # --- the loop ----------------------------------------------------------------------------

    def run(self) -> tuple[list[dict], dict[str, str]]:
        try:
            self._open_items()
            while self.in_flight or self.ready:
                self._fill_slots()
                # a reply frees a slot; with a slot free, a ready item's media being done fills it
                waiting = list(self.in_flight)
                if len(self.in_flight) < self.slots:
                    waiting += self._ready_media()
                done, _ = wait(waiting, return_when=FIRST_COMPLETED)
                for future in done:
                    if future in self.in_flight:
                        self._answered(self.in_flight.pop(future), future.result())
                self._open_items()
        finally:
            self.call_pool.shutdown(wait=not self.in_flight, cancel_futures=True)
            for future in self.media.values():  # prefetched for steps never asked (a failed job)
                self._discard(future)
            self.prepare_pool.shutdown(wait=True)
        return self.rows, self.failed

    def _open_items(self) -> None:
        while self.live < self.live_limit and self.opened < len(self.items):
            index = self.opening[self.opened]
            self.opened += 1
            self.live += 1
            self._prefetch(index, 0)
            self._push_ready(index)
        for index in self.opening[self.opened : self.opened + self.slots]:
            self._prefetch(index, 0)  # the first steps of the items to open next

    def _push_ready(self, index: int) -> None:
        left = len(self.times[index]) - self.next_step[index]
        heapq.heappush(self.ready, (-left, self.rank[index], index))

    def _fill_slots(self) -> None:
        while len(self.in_flight) < self.slots:
            batch = self._take(self.batch)
            if not batch:
                return
            requests = [self._request(step) for step in batch]
            for step in batch:
                self._prefetch(step.index, step.step + 1)  # prepared while this step is asked
            self.in_flight[self.call_pool.submit(self.session.answer_records, requests)] = batch

    def _take(self, limit: int) -> list[_Step]:
        """Up to `limit` ready steps whose media are prepared, the most steps left first."""
        chosen, kept = [], []
        while self.ready and len(chosen) < limit:
            entry = heapq.heappop(self.ready)
            index = entry[-1]
            future = self.media[(index, self.next_step[index])]
            if future.done():
                step = self.next_step[index]
                del self.media[(index, step)]
                chosen.append(_Step(index, step, self.times[index][step], future.result()))
            else:
                kept.append(entry)
        for entry in kept:
            heapq.heappush(self.ready, entry)
        return chosen

    def _ready_media(self) -> list[Future]:
        return [self.media[(index, self.next_step[index])] for *_, index in self.ready]

    def _request(self, step: _Step) -> Request:
        item = self.items[step.index]
        return step_request(item, self.protocol, step.t, self.history[step.index], step.media, self.key)

    def _answered(self, batch: list[_Step], records: list[dict]) -> None:
        for step, record in zip(batch, records, strict=True):
            self._forget(step.media)
            item = self.items[step.index]
            row = _row(self.model, item, self.protocol, step.step, step.t, record, self._parse)
            self.rows.append(row)
            if row["kind"] == FAILED:
                self.failed[item.item_id] = row["error"]
                log.warning(
                    "%s: item %s stream failed at t = %.3f s: %s",
                    self.model,
                    item.item_id,
                    step.t,
                    row["error"],
                )
                self._end(step.index)
                continue
            if row["kind"] == UTTERANCE:
                self.history[step.index] += (Said(step.t, row["text"]),)
                if self.protocol.stop_at_first:
                    self._end(step.index)
                    continue
            if step.step + 1 < len(self.times[step.index]):
                self.next_step[step.index] = step.step + 1
                self._push_ready(step.index)
            else:
                self._end(step.index)

    def _parse(self, reply: str) -> Parsed:
        """The protocol's reading of a reply, once per distinct short reply: a parser is a
        function of the text, most replies are the same few words ("NO"), and the released
        parsers' regular expressions cost a millisecond a reply on the path to the next call."""
        if len(reply) > PARSE_MEMO_CHARS:
            return self.protocol.parse(reply)
        parsed = self.parsed.get(reply)
        if parsed is None:
            parsed = self.protocol.parse(reply)
            if len(self.parsed) < PARSE_MEMO_SIZE:
                self.parsed[reply] = parsed
        return parsed

    def _end(self, index: int) -> None:
        self.live -= 1
        following = self.media.pop((index, self.next_step[index] + 1), None)
        if following is not None:  # prefetched for a step that will not be asked
            self._discard(following)

    # --- media ---------------------------------------------------------------------------------

    def _prefetch(self, index: int, step: int) -> None:
        if step >= len(self.times[index]) or (index, step) in self.media:
            return
        self.media[(index, step)] = self.prepare_pool.submit(self._prepared_media, index, step)

    def _prepared_media(self, index: int, step: int) -> Path:
        item, t = self.items[index], self.times[index][step]
        path, known = _step_media(item, self.protocol, self.segments_root, self.modality, t, self.scratch)
        if self.prepare is not None and path.is_file():
            media = {self.key: path}
            try:
                if not self.session.answered_before(f"{item.item_id}@{format_time(t)}", media):
                    # what the step's segments tell (its audio, its frames sampled once per
                    # item) spares the backend a probe and a decode of the prefix per step
                    self.prepare(media, known={self.key: known} if known is not None else None)
            except Exception as exc:  # the call builds it again and records why it fails
                log.debug(
                    "%s: media of %s at t = %s not prepared ahead: %s", self.model, item.item_id, t, exc
                )
        return path

    def _forget(self, path: Path) -> None:
        """A step's media once its answer is in: the backend's prepared parts and the file."""
        if self.release is not None:
            self.release({self.key: path})
        if path.parent == self.scratch:  # a missing segment is passed as its own path: never delete it
            self.prepare_pool.submit(path.unlink, missing_ok=True)  # off the path to the next call

    def _discard(self, future: Future) -> None:
        if future.cancel():
            return
        with contextlib.suppress(Exception):  # a failed join: nothing was written
            self._forget(future.result())


def _row(
    model: str, item: StreamItem, protocol: StreamProtocol, step: int, t: float, record: Mapping, parse=None
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
    parsed = (parse or protocol.parse)(reply)
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

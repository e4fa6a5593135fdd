"""Run a backend over many requests with a persistent, append-only result store.

The store is a JSON-lines file: one record per finished call, written to the file in one
write under a lock the moment the reply arrives, before the caller can make its next call,
so a killed job (even `kill -9`) loses at most the calls in flight and a rerun repeats no
answered call. The fsync follows in the store's own thread, one for every record written
meanwhile (group commit), so no call waits for the disk: on a slow or shared disk, or at 16
calls in flight whose fsyncs queued behind one lock, they cost every call a wait
(docs/performance.md#models). Only a
crash of the machine itself can lose more: the records of the last fsync's few milliseconds.
A crash in the middle of a write leaves a torn last line: readers skip it with a
warning, and the next writer starts on a fresh line so the tear never swallows a record.

A record is keyed by `Request.key(model fingerprint, media sha256s)`. On a rerun, keys
with a successful record make no call; failed keys (their reason and attempt count are
recorded) are called again. A key's result is its latest successful record, or its latest
failure when none succeeded.

`run_inference` answers a fixed list of requests; `InferenceSession` is the same machinery
kept open for callers that build their next requests from the last replies (the streaming
driver, `omnisocial.streaming`, asks step k + 1 of an item after step k's reply).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from omnisocial.io import sha256_file
from omnisocial.models.base import Backend, Reply, Request
from omnisocial.models.transport import CallReply, now_iso

try:  # serialise appends across processes too (POSIX); the thread lock covers one process
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None

logger = logging.getLogger(__name__)

RECORD_FIELDS = (
    "key",
    "model",
    "model_fingerprint",
    "model_version",
    "item_id",
    "prompt_hash",
    "media_hashes",
    "settings",
    "text",
    "error",
    "ok",
    "attempts",
    "run_attempt",
    "finish_reason",
    "audio_path",
    "latency_s",
    "timestamp",
)
FRAME_COLUMNS = (*RECORD_FIELDS, "cached")
_JSON_FIELDS = ("media_hashes", "settings")


class InferenceAborted(RuntimeError):
    """The job must fail: its backend is unreachable, its calls keep failing, or too many failed."""


@dataclass(frozen=True)
class FailurePolicy:
    """When a model job fails rather than succeeds with failed calls in its tables.

    `max_failed_share`: largest share of a job's requests whose latest result may be a
    failure; `max_consecutive_failures`: failed calls in a row that end the job (0: never);
    `probe`: ask the backend's `probe()` (reachability and credentials) before the first call.
    """

    max_failed_share: float = 0.02
    max_consecutive_failures: int = 20
    probe: bool = True

    @classmethod
    def from_config(cls, config: Mapping) -> FailurePolicy:
        """From the config's `inference` block (keys as in the schema)."""
        default = cls()
        return cls(
            max_failed_share=float(config.get("max_failed_share", default.max_failed_share)),
            max_consecutive_failures=int(
                config.get("max_consecutive_failures", default.max_consecutive_failures)
            ),
            probe=bool(config.get("probe_backends", default.probe)),
        )


def failure_summary(frame: pd.DataFrame, limit: int = 3) -> str:
    """'k of n failed' plus the first distinct reasons, for logs and error messages."""
    failed = frame[~frame["ok"]]
    reasons = list(dict.fromkeys(str(e) for e in failed["error"]))[:limit]
    text = f"{len(failed)} of {len(frame)} requests failed"
    return text + (": " + " | ".join(reasons) if reasons else "")


def prompt_hash(request: Request) -> str:
    payload = json.dumps({"system": request.system, "prompt": request.prompt}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class ResultStore:
    """The append-only JSONL file of call records (module doc: written at once, fsynced behind)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._handle = None
        self._synced = threading.Condition()
        self._written = self._durable = 0  # records written, records fsynced
        self._closing = False
        self._sync_error: OSError | None = None
        self._syncer: threading.Thread | None = None

    def read(self) -> list[dict]:
        """Every readable record in file order; torn or foreign lines are skipped with a warning."""
        if not self.path.exists():
            return []
        records = []
        lines = self.path.read_bytes().split(b"\n")
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                torn = "torn last line" if number >= len(lines) - 1 else "unreadable line"
                logger.warning("%s:%d: %s skipped (%d bytes)", self.path, number, torn, len(line))
                continue
            if not isinstance(record, dict) or not isinstance(record.get("key"), str):
                logger.warning("%s:%d: not a result record, skipped", self.path, number)
                continue
            records.append(record)
        return records

    def open(self) -> ResultStore:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "ab")  # noqa: SIM115 - closed in close()
        with self._locked():
            size = self._handle.seek(0, os.SEEK_END)
            if size:
                with open(self.path, "rb") as reader:
                    reader.seek(size - 1)
                    last = reader.read(1)
                if last != b"\n":  # a torn line: end it so the next record starts clean
                    self._write(b"\n")
                    os.fsync(self._handle.fileno())
        self._closing, self._sync_error = False, None
        self._syncer = threading.Thread(target=self._sync_loop, name="result-store-fsync", daemon=True)
        self._syncer.start()
        return self

    def append(self, record: Mapping) -> None:
        """Write `record` as one line (in the file when this returns); its fsync follows."""
        if self._sync_error is not None:
            raise self._sync_error
        line = json.dumps(record, sort_keys=True, ensure_ascii=False, default=str) + "\n"
        with self._locked():
            self._write(line.encode("utf-8"))
        with self._synced:
            self._written += 1
            self._synced.notify_all()

    def _write(self, data: bytes) -> None:
        self._handle.write(data)
        self._handle.flush()  # in the file now: a killed process cannot lose it

    def _sync_loop(self) -> None:
        """fsync whenever records were written since the last one (one fsync for all of them)."""
        fd = self._handle.fileno()
        while True:
            with self._synced:
                while self._durable == self._written and not self._closing:
                    self._synced.wait()
                if self._durable == self._written:
                    return
                target = self._written
            try:
                os.fsync(fd)
            except OSError as exc:  # raised by the next append and by close
                self._sync_error = exc
                target = self._written
            with self._synced:
                self._durable = target
                self._synced.notify_all()

    @contextlib.contextmanager
    def _locked(self):
        if self._handle is None:
            raise RuntimeError(f"{self.path}: store is not open")
        with self._lock:
            if fcntl is not None:
                fcntl.flock(self._handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                if fcntl is not None:
                    fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)

    def close(self) -> None:
        """Wait for the last records' fsync, then close the file."""
        if self._handle is None:
            return
        if self._syncer is not None:
            with self._synced:
                self._closing = True
                self._synced.notify_all()
            self._syncer.join()
            self._syncer = None
        self._handle.close()
        self._handle = None
        if self._sync_error is not None:
            raise self._sync_error

    def __enter__(self) -> ResultStore:
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()


def latest_by_key(records: Iterable[dict]) -> dict[str, dict]:
    """key -> its latest successful record, or its latest record when none succeeded."""
    best: dict[str, dict] = {}
    for record in records:
        key = record["key"]
        if record.get("ok") or not best.get(key, {}).get("ok"):
            best[key] = record
    return best


def _frame(rows: list[dict], columns: tuple[str, ...]) -> pd.DataFrame:
    flat = []
    for row in rows:
        out = {column: row.get(column) for column in columns}
        for field in _JSON_FIELDS:
            if not isinstance(out[field], str):
                out[field] = json.dumps(out[field] or {}, sort_keys=True)
        flat.append(out)
    frame = pd.DataFrame(flat, columns=list(columns))
    frame["ok"] = frame["ok"].fillna(False).astype(bool)
    for column in ("attempts", "run_attempt"):
        frame[column] = pd.to_numeric(frame[column]).fillna(0).astype("int64")
    frame["latency_s"] = pd.to_numeric(frame["latency_s"]).astype("float64")
    if "cached" in frame:
        frame["cached"] = frame["cached"].astype(bool)
    return frame


def load_results(cache_path: str | os.PathLike) -> pd.DataFrame:
    """One row per key: its latest successful record, or its latest failure (file order)."""
    best = latest_by_key(ResultStore(cache_path).read())
    return _frame(list(best.values()), RECORD_FIELDS)


class _Hasher:
    """sha256 of media files, computed once per (file, size, mtime) within a run."""

    def __init__(self):
        self._memo: dict[tuple, str] = {}

    def __call__(self, path: Path) -> str:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if key not in self._memo:
            self._memo[key] = sha256_file(path)
        return self._memo[key]


def _media_signature(hashes: Mapping[str, str]) -> tuple:
    return tuple(sorted(hashes.items()))


def _settings_for(backend: Backend, request: Request) -> dict:
    effective = getattr(backend, "settings_for", None)
    if callable(effective):
        try:
            return dict(effective(request))
        except Exception:  # an unknown setting: the call itself will fail and say why
            return dict(request.settings)
    return dict(request.settings)


# seconds between the progress lines mirrored to the console (the tqdm bar goes to the rule log)
CONSOLE_EVERY_S = 30.0


def console_progress(bar, failures: int, *, force: bool = False, stream=None) -> str | None:
    """Every CONSOLE_EVERY_S seconds (and when done), one line with done/total, rate and ETA on
    the console: `sys.__stderr__`, which workflow scripts leave pointing at Snakemake's terminal
    while their logging and stderr go to the rule's log. Returns the line written, if any."""
    if getattr(bar, "disable", False):  # progress off: a disabled bar has no desc and counts nothing
        return None
    now = time.monotonic()
    last = getattr(bar, "_console_last", None)
    done = bar.n >= (bar.total or 0)
    if last is None:
        bar._console_last = last = now
    if not (force or done or now - last >= CONSOLE_EVERY_S) or getattr(bar, "_console_done", False):
        return None
    bar._console_last = now
    bar._console_done = done
    info = bar.format_dict
    rate = info.get("rate") or (bar.n / info["elapsed"] if info.get("elapsed") else None)
    remaining = (bar.total - bar.n) / rate if rate and bar.total else None
    eta = tqdm.format_interval(remaining) if remaining is not None else "?"
    line = (
        f"[omnisocial] {bar.desc}: {bar.n}/{bar.total} calls"
        f"{f', {failures} failed' if failures else ''}, ETA {eta}"
        f" (elapsed {tqdm.format_interval(info.get('elapsed', 0))})\n"
    )
    target = stream or sys.__stderr__
    if target is not None and target is not sys.stderr:
        target.write(line)
        target.flush()
    return line


def run_inference(
    backend: Backend,
    requests: Iterable[Request],
    cache_path: str | os.PathLike,
    progress: bool = True,
    policy: FailurePolicy | None = None,
) -> pd.DataFrame:
    """Answer every request through `backend`, reusing successful records in `cache_path`.

    Calls run `backend.concurrency` at a time (default 1), `backend.batch_size` requests per
    `generate` call (default 1). Each reply is appended to the store as soon as it arrives.
    Returns one row per request, in request order: the record's fields plus `cached` (True
    when no call was made for it in this run). Requests whose media files are missing are
    recorded as failures without a call.

    With a `policy`, raises `InferenceAborted` (after the store holds every finished call)
    when the backend's probe fails, when `max_consecutive_failures` calls fail in a row, or
    when more than `max_failed_share` of the requests end failed.
    """
    requests = list(requests)
    with InferenceSession(backend, cache_path, progress, policy) as session:
        frame = session.answer(requests)
    session.check_failed_share(frame)
    return frame


class InferenceSession:
    """`run_inference`'s machinery kept open over many `answer` calls, for callers that decide
    their next requests from the last replies (the streaming driver: step k+1 after step k).

    One store read and one open store for the whole session, one probe before the first call
    that is made, one consecutive-failure count across `answer` calls; `progress_total` sizes
    the progress bar when the caller knows (an upper bound of) the calls ahead. `answer` may be
    called from several threads at once (the streaming driver keeps `concurrency` steps of
    different items in flight, each its own `answer`): the store, the counters and the probe
    are shared under one lock.
    """

    def __init__(
        self,
        backend: Backend,
        cache_path: str | os.PathLike,
        progress: bool = True,
        policy: FailurePolicy | None = None,
        progress_total: int | None = None,
    ):
        self.backend = backend
        self.policy = policy
        self.name = getattr(backend, "name", type(backend).__name__)
        self.fingerprint = backend.fingerprint()
        self.store = ResultStore(cache_path)
        self._progress = progress
        self._total = progress_total
        self._hasher = _Hasher()
        self._lock = threading.Lock()
        self._probe_lock = threading.Lock()
        self._probed = False
        self.failures = 0
        self.consecutive = 0
        self.calls = 0  # requests sent to the backend in this session
        self.requests = 0
        self.cached = 0
        self._started = time.perf_counter()

    def __enter__(self) -> InferenceSession:
        history = self.store.read()
        self._runs = Counter(record["key"] for record in history)
        self._best = latest_by_key(history)
        self._answered_media = {
            (record.get("item_id"), _media_signature(record.get("media_hashes") or {}))
            for record in self._best.values()
            if record.get("ok")
        }
        self.store.open()
        self.bar = tqdm(
            total=self._total or 0,
            desc=self.name,
            unit="call",
            file=sys.stderr,
            disable=not self._progress,
            mininterval=0.5,
            dynamic_ncols=True,
        )
        return self

    def __exit__(self, *exc) -> None:
        self.bar.close()
        self.store.close()
        logger.info(
            "%s: %d requests, %d cached, %d called, %d failed, %.1f s",
            self.name,
            self.requests,
            self.cached,
            self.calls,
            self.failures,
            time.perf_counter() - self._started,
        )

    def keys(self, requests: list[Request]) -> tuple[list[str], list[dict], list[list[str]]]:
        """(cache key, media sha256s, missing media files) of each request."""
        keys, media_hashes, missing = [], [], []
        for request in requests:
            hashes, absent = {}, []
            for modality, path in request.media.items():
                path = Path(path)
                if path.is_file():
                    hashes[modality] = self._hasher(path)
                else:
                    hashes[modality] = ""
                    absent.append(str(path))
            keys.append(request.key(self.fingerprint, hashes))
            media_hashes.append(hashes)
            missing.append(absent)
        return keys, media_hashes, missing

    def answered_before(self, item_id: str, media: Mapping[str, os.PathLike]) -> bool:
        """Whether the store holds an answer for `item_id` with exactly this media (any prompt):
        a cheap hint that the request will come from the cache (so its media need no preparing)."""
        hashes = {modality: self._hasher(Path(path)) for modality, path in media.items()}
        return (item_id, _media_signature(hashes)) in self._answered_media

    def answer(self, requests: list[Request]) -> pd.DataFrame:
        """One row per request, in order (`run_inference`'s frame); calls only what the store lacks."""
        return _frame(self.answer_records(requests), FRAME_COLUMNS)

    def answer_records(self, requests: list[Request]) -> list[dict]:
        """`answer` as the store's records (each with `cached`), no frame built: the streaming
        driver reads a few fields of one step at a time."""
        requests = list(requests)
        keys, media_hashes, missing = self.keys(requests)
        best = self._best
        todo: dict[str, int] = {}  # key -> index of its first request
        for index, key in enumerate(keys):
            if key not in todo and not best.get(key, {}).get("ok"):
                todo[key] = index
        if self._total is None:
            self.bar.total += len(todo)
        limit = self.policy.max_consecutive_failures if self.policy else 0

        def finish(index: int, reply: Reply, *, called: bool = True) -> None:
            record = self._record(requests[index], keys[index], media_hashes[index], reply)
            with self._lock:
                self.store.append(record)
                best[record["key"]] = record
                self.failures += not record["ok"]
                self.bar.update(1)
                if self.failures:
                    self.bar.set_postfix(failed=self.failures, refresh=False)
                console_progress(self.bar, self.failures)
                if not called:
                    return
                self.calls += 1
                self.consecutive = 0 if record["ok"] else self.consecutive + 1
                if limit and self.consecutive >= limit:
                    raise InferenceAborted(
                        f"{self.name}: {self.consecutive} calls in a row failed, the last with: "
                        f"{record['error']} (circuit breaker: inference.max_consecutive_failures "
                        f"{limit}); the cache keeps every finished call, so a plain rerun retries "
                        "only what failed or never ran"
                    )

        callable_indices = []
        for index in todo.values():
            if missing[index]:
                error = f"missing media file(s): {', '.join(missing[index])}"
                finish(index, CallReply(text=None, error=error, attempts=0), called=False)
            else:
                callable_indices.append(index)
        if callable_indices and self.policy and self.policy.probe and not self._probed:
            with self._probe_lock:  # one probe, whichever thread calls first
                if not self._probed:
                    _probe(self.backend, self.name)
                    self._probed = True
        _call_all(self.backend, requests, callable_indices, finish)
        with self._lock:
            self.requests += len(requests)
            self.cached += sum(1 for key in keys if key not in todo)
        return [dict(best[key], cached=key not in todo) for key in keys]

    def _record(self, request: Request, key: str, hashes: dict, reply: Reply) -> dict:
        with self._lock:
            self._runs[key] += 1
            run_attempt = self._runs[key]
        return {
            "key": key,
            "model": self.name,
            "model_fingerprint": self.fingerprint,
            "model_version": reply.model_version,
            "item_id": request.item_id,
            "prompt_hash": prompt_hash(request),
            "media_hashes": hashes,
            "settings": _settings_for(self.backend, request),
            "text": reply.text if reply.error is None else None,
            "error": reply.error,
            "ok": reply.error is None,
            "attempts": int(getattr(reply, "attempts", 1)),
            "run_attempt": run_attempt,
            "finish_reason": getattr(reply, "finish_reason", "") or "",
            "audio_path": getattr(reply, "audio_path", "") or "",
            "latency_s": round(float(reply.latency_s), 6),
            "timestamp": now_iso(),
        }

    def check_failed_share(self, frame: pd.DataFrame, what: str = "requests") -> None:
        """Raise `InferenceAborted` when more than the policy's `max_failed_share` of `frame` failed."""
        if self.policy is None or not len(frame):
            return
        share = float((~frame["ok"]).mean())
        if share > self.policy.max_failed_share:
            summary = failure_summary(frame).replace("requests", what, 1)
            raise InferenceAborted(
                f"{self.name}: {summary} ({share:.1%} > inference.max_failed_share "
                f"{self.policy.max_failed_share:.1%}); the cache keeps every reply, so a plain rerun "
                "makes exactly the failed calls"
            )


def _probe(backend: Backend, name: str) -> None:
    """One cheap request before the first batch: an unreachable host or a bad key fails now."""
    probe = getattr(backend, "probe", None)
    if not callable(probe):
        return
    problem = probe()
    if problem:
        raise InferenceAborted(f"{name}: {problem}; no call was made")


def _call_all(backend: Backend, requests: list[Request], indices: list[int], finish) -> None:
    """Call `backend.generate` over `indices` in chunks, `concurrency` chunks in flight."""
    if not indices:
        return
    batch = max(1, int(getattr(backend, "batch_size", 1) or 1))
    workers = max(1, int(getattr(backend, "concurrency", 1) or 1))
    chunks = [indices[i : i + batch] for i in range(0, len(indices), batch)]

    def run(chunk: list[int]) -> list[Reply]:
        try:
            replies = list(backend.generate([requests[i] for i in chunk]))
        except Exception as exc:  # the protocol says never raise; record it rather than lose the run
            return [Reply(text=None, error=f"backend raised {type(exc).__name__}: {exc}")] * len(chunk)
        if len(replies) != len(chunk):
            error = f"backend returned {len(replies)} replies for {len(chunk)} requests"
            return [Reply(text=None, error=error)] * len(chunk)
        return replies

    if len(chunks) == 1:  # one call (a streamed step): in the caller's thread, no pool to start
        for index, reply in zip(chunks[0], run(chunks[0]), strict=True):
            finish(index, reply)
        return
    pool = ThreadPoolExecutor(max_workers=min(workers, len(chunks)), thread_name_prefix="omni-run")
    pending = {}
    queue = iter(chunks)
    try:
        for chunk in queue:  # keep at most 2 x workers chunks queued: an interrupt cancels little
            pending[pool.submit(run, chunk)] = chunk
            if len(pending) >= 2 * workers:
                break
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                chunk = pending.pop(future)
                for index, reply in zip(chunk, future.result(), strict=True):
                    finish(index, reply)
                following = next(queue, None)
                if following is not None:
                    pending[pool.submit(run, following)] = following
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)

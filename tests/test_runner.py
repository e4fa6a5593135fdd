"""The inference runner and its append-only result store: caching, failures, resume after a kill."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from http_server import Action, FakeChatServer

from omnisocial.models.base import Reply, Request
from omnisocial.models.openai_compat import OpenAICompatBackend
from omnisocial.models.runner import RECORD_FIELDS, ResultStore, load_results, run_inference


def entry(server: FakeChatServer, **overrides) -> dict:
    base = {
        "name": "fake",
        "backend": "openai",
        "model": "fake-model",
        "base_url": server.url,
        "concurrency": 4,
        "timeout_s": 5,
        "max_retries": 1,
        "backoff_base_s": 0.01,
    }
    return {**base, **overrides}


def items(n: int, prefix: str = "d") -> list[Request]:
    return [Request(f"{prefix}{i:03d}", f"Do they know each other? item {prefix}{i:03d}") for i in range(n)]


@pytest.fixture
def server():
    with FakeChatServer() as fake:
        yield fake


def test_records_have_every_field_and_rerun_makes_no_call(server, tmp_path, capsys):
    cache = tmp_path / "responses.jsonl"
    with OpenAICompatBackend(entry(server)) as backend:
        first = run_inference(backend, items(6), cache, progress=True)
        assert server.requests == 6
        second = run_inference(backend, items(6), cache, progress=False)
    assert server.requests == 6  # everything cached
    assert "fake: 100%" in capsys.readouterr().err  # the progress bar goes to stderr
    assert not first["cached"].any() and second["cached"].all()
    assert list(first["item_id"]) == [f"d{i:03d}" for i in range(6)]
    records = [json.loads(line) for line in cache.read_text().splitlines()]
    assert len(records) == 6 and set(records[0]) == set(RECORD_FIELDS)
    record = records[0]
    assert record["ok"] and record["error"] is None and record["text"].startswith("{")
    assert record["model_version"] == "fake-model-2026-01-01+fp_test123"
    assert record["model_fingerprint"] == backend.fingerprint()
    assert record["settings"] == {"temperature": 0, "max_new_tokens": 512, "seed": 42, "top_p": 1.0}
    assert len(record["prompt_hash"]) == 64 and record["timestamp"].endswith("Z")
    assert first.drop(columns="cached").equals(second.drop(columns="cached"))
    assert load_results(cache).set_index("key").loc[record["key"], "text"] == record["text"]


def test_key_changes_with_prompt_settings_and_media_content(server, tmp_path):
    cache = tmp_path / "responses.jsonl"
    media = tmp_path / "a.wav"
    media.write_bytes(b"RIFF0000WAVE-one")
    with OpenAICompatBackend(entry(server, media={"audio_sample_rate": None})) as backend:
        base = Request("d1", "prompt", media={"audio": media})
        run_inference(backend, [base], cache, progress=False)
        run_inference(backend, [Request("d1", "prompt v2", media={"audio": media})], cache, progress=False)
        run_inference(
            backend, [Request("d1", "prompt", media={"audio": media}, settings={"seed": 7})], cache, False
        )
        assert server.requests == 3
        os.utime(media)  # touched but same bytes: same key
        run_inference(backend, [base], cache, progress=False)
        assert server.requests == 3
        media.write_bytes(b"RIFF0000WAVE-two")  # same path, new content: new key
        run_inference(backend, [base], cache, progress=False)
        assert server.requests == 4


def test_failures_are_recorded_then_retried_next_run(server, tmp_path):
    cache = tmp_path / "responses.jsonl"
    server.default = Action.error(500, body="model overloaded")
    with OpenAICompatBackend(entry(server, max_retries=2)) as backend:
        failed = run_inference(backend, items(3), cache, progress=False)
        assert server.requests == 9  # 3 items x (1 + 2 retries)
        assert not failed["ok"].any() and failed["text"].isna().all()
        assert (failed["attempts"] == 3).all() and (failed["run_attempt"] == 1).all()
        assert failed["error"].str.contains("HTTP 500: .*model overloaded.*gave up after 3 attempts").all()
        server.default = Action.ok()
        healed = run_inference(backend, items(3), cache, progress=False)
        assert server.requests == 12 and healed["ok"].all() and (healed["run_attempt"] == 2).all()
        run_inference(backend, items(3), cache, progress=False)
        assert server.requests == 12
    assert len(cache.read_text().splitlines()) == 6  # the failures stay in the history
    latest = load_results(cache)
    assert len(latest) == 3 and latest["ok"].all()


def test_duplicate_requests_make_one_call_and_missing_media_none(server, tmp_path):
    cache = tmp_path / "responses.jsonl"
    gone = tmp_path / "gone.wav"
    requests = [Request("d1", "same"), Request("d1", "same"), Request("d2", "q", media={"audio": gone})]
    with OpenAICompatBackend(entry(server)) as backend:
        frame = run_inference(backend, requests, cache, progress=False)
    assert server.requests == 1 and len(frame) == 3
    assert frame.loc[0, "key"] == frame.loc[1, "key"] and frame.loc[1, "ok"]
    assert not frame.loc[2, "ok"] and frame.loc[2, "attempts"] == 0
    assert frame.loc[2, "error"] == f"missing media file(s): {gone}"


def test_torn_last_line_is_skipped_with_a_warning_and_never_swallows_a_record(server, tmp_path, caplog):
    cache = tmp_path / "responses.jsonl"
    with OpenAICompatBackend(entry(server)) as backend:
        run_inference(backend, items(2), cache, progress=False)
        with open(cache, "ab") as handle:
            handle.write(b'{"key": "abc", "model": "fake", "te')  # a crash mid-write
        caplog.set_level(logging.WARNING, logger="omnisocial.models.runner")
        assert len(load_results(cache)) == 2
        assert "torn last line skipped" in caplog.text
        run_inference(backend, items(3), cache, progress=False)
    assert server.requests == 3
    lines = cache.read_bytes().split(b"\n")
    assert lines[2] == b'{"key": "abc", "model": "fake", "te'  # ended, not continued
    assert len(load_results(cache)) == 3


class _BatchRecorder:
    """A minimal local-style backend: batches, no concurrency, one item fails, one batch raises."""

    name = "batcher"
    modalities = ("text",)
    concurrency = 1
    batch_size = 4

    def __init__(self):
        self.batches: list[list[str]] = []

    def fingerprint(self) -> str:
        return "local:weights-sha"

    def generate(self, requests):
        self.batches.append([request.item_id for request in requests])
        if any(request.item_id == "d008" for request in requests):
            raise RuntimeError("CUDA out of memory")
        return [
            Reply(text=None, error="decode failed") if r.item_id == "d001" else Reply(text=f"ans {r.item_id}")
            for r in requests
        ]


def test_batched_backend_and_a_raising_batch(tmp_path):
    backend = _BatchRecorder()
    frame = run_inference(backend, items(10), tmp_path / "r.jsonl", progress=False)
    assert [len(batch) for batch in backend.batches] == [4, 4, 2]
    assert frame.set_index("item_id").loc["d002", "text"] == "ans d002"
    failed = set(frame.loc[~frame["ok"], "item_id"])
    assert failed == {"d001", "d008", "d009"}  # d009 shares d008's batch
    assert (
        frame.set_index("item_id").loc["d009", "error"] == "backend raised RuntimeError: CUDA out of memory"
    )
    run_inference(backend, items(10), tmp_path / "r.jsonl", progress=False)
    assert backend.batches[3:] == [["d001", "d008", "d009"]]  # only the failures are called again


CHILD = textwrap.dedent(
    """
    import sys
    from omnisocial.models.base import Request
    from omnisocial.models.openai_compat import OpenAICompatBackend
    from omnisocial.models.runner import run_inference

    url, cache, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    backend = OpenAICompatBackend(
        {"name": "fake", "backend": "openai", "model": "fake-model", "base_url": url, "concurrency": 4}
    )
    requests = [Request(f"d{i:03d}", f"Do they know each other? item d{i:03d}") for i in range(n)]
    run_inference(backend, requests, cache, progress=False)
    """
)


def test_resume_after_kill_calls_only_unfinished_items(server, tmp_path):
    n_items = 40
    server.default = Action.ok(delay_s=0.2)
    cache = tmp_path / "responses.jsonl"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, server.url, str(cache), str(n_items)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if cache.exists() and len(cache.read_bytes().split(b"\n")) > 8:
            break
        assert child.poll() is None, child.stderr.read().decode()
        time.sleep(0.01)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    child.stderr.close()
    time.sleep(0.5)  # let the server count what the child sent before it died
    finished = {record["item_id"] for record in ResultStore(cache).read()}
    sent_before = server.requests
    in_flight = sent_before - len(finished)
    assert 8 <= len(finished) < n_items and 0 <= in_flight <= 4

    requests = items(n_items)
    with OpenAICompatBackend(entry(server, concurrency=8)) as backend:
        frame = run_inference(backend, requests, cache, progress=False)
    assert server.requests == n_items + in_flight
    assert frame["ok"].all() and set(frame.loc[frame["cached"], "item_id"]) == finished
    for request in requests:  # a finished item was asked exactly once, ever
        if request.item_id in finished:
            assert server.prompts[request.prompt] == 1, request.item_id
    assert len(load_results(cache)) == n_items


def test_store_appends_are_whole_lines_under_threads(tmp_path):
    import threading

    store = ResultStore(tmp_path / "s.jsonl").open()
    big = "x" * 20000

    def write(worker: int) -> None:
        for i in range(25):
            store.append({"key": f"{worker}-{i}", "text": big, "ok": True})

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store.close()
    records = ResultStore(Path(tmp_path / "s.jsonl")).read()
    assert len(records) == 200 and {len(r["text"]) for r in records} == {20000}


def test_a_record_is_in_the_file_at_once_and_fsynced_behind(tmp_path, monkeypatch):
    """append returns with the line in the file (a killed job cannot lose it; a rerun repeats no
    call), and the store's own thread fsyncs every record written meanwhile (one fsync for
    several); close waits for the last one, and an fsync error is raised, not lost."""
    import os
    import threading

    from omnisocial.models import runner

    synced, gate = [], threading.Event()

    def fsync(fd):
        gate.wait(10)  # a slow disk: appends go on meanwhile
        synced.append(os.fstat(fd).st_size)

    monkeypatch.setattr(runner.os, "fsync", fsync)
    path = tmp_path / "s.jsonl"
    store = ResultStore(path).open()
    for i in range(5):
        store.append({"key": f"k{i}", "ok": True})
        assert len(ResultStore(path).read()) == i + 1  # in the file before the next call
    gate.set()
    store.close()
    assert 1 <= len(synced) < 5 and synced[-1] == path.stat().st_size

    def failing(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(runner.os, "fsync", failing)
    store = ResultStore(path).open()
    store.append({"key": "k5", "ok": True})
    with pytest.raises(OSError, match="Input/output"):
        store.close()

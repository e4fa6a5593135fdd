"""Failures never look like success: secrets in cut error bodies, file modes, attempt logs."""

from __future__ import annotations

import logging
import os
import stat
import types

import pytest
from http_server import Action, FakeChatServer

from omnisocial.io import write_csv, write_text
from omnisocial.models.base import Request
from omnisocial.models.openai_compat import OpenAICompatBackend
from omnisocial.models.runner import run_inference
from omnisocial.models.transport import REDACTED, Redactor

# 43 characters, as an OpenAI-style key.
LONG_KEY = "sk-proj-Q9wE4rT7yU1iO3pA5sD8fG2hJ6kL0zXcVbN"


def fragments(secret: str, n: int = 8) -> list[str]:
    return [secret[i : i + n] for i in range(len(secret) - n + 1)]


# --- redaction before the cut ---------------------------------------------------------------


def test_redactor_masks_fragments_a_cut_left():
    redact = Redactor([LONG_KEY])
    cut_prefix = f"bad key {LONG_KEY[:30]}"  # a server cut the key's tail away
    cut_suffix = f"{LONG_KEY[-12:]} was rejected"
    for text in (cut_prefix, cut_suffix):
        masked = redact(text)
        assert REDACTED in masked
        assert not any(f in masked for f in fragments(LONG_KEY)), masked
    assert redact(f"bad key {LONG_KEY[:7]}") == f"bad key {LONG_KEY[:7]}"  # under 8 chars stays
    assert redact("nothing secret here") == "nothing secret here"


@pytest.mark.parametrize("offset", [0, 250, 280, 290, 299])
def test_error_bodies_are_masked_before_they_are_cut(offset, tmp_path, monkeypatch, caplog):
    """A key anywhere in a long error body, also across the 300-character cut, never survives."""
    monkeypatch.setenv("OMNI_LONG_KEY", LONG_KEY)
    caplog.set_level(logging.DEBUG)
    body = "x" * offset + "{auth}" + " trailing words" * 40
    with FakeChatServer() as server:
        server.default = Action.error(401, body=body)
        entry = {
            "name": "fake",
            "backend": "openai",
            "model": "m",
            "base_url": server.url,
            "api_key_env": "OMNI_LONG_KEY",
            "max_retries": 0,
            "timeout_s": 5,
        }
        cache = tmp_path / "cache.jsonl"
        with OpenAICompatBackend(entry) as backend:
            frame = run_inference(backend, [Request("d01", "q")], cache, progress=False)
    leaked = frame["error"].iloc[0] + caplog.text + cache.read_text()
    assert not any(f in leaked for f in fragments(LONG_KEY))


def test_gemini_errors_are_masked_before_they_are_cut():
    from omnisocial.models.gemini import map_exception
    from omnisocial.models.transport import RetryPolicy, call_with_retries

    errors = pytest.importorskip("google.genai.errors")
    message = "y" * 290 + f"API key {LONG_KEY} is invalid"
    exc = errors.APIError(400, {"error": {"message": message, "status": "INVALID_ARGUMENT"}})
    reply = call_with_retries(
        lambda: map_exception(exc), RetryPolicy(max_retries=0), Redactor([LONG_KEY]), "gemini"
    )
    assert reply.error and not any(f in reply.error for f in fragments(LONG_KEY))


# --- outputs respect the umask --------------------------------------------------------------


def test_written_files_follow_the_umask(tmp_path):
    import pandas as pd

    old = os.umask(0o022)
    try:
        import importlib

        import omnisocial.io as io_module

        importlib.reload(io_module)  # the module reads the umask once, at import
        io_module.write_csv(tmp_path / "t.csv", pd.DataFrame({"a": [1]}))
        io_module.write_text(tmp_path / "t.txt", "x")
        for name in ("t.csv", "t.txt"):
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644
    finally:
        os.umask(old)
        importlib.reload(io_module)
    write_csv(tmp_path / "u.csv", pd.DataFrame({"a": [1]}))
    write_text(tmp_path / "u.txt", "x")
    expected = 0o666 & ~old
    assert stat.S_IMODE((tmp_path / "u.csv").stat().st_mode) == expected


# --- a retried job keeps the failed attempt's log -------------------------------------------


def test_each_attempt_appends_to_the_attempt_history(tmp_path):
    from omnisocial import workflow

    log = tmp_path / "rule.log"

    def job(attempt: int):  # Snakemake gives scripts no attempt number: the log counts them
        return types.SimpleNamespace(log=[str(log)], rule="demo_rule", params={})

    import sys

    saved = sys.stderr
    try:
        workflow.start(job(1))
        print("Traceback: first attempt failed", file=sys.stderr)
        log.unlink()  # what Snakemake does to a declared log before the retry
        workflow.start(job(2))
        logging.getLogger("x").info("second attempt ran")
    finally:
        sys.stderr = saved
        logging.basicConfig(force=True, handlers=[logging.NullHandler()])
    history = (tmp_path / "rule.log.attempts").read_text()
    assert "attempt 1" in history and "first attempt failed" in history
    assert "attempt 2" in history and "second attempt ran" in history
    assert history.index("attempt 1") < history.index("first attempt failed") < history.index("attempt 2")
    current = log.read_text()
    assert "attempt 2" in current and "first attempt failed" not in current


JOB_SCRIPT = """
import atexit, gc, sys, types
from omnisocial import workflow
# registered before start: exit handlers run last-registered first, so this one runs after
# start's and sees what the exit's collections will see
atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0, file=sys.__stdout__))
log = workflow.start(types.SimpleNamespace(log=[sys.argv[1]], rule="demo_rule", params={}))
log.info("the job ran")
outcome = sys.argv[2]
if outcome == "raise":
    raise ValueError("bad table")
if outcome == "exit":
    sys.exit(3)
"""


@pytest.mark.parametrize(("outcome", "status"), [("ok", 0), ("raise", 1), ("exit", 3)])
def test_a_job_skips_the_exit_collections_and_keeps_its_exit_status_and_log(tmp_path, outcome, status):
    import subprocess
    import sys

    log = tmp_path / "rule.log"
    script = tmp_path / "job.py"
    script.write_text(JOB_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), str(log), outcome], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == status, done.stderr
    assert "frozen at exit: True" in done.stdout
    text = log.read_text()
    assert "the job ran" in text
    if outcome == "raise":
        assert "ValueError: bad table" in text and "rule demo_rule failed" in done.stderr


# --- failing jobs: probe, circuit breaker, failed share -------------------------------------

from omnisocial.models.runner import FailurePolicy, InferenceAborted, load_results  # noqa: E402


def openai_entry(url: str, **overrides) -> dict:
    base = {
        "name": "fake",
        "backend": "openai",
        "model": "m",
        "base_url": url,
        "concurrency": 1,
        "timeout_s": 5,
        "max_retries": 0,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.02,
    }
    return {**base, **overrides}


def numbered(n: int) -> list[Request]:
    return [Request(f"d{i:02d}", f"question {i}") for i in range(n)]


def test_a_dead_host_fails_at_the_probe_without_a_call(tmp_path):
    import time

    cache = tmp_path / "cache.jsonl"
    started = time.monotonic()
    with (
        OpenAICompatBackend(openai_entry("http://127.0.0.1:9/v1", max_retries=5)) as backend,
        pytest.raises(InferenceAborted, match="unreachable"),
    ):
        run_inference(backend, numbered(20), cache, progress=False, policy=FailurePolicy())
    assert time.monotonic() - started < 5
    assert not cache.exists() or cache.read_text() == ""


def test_a_bad_key_fails_at_the_probe(tmp_path, monkeypatch):
    monkeypatch.setenv("OMNI_LONG_KEY", LONG_KEY)
    with FakeChatServer() as server:
        server.get_status = 401
        entry = openai_entry(server.url, api_key_env="OMNI_LONG_KEY")
        with OpenAICompatBackend(entry) as backend, pytest.raises(InferenceAborted) as failure:
            run_inference(backend, numbered(5), tmp_path / "c.jsonl", progress=False, policy=FailurePolicy())
        assert server.requests == 0 and server.gets == 1
    assert "refused the credentials" in str(failure.value)
    assert not any(f in str(failure.value) for f in fragments(LONG_KEY))


def test_a_fully_cached_rerun_makes_no_probe(tmp_path):
    cache = tmp_path / "c.jsonl"
    with FakeChatServer() as server:
        with OpenAICompatBackend(openai_entry(server.url)) as backend:
            run_inference(backend, numbered(3), cache, progress=False, policy=FailurePolicy())
        gets, posts = server.gets, server.requests
        with OpenAICompatBackend(openai_entry(server.url)) as backend:
            frame = run_inference(backend, numbered(3), cache, progress=False, policy=FailurePolicy())
        assert (gets, posts) == (1, 3) and (server.gets, server.requests) == (1, 3)
    assert frame["cached"].all()


def test_the_circuit_breaker_ends_the_job_after_consecutive_failures(tmp_path):
    cache = tmp_path / "c.jsonl"
    with FakeChatServer(default=Action.error(503)) as server:
        policy = FailurePolicy(max_consecutive_failures=4)
        with OpenAICompatBackend(openai_entry(server.url)) as backend, pytest.raises(InferenceAborted) as err:
            run_inference(backend, numbered(50), cache, progress=False, policy=policy)
        assert 4 <= server.requests <= 4 + 2  # at most 2 x concurrency calls were queued
    assert "4 calls in a row failed" in str(err.value)
    assert len(load_results(cache)) == 4  # every finished call is in the store


def failing_items(items: set[str]):
    def respond(body: dict, number: int) -> Action | None:
        prompt = body["messages"][-1]["content"]
        prompt = prompt if isinstance(prompt, str) else ""
        return Action.error(500) if any(prompt == f"question {i}" for i in items) else None

    return respond


def test_too_many_failed_calls_fail_the_job_and_a_rerun_makes_exactly_those(tmp_path):
    cache = tmp_path / "c.jsonl"
    requests = numbered(20)
    with FakeChatServer(responder=failing_items({2, 7, 11})) as server:
        with OpenAICompatBackend(openai_entry(server.url)) as backend, pytest.raises(InferenceAborted) as err:
            run_inference(
                backend, requests, cache, progress=False, policy=FailurePolicy(max_failed_share=0.1)
            )
        assert server.requests == 20
    assert "3 of 20 requests failed" in str(err.value) and "15.0% > inference.max_failed_share" in str(
        err.value
    )
    with FakeChatServer() as healthy:
        with OpenAICompatBackend(openai_entry(healthy.url)) as backend:
            frame = run_inference(backend, requests, cache, progress=False, policy=FailurePolicy())
        assert healthy.requests == 3
        assert sorted(healthy.prompts) == ["question 11", "question 2", "question 7"]
    assert frame["ok"].all() and int((~frame["cached"]).sum()) == 3


def test_failures_under_the_share_let_the_job_succeed_with_them_recorded(tmp_path):
    with FakeChatServer(responder=failing_items({5})) as server:
        with OpenAICompatBackend(openai_entry(server.url)) as backend:
            frame = run_inference(
                backend, numbered(60), tmp_path / "c.jsonl", progress=False, policy=FailurePolicy()
            )
        assert server.requests == 60
    assert int((~frame["ok"]).sum()) == 1 and frame.loc[~frame["ok"], "item_id"].tolist() == ["d05"]


# --- omnisocial score: every bad row is one clear line -------------------------------------

from omnisocial import cli  # noqa: E402

HEADER = "model,modality,item_id,truth,label,confidence\n"


def score(tmp_path, text: str, *options: str) -> tuple[int, str]:
    source = tmp_path / "p.csv"
    source.write_text(text)
    code = cli.main(["score", str(source), "-o", str(tmp_path / "m.csv"), *options])
    return code, ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (HEADER + "m,text,d1,familiar,familiar,1.7\n", "row 2 column confidence: '1.7' is outside [0, 1]"),
        (HEADER + "m,text,,familiar,familiar,0.5\n", "row 2 column item_id: empty value"),
        (HEADER + ",text,d1,familiar,familiar,0.5\n", "row 2 column model: empty value"),
        (HEADER, "no prediction rows (only a header)"),
        (
            HEADER + "m,text,d1,familiar,familiar,0.5\nm,text,d2,stranger,familiar,\nm,text,d1,familiar,,\n",
            "row 4: duplicate key (model=m, modality=text, item_id=d1) of row 2",
        ),
    ],
)
def test_score_rejects_bad_rows_in_one_line(tmp_path, capsys, text, expected):
    code, _ = score(tmp_path, text)
    error = capsys.readouterr().err.strip()
    assert code == 2 and len(error.splitlines()) == 1
    assert expected in error
    assert not (tmp_path / "m.csv").exists()


def test_score_takes_a_table_without_confidence(tmp_path, capsys):
    text = "model,modality,item_id,truth,label\nm,text,d1,familiar,familiar\nm,text,d2,stranger,familiar\n"
    code, _ = score(tmp_path, text)
    assert code == 0, capsys.readouterr().err
    metrics = cli.METRICS.read(tmp_path / "m.csv")
    assert metrics.iloc[0]["n_items"] == 2 and metrics.iloc[0]["accuracy"] == 0.5


def test_score_takes_other_label_and_modality_vocabularies(tmp_path, capsys):
    text = (
        "model,modality,item_id,truth,label,confidence\n"
        "m,speech,q1,Yes,yes,0.9\nm,speech,q2,no,yes,0.6\nm,speech,q3,no,no,0.7\nm,speech,q4,yes,,\n"
    )
    code, _ = score(tmp_path, text, "--labels", "yes,no", "--modalities", "any")
    assert code == 0, capsys.readouterr().err
    row = cli.METRICS.read(tmp_path / "m.csv").iloc[0]
    assert (row["modality"], row["n_items"], row["n_answered"]) == ("speech", 4, 3)
    assert row["familiar_recall"] == 1.0 and row["stranger_recall"] == 0.5  # 'yes' is the signal class
    code, _ = score(tmp_path, text)  # the default vocabulary names the offending value
    assert code == 2 and "column modality: 'speech' not in {text, audio, video}" in capsys.readouterr().err


def test_console_progress_is_silent_when_progress_is_off():
    """A job run with progress=False (its bar disabled) writes no console line, and does not fail
    once CONSOLE_EVERY_S has passed (a disabled tqdm has no desc)."""
    from tqdm import tqdm

    from omnisocial.models.runner import console_progress

    bar = tqdm(total=3, desc="m", disable=True)
    assert console_progress(bar, 0, force=True) is None

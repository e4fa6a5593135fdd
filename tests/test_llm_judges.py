"""LLM judges (judges/llm.py): request building, the cache, failures that are never scores."""

from __future__ import annotations

import math
import socket
import subprocess
import time

import pandas as pd
import pytest
from http_server import Action, FakeChatServer

from omnisocial.duplexeval.contracts import STREAM_ITEMS, STREAM_RESPONSES
from omnisocial.duplexeval.description import frame_times, judge_window
from omnisocial.duplexeval.judge_requests import judge_specs
from omnisocial.duplexeval.judged import score_judge_runs
from omnisocial.judges.llm import LLM_JUDGE_REPLIES, how_jobs, load_judges, run_judge, stream_jobs
from omnisocial.models.entries import RegistryError
from omnisocial.models.openai_compat import OpenAICompatBackend
from omnisocial.models.runner import FailurePolicy, InferenceAborted
from omnisocial.socialomni.how import aggregate_how, llm_how_judgements


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _entry(url: str, name: str = "judge-a", **extra) -> dict:
    return {"name": name, "backend": "openai", "model": "judge-model", "base_url": url, **extra}


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    path = tmp_path_factory.mktemp("video") / "clip.mp4"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10:duration=12",
         "-pix_fmt", "yuv420p", str(path)],
        check=True,
    )  # fmt: skip
    return path


def _item(split: str, item_id: str, video, **extra) -> dict:
    row = {
        "split": split, "item_id": item_id, "task": "RTD" if split.startswith("RTD") else "PR",
        "question_text": "Describe what you see.", "answer1": "A test pattern.", "answer2": "",
        "reminder1": None, "reminder2": None, "video_type": "", "video_duration": 12.0,
        "video": str(video), "question_audio": "",
    }  # fmt: skip
    return row | extra


def _sentences(model, split, item_id, spans):
    return [
        {"model": model, "split": split, "item_id": item_id, "sentence_index": k, "text": text,
         "start": start, "end": end, "is_point": start == end}
        for k, (text, start, end) in enumerate(spans)
    ]  # fmt: skip


def test_load_judges_validates_entries_and_one_entry_per_name():
    tasks, entries = load_judges(
        {"how": [_entry("http://127.0.0.1:1/v1")], "pr": [_entry("http://127.0.0.1:1/v1")]}
    )
    assert (
        tasks["how"] == ["judge-a"] and tasks["pr"] == ["judge-a"] and entries["judge-a"]["concurrency"] == 4
    )
    with pytest.raises(RegistryError, match="social.judges.how.*backend"):
        load_judges({"how": [{"name": "x", "backend": "nope", "model": "m"}]})
    with pytest.raises(RegistryError, match="differs"):
        load_judges({"how": [_entry("http://127.0.0.1:1/v1")], "pr": [_entry("http://127.0.0.1:2/v1")]})
    with pytest.raises(RegistryError, match="unknown task"):
        load_judges({"who": []})


def test_temporal_request_carries_the_window_frames_at_2_fps(video, tmp_path):
    items = STREAM_ITEMS.validate(pd.DataFrame([_item("RTD_counting", "i1", video)]))
    spans = [("A square appears.", 4.0, 6.0), ("Too late.", 13.0, 15.0), ("Hello.", 1.0, 1.0)]
    responses = STREAM_RESPONSES.validate(pd.DataFrame(_sentences("m", "RTD_counting", "i1", spans)))
    # a video judge of an unknown model says how a video's audio would go (it is sent frames only)
    entry = _entry("http://127.0.0.1:1/v1", modalities=["text", "video"], media={"video_audio": "none"})
    specs = judge_specs(["rtd_temporal"], responses, items, tmp_path, fps=2.0)
    jobs = stream_jobs(specs, entry, tmp_path / "frames")
    assert [job.index for job in jobs] == [2, 0]  # in time order; sentence 1's window passes the end
    first = jobs[1].request
    window = judge_window(4.0, 6.0, 12.0)
    assert window == (2.0, 4.0)
    times = frame_times(window, 2.0)
    assert len(times) == 4 and all(window[0] <= t <= window[1] for t in times)
    assert list(first.media) == ["image:000", "image:001", "image:002", "image:003"]
    assert all(path.is_file() and path.stat().st_size for path in first.media.values())
    assert "2.00 s to 4.00 s" in first.prompt and "A square appears." in first.prompt
    assert '"temporal_score"' in first.prompt and '"is_relevant"' in first.prompt
    assert len(jobs[0].request.media) == 1  # [0, 0.5]: one frame at the middle
    # the frames reach an OpenAI-compatible judge as image_url parts, in time order, then the prompt
    parts = OpenAICompatBackend(entry).content_parts(first)
    assert [p["type"] for p in parts] == ["image_url"] * 4 + ["text"]
    # a text-only judge gets no frames
    text_only = stream_jobs(specs, _entry("http://x:1/v1"), tmp_path / "f2")
    assert all(not job.request.media for job in text_only)


def test_reminder_request_holds_the_text_of_t_to_t_plus_10(video, tmp_path):
    items = STREAM_ITEMS.validate(
        pd.DataFrame(
            [
                _item("PR_event_reminder", "p1", video, reminder1=20.0, reminder2=40.0, video_duration=60.0),
                _item("PR_correction", "c1", video, answer1="The cup is red."),
            ]
        )
    )
    spans = [
        ("zzbefore", 19.0, 19.5),
        ("at the start", 20.0, 21.0),
        ("near the end", 30.0, 31.0),
        ("zzafter", 30.5, 32),
    ]
    rows = _sentences("m", "PR_event_reminder", "p1", spans)
    rows[3]["start"] = 30.01  # starts after t + 10: outside
    rows += _sentences("m", "PR_correction", "c1", [("No, it is red.", 3.0, 4.0)])
    responses = STREAM_RESPONSES.validate(pd.DataFrame(rows))
    specs = judge_specs(["pr"], responses, items, tmp_path)
    jobs = stream_jobs(specs, _entry("http://x:1/v1"), tmp_path / "frames")
    by_item = {(job.item_id, job.index): job.request.prompt for job in jobs}
    assert set(by_item) == {("p1", 0), ("c1", 0)}  # event 2 (t = 40) has no text: no call (scores 0)
    assert '"at the start near the end"' in by_item[("p1", 0)]
    assert "zzbefore" not in by_item[("p1", 0)] and "zzafter" not in by_item[("p1", 0)]
    assert "The cup is red." in by_item[("c1", 0)] and "No, it is red." in by_item[("c1", 0)]


def _candidates(replies):
    return pd.DataFrame(
        [
            {"model": "m", "modality": "text", "task": "how", "item_id": f"i{k}", "reply": reply, "ok": True}
            for k, reply in enumerate(replies)
        ]
    )


def _references(n):
    return pd.DataFrame(
        [{"item_id": f"i{k}", "ref_index": 0, "kind": "true", "text": "See you."} for k in range(n)]
    )


def test_a_failed_how_call_is_never_a_score():
    candidates = _candidates(["Bye then.", "Later!", "", "Ok."])
    jobs = how_jobs(candidates, _references(4))
    assert [job.item_id for job in jobs] == ["i0", "i1", "i3"]  # the empty candidate is never sent
    run = LLM_JUDGE_REPLIES.validate(
        pd.DataFrame(
            [
                {"judge": "j", "task": "how", "model": "m", "modality": "text", "split": "",
                 "item_id": job.item_id,
                 "kind": "how", "index": None, "n_media": 0, "ok": ok, "reply": reply, "error": error,
                 "cached": False}
                for job, (ok, reply, error) in zip(
                    jobs, [(True, "Score: 75", ""), (False, "", "HTTP 500"), (True, "N/A", "")], strict=True
                )
            ]
        )
    )  # fmt: skip
    released = llm_how_judgements(candidates, _references(4), {"j": run}, "released").set_index("item_id")
    assert released.loc["i0", "score"] == 75 and released.loc["i2", "score"] == 0  # empty candidate: 0
    assert math.isnan(released.loc["i1", "score"]) and released.loc["i1", "judge_failed"]
    assert released.loc["i3", "score"] == 0  # a reply that came back without a number: 0 as released
    strict = llm_how_judgements(candidates, _references(4), {"j": run}, "strict").set_index("item_id")
    assert math.isnan(strict.loc["i3", "score"]) and not strict.loc["i3", "judge_failed"]
    table = aggregate_how(released.reset_index()).set_index("judge")
    assert table.loc["j", "n_items"] == 3 and table.loc["j", "mean_with_zeros"] == pytest.approx(25.0)
    assert table.loc["j", "n_judge_failed"] == 1 and table.loc["j", "n_unparsed"] == 0


def test_a_failed_reminder_call_is_never_a_score(video):
    items = STREAM_ITEMS.validate(
        pd.DataFrame([_item("PR_event_reminder", "p1", video, reminder1=2.0, video_duration=30.0)])
    )
    responses = STREAM_RESPONSES.validate(
        pd.DataFrame(_sentences("m", "PR_event_reminder", "p1", [("Now!", 3, 4)]))
    )
    row = {"judge": "j", "task": "pr", "model": "m", "modality": "", "split": "PR_event_reminder",
           "item_id": "p1",
           "kind": "reminder", "index": 0, "n_media": 0, "cached": False}  # fmt: skip
    failed = LLM_JUDGE_REPLIES.validate(pd.DataFrame([row | {"ok": False, "reply": "", "error": "timeout"}]))
    passed = LLM_JUDGE_REPLIES.validate(
        pd.DataFrame([row | {"ok": True, "reply": '{"success_score": 1}', "error": ""}])
    )
    _, pr = score_judge_runs(responses, items, {"j": failed})
    assert math.isnan(pr.loc[0, "sample_score"]) and pr.loc[0, "n_judge_failed"] == 1
    assert pr.loc[0, "n_scored"] == 0 and pr.loc[0, "n_missing_replies"] == 0
    _, pr = score_judge_runs(responses, items, {"j": passed})
    assert pr.loc[0, "sample_score"] == 1 and pr.loc[0, "n_judge_failed"] == 0


def test_a_streamed_model_that_never_spoke_is_scored_by_the_llm_judges(video):
    """No sentence, so no judge call: it scores as the empty response (0), not as no model at all."""
    items = STREAM_ITEMS.validate(
        pd.DataFrame(
            [
                _item("RTD_counting", "r1", video),
                _item("PR_event_reminder", "p1", video, reminder1=2.0, video_duration=30.0),
            ]
        )
    )
    responses = STREAM_RESPONSES.validate(
        pd.DataFrame(_sentences("talker", "PR_event_reminder", "p1", [("Now!", 3, 4)]))
    )
    row = {"judge": "j", "task": "pr", "model": "talker", "modality": "", "split": "PR_event_reminder",
           "item_id": "p1", "kind": "reminder", "index": 0, "n_media": 0, "cached": False,
           "ok": True, "reply": '{"success_score": 1}', "error": ""}  # fmt: skip
    run = LLM_JUDGE_REPLIES.validate(pd.DataFrame([row]))
    tasks = {"j": ["rtd_temporal", "rtd_content", "pr"]}
    rtd, pr = score_judge_runs(responses, items, {"j": run}, models=["mute", "talker"], tasks=tasks)
    pr = pr.set_index("model")
    assert pr.loc["talker", "sample_score"] == 1
    assert pr.loc["mute", "sample_score"] == 0 and pr.loc["mute", "n_no_text"] == 1
    rtd = rtd.set_index("model")
    assert set(rtd.index) == {"mute", "talker"}
    assert rtd.loc["mute", "temporal_score"] == 0 and rtd.loc["mute", "n_sentences"] == 0
    # a judge serving reminders only gives no rtd rows, even for the silent model
    rtd, pr = score_judge_runs(responses, items, {"j": run}, models=["mute"], tasks={"j": ["pr"]})
    assert rtd.empty and set(pr["model"]) == {"mute", "talker"}
    # without the streamed models named, as before: only models with sentences
    _, pr = score_judge_runs(responses, items, {"j": run})
    assert set(pr["model"]) == {"talker"}


def test_run_judge_caches_and_a_dead_judge_fails_fast(tmp_path):
    candidates = _candidates(["Bye then.", "Later!"])
    jobs = how_jobs(candidates, _references(2))
    with FakeChatServer(default=Action.ok("Score: 75")) as server:
        first = run_judge(_entry(server.url), jobs, tmp_path / "judge.jsonl", FailurePolicy())
        again = run_judge(_entry(server.url), jobs, tmp_path / "judge.jsonl", FailurePolicy())
        assert server.requests == 2
    assert first["ok"].all() and (first["reply"] == "Score: 75").all() and again["cached"].all()
    dead = _entry(f"http://127.0.0.1:{_free_port()}/v1", name="dead")
    started = time.monotonic()
    with pytest.raises(InferenceAborted, match="unreachable"):
        run_judge(dead, jobs, tmp_path / "dead.jsonl", FailurePolicy())
    assert time.monotonic() - started < 5

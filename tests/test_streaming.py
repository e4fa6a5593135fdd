"""The streaming driver (issue 18): schedule, step media, parser kinds, cache per step, cost check."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from omnisocial.io import sha256_file
from omnisocial.media.audio import probe
from omnisocial.models.base import Reply
from omnisocial.models.runner import FailurePolicy, InferenceAborted, load_results
from omnisocial.streaming import (
    FAILED,
    SILENCE,
    UNPARSED,
    UTTERANCE,
    CallBudgetExceeded,
    Parsed,
    Schedule,
    StreamItem,
    StreamProtocol,
    assemble,
    cut_segments,
    first_utterances,
    plan_calls,
    segment_bounds,
    stream,
)
from omnisocial.streaming.media import cut_prefix

# --- schedule ---------------------------------------------------------------------------


def test_schedule_times_include_the_end_on_the_grid_and_never_pass_it():
    assert Schedule(2, 5).times() == [2.0, 3.0, 4.0, 5.0]
    assert Schedule(2, 5.9).times() == [2.0, 3.0, 4.0, 5.0]
    assert Schedule(1, 3, 0.5).times() == [1.0, 1.5, 2.0, 2.5, 3.0]
    assert len(Schedule(1, 3, 0.5)) == 5
    # float noise: 0.1 + 0.2 != 0.3 in binary, the end still counts and times are clean
    assert Schedule(0.1, 0.3, 0.1).times() == [0.1, 0.2, 0.3]
    assert Schedule(0.0, 6.0, 0.1).times()[-1] == 6.0 and len(Schedule(0.0, 6.0, 0.1)) == 61
    assert Schedule(4, 4).times() == [4.0]


@pytest.mark.parametrize(
    "args,message",
    [((0, 5, 0), "step_s must be > 0"), ((5, 4), "before its start"), ((0, float("nan")), "finite")],
)
def test_schedule_rejects_bad_arguments(args, message):
    with pytest.raises(ValueError, match=message):
        Schedule(*args)


def test_an_item_needs_media_before_its_first_query(tmp_path):
    with pytest.raises(ValueError, match="not after the media start"):
        StreamItem("a", tmp_path / "a.mp4", Schedule(0, 3))


def test_segment_bounds_prefix_and_window(tmp_path):
    item = StreamItem("a", tmp_path / "a.mp4", Schedule(2, 4))
    assert segment_bounds(item, None) == [0.0, 2.0, 3.0, 4.0]
    assert segment_bounds(item, 1.5) == [0.0, 0.5, 1.5, 2.0, 2.5, 3.0, 4.0]


# --- step media -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> Path:
    """6 s of testsrc (64x48, 10 fps) with a 440 Hz sine, H.264 + AAC."""
    path = tmp_path_factory.mktemp("clip") / "clip.mp4"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10",
         "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000", "-t", "6",
         "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", str(path)],
        check=True, capture_output=True,
    )  # fmt: skip
    return path


@pytest.mark.parametrize("modality", ["audio_video", "audio"])
def test_assembled_steps_are_deterministic_and_as_long_as_the_prefix(clip, tmp_path, modality):
    item = StreamItem("c1", clip, Schedule(2, 5))
    segments = cut_segments(item, None, tmp_path / "seg", modality)
    assert [p.name for p in segments] == [
        f"00000_0.000_2.000{segments[0].suffix}",
        f"00001_2.000_3.000{segments[0].suffix}",
        f"00002_3.000_4.000{segments[0].suffix}",
        f"00003_4.000_5.000{segments[0].suffix}",
    ]
    first = assemble(segments[:3], tmp_path / "a" / f"step{segments[0].suffix}")
    again = assemble(segments[:3], tmp_path / "b" / f"step{segments[0].suffix}")
    assert sha256_file(first) == sha256_file(again)
    # cut again from the source (a fresh folder): the same bytes, so cache keys survive a re-cut
    recut = cut_segments(item, None, tmp_path / "seg2", modality)
    third = assemble(recut[:3], tmp_path / "c" / f"step{segments[0].suffix}")
    assert sha256_file(third) == sha256_file(first)
    info = probe(first)
    key = "audio_duration"
    assert info[key] == pytest.approx(4.0, abs=0.08)  # [0, 4]: segments 0-2
    if modality == "audio_video":
        assert info["video_duration"] == pytest.approx(4.0, abs=0.11)
        reference = probe(cut_prefix(item, 0.0, 4.0, tmp_path / "ref.mp4", modality))
        assert info["video_duration"] == pytest.approx(reference["video_duration"], abs=0.11)
    else:
        assert info["sample_rate"] == 16000 and info["channels"] == 1
        assert info["audio_duration"] == pytest.approx(4.0, abs=1 / 16000)  # split at exact samples
    assert not list((tmp_path / "a").glob("*.txt"))  # the concat list is cleaned up


def test_assemble_names_a_missing_segment(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing segment"):
        assemble([tmp_path / "nope.mp4"], tmp_path / "out.mp4")


# --- the driver -------------------------------------------------------------------------

T_IN_PROMPT = re.compile(r"t = ([0-9.]+) s")


class Scripted:
    """A backend whose reply depends on t (read from the prompt) and that checks each step's media."""

    modalities = ("text", "audio", "video")
    concurrency = 2

    def __init__(self, policy, name="scripted"):
        self.name = name
        self.policy = policy
        self.calls: list[tuple[str, float]] = []
        self.durations: list[float] = []
        self.prompts: list[str] = []

    def fingerprint(self) -> str:
        return f"{self.name}:v1"

    def generate(self, requests):
        replies = []
        for request in requests:
            t = float(T_IN_PROMPT.search(request.prompt).group(1))
            item = request.item_id.split("@")[0]
            self.calls.append((item, t))
            self.prompts.append(request.prompt)
            self.durations.append(probe(request.media["video"])["video_duration"])
            replies.append(self.policy(item, t))
        return replies


def parse_yes_no(text: str) -> Parsed:
    word = text.strip().upper()
    if word == "YES":
        return Parsed(UTTERANCE, "YES")
    if word == "NO":
        return Parsed(SILENCE)
    return Parsed(UNPARSED)


def prompt(item, t, history):
    said = "; ".join(f"{s.t:g}: {s.text}" for s in history)
    return "be brief", f"The clip runs up to t = {t:.3f} s. Said so far: {said or 'nothing'}. Speak now?"


WHEN = StreamProtocol("when", prompt, parse_yes_no, stop_at_first=True)


@pytest.fixture(scope="module")
def segments(clip, tmp_path_factory):
    root = tmp_path_factory.mktemp("segments")
    items = [StreamItem("a", clip, Schedule(1, 5)), StreamItem("b", clip, Schedule(2, 4))]
    for item in items:
        cut_segments(item, None, root, "audio_video")
        cut_segments(item, 2.0, root, "audio_video")
    return root, items


def policy_yes_from(turn_end):
    """YES once t >= turn_end + 1.5 s; item b first answers gibberish once (unparsed)."""

    def reply(item, t):
        if item == "b" and t == 2.0:
            return Reply("I am not sure what you mean")
        return Reply("YES" if t >= turn_end[item] + 1.5 - 1e-9 else "NO")

    return reply


def test_stop_at_first_utterance_unparsed_counted_and_the_cache_per_step(segments, tmp_path):
    root, items = segments
    backend = Scripted(policy_yes_from({"a": 1.2, "b": 1.0}))
    run = stream(backend, items, WHEN, modality="audio_video", segments_root=root,
                 cache_path=tmp_path / "c.jsonl", model="m", progress=False)  # fmt: skip
    steps = run.steps
    # a: YES from 2.7 -> first at t = 3 (steps 1, 2, 3); b: unparsed at 2, NO never, YES from 2.5 -> t = 3
    assert first_utterances(steps) == {"a": 3.0, "b": 3.0}
    kinds = steps.set_index(["item_id", "step"])["kind"].to_dict()
    assert kinds == {("a", 0): SILENCE, ("a", 1): SILENCE, ("a", 2): UTTERANCE,
                     ("b", 0): UNPARSED, ("b", 1): UTTERANCE}  # fmt: skip
    assert run.summary["n_unparsed"] == 1 and run.summary["n_calls"] == 5 and run.summary["n_cached"] == 0
    assert run.plan.calls == 5 + 3 and run.plan.upper_bound  # 5 + 3 query times planned
    # the whole prefix [0, t]: the media grow with t
    assert sorted(backend.durations) == pytest.approx([1.0, 2.0, 2.0, 3.0, 3.0], abs=0.11)
    # steps of an item in order
    assert [t for i, t in backend.calls if i == "a"] == [1.0, 2.0, 3.0]
    # rerun: every step from the cache, no call, the same rows
    again = Scripted(policy_yes_from({"a": 1.2, "b": 1.0}))
    rerun = stream(again, items, WHEN, modality="audio_video", segments_root=root,
                   cache_path=tmp_path / "c.jsonl", model="m", progress=False)  # fmt: skip
    assert again.calls == [] and rerun.steps["cached"].all()
    assert rerun.steps.drop(columns=["cached", "latency_s"]).equals(
        steps.drop(columns=["cached", "latency_s"])
    )


def test_a_failed_step_fails_the_items_stream_and_a_rerun_resumes_there(segments, tmp_path):
    root, items = segments

    def flaky(item, t):
        if item == "a" and t == 2.0:
            return Reply(None, error="HTTP 503: overloaded")
        return Reply("NO")

    cache = tmp_path / "c.jsonl"
    first = stream(Scripted(flaky), items, WHEN, modality="audio_video", segments_root=root,
                   cache_path=cache, model="m", progress=False)  # fmt: skip
    failed = first.steps[first.steps["kind"] == FAILED]
    assert failed[["item_id", "t", "error"]].values.tolist() == [["a", 2.0, "HTTP 503: overloaded"]]
    assert "a" not in first_utterances(first.steps)  # a failed stream has no response time
    assert first.summary["n_failed_items"] == 1
    healed = Scripted(lambda item, t: Reply("NO"))
    second = stream(healed, items, WHEN, modality="audio_video", segments_root=root,
                    cache_path=cache, model="m", progress=False)  # fmt: skip
    assert healed.calls == [("a", 2.0), ("a", 3.0), ("a", 4.0), ("a", 5.0)]  # from the failed step on
    assert first_utterances(second.steps) == {"a": None, "b": None}
    assert len(load_results(cache)) == 5 + 3  # one record per step key (the failure superseded)
    # under a failure policy half the item streams failing fails the job, after every call is stored
    with pytest.raises(InferenceAborted, match="1 of 2 item streams failed"):
        stream(Scripted(flaky), items, WHEN, modality="audio_video", segments_root=root,
               cache_path=tmp_path / "p.jsonl", model="m", progress=False,
               policy=FailurePolicy(max_failed_share=0.2, probe=False))  # fmt: skip


def test_max_calls_below_the_plan_stops_before_any_call(segments, tmp_path):
    root, items = segments
    backend = Scripted(lambda item, t: Reply("NO"))
    with pytest.raises(CallBudgetExceeded) as error:
        stream(backend, items, WHEN, modality="audio_video", segments_root=root,
               cache_path=tmp_path / "c.jsonl", entry={"name": "m", "max_calls": 7},
               progress=False)  # fmt: skip
    message = str(error.value)
    assert "m: planned 8 calls" in message and "2 items x up to 5 steps" in message
    assert "max_calls 7" in message and "no call was made" in message
    assert backend.calls == [] and not (tmp_path / "c.jsonl").exists()
    assert (
        plan_calls("m", items, stop_at_first=False).describe()
        == "m: 8 planned calls (2 items x up to 5 steps)"
    )


def test_run_to_the_end_with_history_and_a_sliding_window(segments, tmp_path):
    root, items = segments
    protocol = StreamProtocol(
        "rtd", prompt, parse_yes_no, stop_at_first=False, window_s=2.0, carries_history=True
    )
    backend = Scripted(lambda item, t: Reply("YES" if t in (2.0, 4.0) else "NO"))
    run = stream(backend, items[:1], protocol, modality="audio_video", segments_root=root,
                 cache_path=tmp_path / "c.jsonl", model="m", progress=False)  # fmt: skip
    assert run.steps["t"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]  # ran to the end, utterances and all
    assert run.steps["window_start"].tolist() == [0.0, 0.0, 1.0, 2.0, 3.0]
    assert backend.durations == pytest.approx([1.0, 2.0, 2.0, 2.0, 2.0], abs=0.11)
    assert "Said so far: nothing" in backend.prompts[1] and "Said so far: 2: YES" in backend.prompts[2]
    assert "Said so far: 2: YES; 4: YES" in backend.prompts[4]


# --- no rounds: slots kept full, items independent (issue 38) --------------------------------

ITEM_T = re.compile(r"item (\w+), t = ([0-9.]+) s")


def item_prompt(item, t, history):
    return "", f"item {item.item_id}, t = {t:g} s. Speak now? YES or NO."


RUN_ON = StreamProtocol("run_on", item_prompt, parse_yes_no, stop_at_first=False)


def _audio_items(clip, root, names, end=5):
    items = [StreamItem(name, clip, Schedule(1, end)) for name in names]
    for item in items:
        cut_segments(item, None, root, "audio")
    return items


def _entry(url, concurrency):
    return {"name": "streamer", "backend": "openai", "model": "m", "base_url": url, "max_retries": 0,
            "modalities": ["text", "audio"], "concurrency": concurrency}  # fmt: skip


def test_a_slow_item_holds_back_no_other_and_every_slot_stays_busy(clip, tmp_path):
    """Item a's replies take 0.6 s, the others' 0.05 s, at concurrency 3: in rounds every
    step would wait for a's; here b..e stream on (each in order) while a is asked, three calls
    in flight, and the rows come out sorted by item and step whatever order they came in."""
    from http_server import Action, FakeChatServer

    from omnisocial.models.registry import build_backend

    items = _audio_items(clip, tmp_path / "seg", ["a", "b", "c", "d", "e"])
    seen: list[tuple[str, float]] = []

    def responder(body, number):
        item, t = ITEM_T.search(json.dumps(body)).groups()
        seen.append((item, float(t)))
        return Action.ok("NO", delay_s=0.6 if item == "a" else 0.05)

    with FakeChatServer(responder=responder) as server:
        backend = build_backend(_entry(server.url, 3))
        run = stream(backend, items, RUN_ON, modality="audio", segments_root=tmp_path / "seg",
                     cache_path=tmp_path / "c.jsonl", progress=False)  # fmt: skip
        backend.close()
    assert server.peak == 3 and run.summary["n_calls"] == 25
    for name in "abcde":  # each item's steps in order
        assert [t for i, t in seen if i == name] == [1.0, 2.0, 3.0, 4.0, 5.0]
    # while a's 5 slow steps ran (3 s), the other 20 steps went through the two other slots
    # (in rounds a's second step would come 6th: after round 0's five steps)
    assert seen.index(("a", 2.0)) >= 9 and seen[-1][0] == "a"
    assert run.steps[["item_id", "step"]].values.tolist() == [[i, k] for i in "abcde" for k in range(5)]


class Recorder:
    """A backend at concurrency `concurrency` that answers NO after 0.2 s and records the steps asked."""

    modalities = ("text", "audio")
    name = "recorder"

    def __init__(self, concurrency):
        self.concurrency = concurrency
        self.asked: list[tuple[str, float]] = []

    def fingerprint(self) -> str:
        return "recorder:v1"

    def generate(self, requests):
        for request in requests:
            item, t = ITEM_T.search(request.prompt).groups()
            self.asked.append((item, float(t)))
        time.sleep(0.2)  # a model's latency: the next step's media are prepared meanwhile
        return [Reply("NO") for _ in requests]


def test_the_item_with_the_most_steps_left_goes_first(clip, tmp_path, monkeypatch):
    """The longest item bounds the job (its steps go one after another), so items open longest
    plan first and a freed slot goes to the ready item with the most planned steps left; the
    rows still come out in the items' order."""
    from omnisocial.streaming import driver

    root = tmp_path / "seg"
    items = [*_audio_items(clip, root, ["a"], end=2), *_audio_items(clip, root, ["b"], end=3),
             *_audio_items(clip, root, ["c"], end=5)]  # fmt: skip
    # The order asked is the order of priority only where every ready item's media are prepared
    # when a slot frees (a slot never idles for the first item's media: another ready item goes);
    # so each step's media are its first segment, prepared at once, one after another in the
    # order they were asked for (c's first step before b's): no ffmpeg timing enters the order.
    monkeypatch.setattr(driver, "_step_media", lambda item, protocol, root, modality, t, folder: (
        driver.segment_paths(root, modality, item, protocol.window_s)[0], None))  # fmt: skip
    backend = Recorder(concurrency=1)
    run = stream(backend, items, RUN_ON, modality="audio", segments_root=root,
                 cache_path=tmp_path / "c.jsonl", progress=False, prepare_threads=1)  # fmt: skip
    # c opens first (5 steps), with b (3; two items open at concurrency 1); each call goes to the
    # open item with the most steps left, the earlier opened among equals; a opens when c ends
    assert "".join(item for item, _ in backend.asked) == "cccbcbcaba"
    assert run.steps["item_id"].tolist() == list("aabbbccccc")


CHILD = """
import sys
sys.path.insert(0, {src!r})
from omnisocial.models.registry import build_backend
from omnisocial.streaming import Schedule, StreamItem, StreamProtocol, Parsed, stream
items = [StreamItem(name, {clip!r}, Schedule(1, 5)) for name in "abcd"]
def prompt(item, t, history):  # as item_prompt: the same prompts, so the same cache keys
    return "", f"item {{item.item_id}}, t = {{t:g}} s. Speak now? YES or NO."
protocol = StreamProtocol("run_on", prompt, lambda text: Parsed("silence"), stop_at_first=False)
entry = {entry!r}
stream(build_backend(entry), items, protocol, modality="audio", segments_root={root!r},
       cache_path={cache!r}, progress=False)
"""


def test_after_kill_9_and_a_rerun_calls_made_and_cached_add_up_to_an_uninterrupted_run(clip, tmp_path):
    """A job killed with SIGKILL mid-stream (two calls in flight, one held) and rerun asks no
    answered step again; its summary counts the calls it made and the steps the cache answered
    apart, and they add up to an uninterrupted run's calls (20 = 4 items x 5 steps)."""
    import os
    import signal
    import sys
    import threading

    from http_server import Action, FakeChatServer

    from omnisocial.models.registry import build_backend

    root = tmp_path / "seg"
    items = _audio_items(clip, root, ["a", "b", "c", "d"])
    answered: list[tuple[str, float]] = []
    held, release = threading.Event(), threading.Event()
    gate = {"after": 7}

    def responder(body, number):
        step = tuple(ITEM_T.search(json.dumps(body)).groups())
        if gate["after"] is not None and len(answered) >= gate["after"]:
            held.set()
            release.wait(60)
            return Action.error(500, "held (its client was killed)")
        answered.append((step[0], float(step[1])))
        return Action.ok("NO")

    with FakeChatServer(responder=responder) as server:
        entry = _entry(server.url, 2)
        script = CHILD.format(src=str(Path(__file__).resolve().parents[1] / "src"), clip=str(clip),
                              entry=entry, root=str(root), cache=str(tmp_path / "c.jsonl"))  # fmt: skip
        child = subprocess.Popen([sys.executable, "-c", script])
        assert held.wait(120)
        time.sleep(0.3)  # the 7th reply is in the store
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
        gate["after"] = None
        release.set()
        before = list(answered)
        assert len(before) == 7
        backend = build_backend(entry)
        rerun = stream(backend, items, RUN_ON, modality="audio", segments_root=root,
                       cache_path=tmp_path / "c.jsonl", progress=False)  # fmt: skip
        fresh = stream(backend, items, RUN_ON, modality="audio", segments_root=root,
                       cache_path=tmp_path / "fresh.jsonl", progress=False)  # fmt: skip
        backend.close()
    after = answered[len(before) : len(before) + 13]
    assert not set(before) & set(after) and len(set(before) | set(after)) == 20  # none asked again
    summary, clean = rerun.summary, fresh.summary
    assert (summary["n_calls"], summary["n_cached"]) == (13, 7)
    assert (clean["n_calls"], clean["n_cached"]) == (20, 0)
    assert summary["n_calls"] + summary["n_cached"] == clean["n_calls"] == summary["n_steps"] == 20
    keep = ["item_id", "step", "t", "kind", "reply"]
    assert rerun.steps[keep].equals(fresh.steps[keep])


# --- an OpenAI-compatible model's step media, prepared from the segments (issue 38 item 5) ----


@pytest.mark.parametrize("mode", ["frames", "in_video"])
def test_an_openai_models_steps_need_no_probe_and_frames_come_from_the_item(
    segments, tmp_path, mode, monkeypatch
):
    """The driver tells the backend what each step's segments hold (`StepMedia`): no step probes
    its media (media_io.probe fails here: a step that probed would fail), and in frames mode
    each step sends the frames sampling its own media gives, taken from the item's frames
    sampled once."""
    import base64

    import httpx

    from omnisocial.models import media_io
    from omnisocial.models.openai_compat import OpenAICompatBackend
    from omnisocial.streaming.media import FRAME_CACHE, segment_paths

    root, items = segments
    item = items[0]
    bodies: dict[float, dict] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        text = next(part["text"] for part in body["messages"][-1]["content"] if part["type"] == "text")
        bodies[float(T_IN_PROMPT.search(text).group(1))] = body
        message = {"role": "assistant", "content": "NO"}
        return httpx.Response(
            200, json={"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
        )

    media = {"video_mode": "frames", "video_audio": "none", "fps": 1.0, "frame_width": 32}
    if mode == "in_video":
        media = {"video_mode": "video_url", "video_audio": "in_video"}
    entry = {"name": f"loopback-{mode}", "backend": "openai", "model": "loopback", "base_url": "http://loopback/v1",
             "modalities": ["text", "video"], "max_retries": 0, "concurrency": 2, "media": media}  # fmt: skip

    def no_probe(path):
        raise media_io.MediaError(f"{path}: probed")

    monkeypatch.setattr(media_io, "probe", no_probe)
    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        backend = OpenAICompatBackend(entry, client=client)
        run = stream(backend, [item], WHEN, modality="audio_video", segments_root=root,
                     cache_path=tmp_path / "cache.jsonl", progress=False)  # fmt: skip
    monkeypatch.undo()
    assert run.summary["n_failed_items"] == 0 and sorted(bodies) == item.schedule.times()
    if mode == "in_video":
        assert all(body["mm_processor_kwargs"] == {"use_audio_in_video": True} for body in bodies.values())
        return
    paths = segment_paths(root, "audio_video", item, None)
    for index, t in enumerate(item.schedule.times()):
        step = assemble(paths[: index + 1], tmp_path / "step.mp4")
        parts = bodies[t]["messages"][-1]["content"]
        sent = [
            base64.b64decode(p["image_url"]["url"].split(",", 1)[1])
            for p in parts
            if p["type"] == "image_url"
        ]
        assert sent == media_io.sample_frames(step, 1.0, 32, 32, 4), t
    assert list((paths[0].parent / FRAME_CACHE).iterdir())

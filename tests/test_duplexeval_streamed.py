"""Omni-DuplexEval streaming of a registry model (issue 18): protocol, parser, released response files.

A loopback OpenAI-compatible model with a scripted policy (sentences at known step times) is
streamed through the real driver; the written `{split}/{id}.json` files are read back by the
released reader and `omnisocial duplexeval rtd|pr`, and the scores equal the hand-computed ones.
"""

from __future__ import annotations

import json
import re
import subprocess

import pandas as pd
import pytest
from http_server import Action, FakeChatServer

from omnisocial import cli
from omnisocial.duplexeval.contracts import STREAM_ITEMS
from omnisocial.duplexeval.importers import load_stream_items, load_stream_responses, read_stream_response
from omnisocial.duplexeval.reminders import reminder_judge, score_pr
from omnisocial.duplexeval.streamed import (
    cut_stream_segments,
    parse_stream_reply,
    protocol,
    response_entries,
    stream_items,
    stream_model,
    stream_prompt,
)
from omnisocial.judges.lexical import keyword_match
from omnisocial.models.registry import build_backend
from omnisocial.streaming import SILENCE, UNPARSED, UTTERANCE, Said


@pytest.mark.parametrize(
    "reply,kind,text",
    [
        ("SILENT", SILENCE, ""),
        ("  silence. ", SILENCE, ""),
        ("SAY: There are  two stars.", UTTERANCE, "There are two stars."),
        ('say:"The square is back."', UTTERANCE, "The square is back."),
        ("Two stars now.\nSAY: Two stars.", UTTERANCE, "Two stars."),  # reasons first, then answers
        ("SAY:", UNPARSED, ""),
        ("", UNPARSED, ""),  # an empty reply is not silence
        ("Nothing new, I stay silent.", UNPARSED, ""),
        ("SILENT\nor maybe not", UNPARSED, ""),
    ],
)
def test_parse_stream_reply(reply, kind, text):
    parsed = parse_stream_reply(reply)
    assert (parsed.kind, parsed.text) == (kind, text)


def _item(split, item_id, **extra):
    row = {"split": split, "item_id": item_id, "task": "RTD" if split.startswith("RTD") else "PR",
           "question_text": "Count the stars.", "answer1": "", "answer2": "", "reminder1": None,
           "reminder2": None, "video_type": "", "video_duration": 10.0, "video": "clip.mp4",
           "question_audio": ""}  # fmt: skip
    return row | extra


def test_prompt_carries_instruction_span_and_history():
    item = _item("RTD_counting", "r1")
    prompt, digest = stream_prompt(item, 7.0, 3.0, [Said(3.0, "One star.")])
    assert '"Count the stars."' in prompt and "from 3 s to 7 s (now)" in prompt
    assert "3 s: One star." in prompt and "SAY:" in prompt and "SILENT" in prompt and len(digest) == 64
    pr, _ = stream_prompt(_item("PR_event_reminder", "p1"), 2.0, 0.0, [])
    assert "(nothing yet)" in pr and "reminded" in pr
    half, _ = stream_prompt(item, 2.5, 0.0, [Said(1.5, "One star.")])  # 0.5 s steps
    assert "from 0 s to 2.5 s (now)" in half and "1.5 s: One star." in half
    # a sliding window: the prompt names the window's start
    rtd = protocol("rtd", window_s=4.0)
    assert not rtd.stop_at_first and rtd.carries_history and rtd.window_s == 4.0
    with pytest.raises(ValueError, match="unknown Omni-DuplexEval protocol"):
        protocol("when")


def test_items_without_video_or_shorter_than_a_step_are_named(tmp_path):
    items = STREAM_ITEMS.validate(
        pd.DataFrame([_item("RTD_OCR", "a", video=""), _item("RTD_OCR", "b", video_duration=0.5)])
    )
    with pytest.raises(ValueError, match=r"RTD_OCR/a: no video; RTD_OCR/b: duration 0.5 s is shorter"):
        stream_items(items, tmp_path, 1.0)


def test_response_entries_keep_sentences_only_at_their_step_time():
    steps = [
        {"step": 2, "t": 3.0, "kind": UTTERANCE, "text": "Two."},
        {"step": 0, "t": 1.0, "kind": UTTERANCE, "text": "One."},
        {"step": 1, "t": 2.0, "kind": UNPARSED, "text": ""},
        {"step": 3, "t": 4.0, "kind": SILENCE, "text": ""},
    ]
    assert response_entries(steps) == [
        {"text": "One.", "start": 1.0, "end": 1.0},
        {"text": "Two.", "start": 3.0, "end": 3.0},
    ]


# --- a scripted loopback model through the driver -------------------------------------------

NOW = re.compile(r"from ([0-9.]+) s to ([0-9.]+) s \(now\)")
RTD_SAYS = {3.0: "SAY: There is one star.", 5.0: "Let me think about it.", 7.0: "SAY: There are two stars."}
TEMPORAL = '{{"temporal_score": {}, "is_relevant": 1}}'
PR_SAYS = {5.0: "SAY: The green square appeared."}


def policy(body: dict, number: int) -> Action:
    """Sentences at known step times, silence otherwise; one unparseable reply (RTD, t = 5)."""
    content = body["messages"][-1]["content"]
    text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
    t = float(NOW.search(text).group(2))
    says = RTD_SAYS if "Count the stars." in text else PR_SAYS
    return Action.ok(says.get(t, "SILENT"))


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """A 10 s clip and two released items (RTD_counting r1, PR_event_reminder p1)."""
    root = tmp_path_factory.mktemp("duplexeval")
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10:duration=10",
         "-pix_fmt", "yuv420p", str(root / "clip.mp4")],
        check=True,
    )  # fmt: skip
    items = {
        "RTD_counting": [
            {"id": "r1", "question_text": "Count the stars.", "video": "clip.mp4", "video_duration": 10}
        ],
        "PR_event_reminder": [
            {"id": "p1", "question_text": "Remind me when the green square appears.",
             "answer1": "The green square appeared.", "reminder1": 4.0, "reminder2": 8.5,
             "video": "clip.mp4", "video_duration": 10}
        ],
    }  # fmt: skip
    (root / "items.json").write_text(json.dumps(items))
    return root


def _entry(url):
    return {"name": "streamer", "backend": "openai", "model": "m", "base_url": url, "max_retries": 0,
            "modalities": ["text", "video"], "media": {"video_audio": "none", "max_frames": 2}}  # fmt: skip


@pytest.mark.heavy  # 7 CPU-s
def test_a_scripted_model_streams_into_released_files_scored_as_by_hand(released, tmp_path, capsys):
    items = load_stream_items(released / "items.json", media_dir=tmp_path / "media")
    folder = tmp_path / "streamer"
    with FakeChatServer(responder=policy) as server:
        entry = _entry(server.url)
        segments = tmp_path / "segments"
        assert cut_stream_segments(items, released, 1.0, None, segments) == 20  # [0, 1), ..., [9, 10)
        kwargs = dict(step_s=1.0, segments_root=segments, cache_path=tmp_path / "c.jsonl")
        backend = build_backend(entry)
        steps, summaries, failed = stream_model(backend, entry, items, released, folder, **kwargs)
        calls = server.requests
        assert calls == 20 and failed == []  # 2 items x t = 1..10, every step answered
        prompts = [body["messages"][-1]["content"] for body in server.bodies]
        said = [p for p in map(str, prompts) if "from 0 s to 8 s" in p and "Count the stars." in p]
        assert "3 s: There is one star." in said[0] and "7 s: There are two stars." in said[0]
        # a rerun answers every step from the cache: no request, the same files
        before = {p: p.read_bytes() for p in sorted(folder.rglob("*.json"))}
        again, _, _ = stream_model(build_backend(entry), entry, items, released, folder, **kwargs)
        assert server.requests == calls and again["cached"].all()
        assert {p: p.read_bytes() for p in sorted(folder.rglob("*.json"))} == before
    by_protocol = summaries.set_index("protocol")
    assert by_protocol.loc["rtd", "n_utterance"] == 2 and by_protocol.loc["rtd", "n_unparsed"] == 1
    assert by_protocol.loc["pr", "n_utterance"] == 1 and by_protocol["n_calls"].sum() == 20
    rtd_steps = steps[steps["split"] == "RTD_counting"].set_index("t")
    assert rtd_steps.loc[5.0, "kind"] == UNPARSED and rtd_steps.loc[6.0, "kind"] == SILENCE
    assert set(steps["source_item_id"]) == {"r1", "p1"}

    # the released files, read back by the released reader
    data = json.loads((folder / "RTD_counting" / "r1.json").read_text())
    assert data["sentences"] == [
        {"text": "There is one star.", "start": 3.0, "end": 3.0},
        {"text": "There are two stars.", "start": 7.0, "end": 7.0},
    ]
    assert data["n_unparsed"] == 1 and data["n_steps"] == 10 and data["step_s"] == 1.0
    pr = read_stream_response(folder / "PR_event_reminder" / "p1.json", "PR_event_reminder", "p1")
    assert pr[["text", "start"]].values.tolist() == [["The green square appeared.", 5.0]]
    responses = load_stream_responses(folder, items, model="streamer")
    assert len(responses) == 3

    # reminders by hand: event 1 at 4 s has the sentence at 5 s in [4, 14] (the answer's words:
    # passes); event 2 at 8.5 s has no text in [8.5, 18.5] (0, no judge) -> the sample fails
    judge = reminder_judge(None, "keyword", 0.5, keyword_match)
    events, samples = score_pr(responses, items, judge)
    assert events[["time", "text", "judged", "score"]].values.tolist() == [
        [4.0, "The green square appeared.", True, 1],
        [8.5, "", False, 0],
    ]
    assert samples[["n_events", "n_passed", "sample_score"]].values.tolist() == [[2, 1, 0]]

    # `omnisocial duplexeval rtd` on the folder: the point sentences at 3 s and 7 s have judge
    # windows [1, 1.5] and [5, 5.5] (inside the 10 s clip); judged 3 and 1, both relevant
    judged = tmp_path / "judged.csv"
    pd.DataFrame(
        [
            {
                "item_id": "r1",
                "kind": "temporal",
                "index": 0,
                "reply": '{"temporal_score": 3, "is_relevant": 1}',
            },
            {
                "item_id": "r1",
                "kind": "temporal",
                "index": 1,
                "reply": '{"temporal_score": 1, "is_relevant": 1}',
            },
            {"item_id": "r1", "kind": "content", "index": None, "reply": '{"content_score": 2}'},
        ]
    ).to_csv(judged, index=False)
    out = tmp_path / "rtd.csv"
    argv = ["duplexeval", "rtd", str(released / "items.json"), str(folder), "--judge-replies", str(judged)]
    assert cli.main(argv + ["-o", str(out), "--per-item", str(tmp_path / "per_item.csv")]) == 0
    r1 = pd.read_csv(tmp_path / "per_item.csv").set_index("item_id").loc["r1"]
    assert r1["n_judged"] == 2 and r1["temporal_score"] == 2.0 and r1["first_relevant_time"] == 3.0
    assert r1["irrelevant_duration_ratio"] == 0 and r1["content_score"] == 2
    # `omnisocial duplexeval pr`: event 1 judged 1, event 2 has no text (0 without a reply)
    replies = tmp_path / "pr_judged.csv"
    pd.DataFrame([{"item_id": "p1", "index": 0, "reply": '{"success_score": 1}'}]).to_csv(
        replies, index=False
    )
    argv = ["duplexeval", "pr", str(released / "items.json"), str(folder), "--judge-replies", str(replies)]
    assert cli.main(argv + ["-o", str(tmp_path / "pr.csv")]) == 0
    metrics = pd.read_csv(tmp_path / "pr.csv").set_index("split")
    assert metrics.loc["all", "success_fraction"] == 0 and metrics.loc["all", "event_success_fraction"] == 0.5
    capsys.readouterr()


@pytest.mark.heavy  # 7 CPU-s
def test_a_failed_step_leaves_no_file_and_a_rerun_resumes_there(released, tmp_path):
    """A call that fails (HTTP 500, no retries) ends that item's stream: it gets no response file
    (a partial response would read as silence); the rerun asks only the steps not answered."""
    items = load_stream_items(released / "items.json", media_dir=tmp_path / "media")
    segments = tmp_path / "segments"
    cut_stream_segments(items, released, 1.0, None, segments)
    kwargs = dict(step_s=1.0, segments_root=segments, cache_path=tmp_path / "c.jsonl")

    def flaky(body, number):
        text = str(body["messages"][-1]["content"])
        if "Count the stars." in text and "to 6 s (now)" in text:
            return Action.error(500)
        return policy(body, number)

    folder = tmp_path / "streamer"
    with FakeChatServer(responder=flaky) as server:
        entry = _entry(server.url)
        steps, _, failed = stream_model(build_backend(entry), entry, items, released, folder, **kwargs)
        assert failed == ["RTD_counting__r1"] and server.requests == 6 + 10  # r1 stopped at t = 6
        assert steps[steps["kind"] == "failed"][["split", "source_item_id", "t"]].values.tolist() == [
            ["RTD_counting", "r1", 6.0]
        ]
        assert not (folder / "RTD_counting" / "r1.json").exists()
        assert (folder / "PR_event_reminder" / "p1.json").is_file()
    with FakeChatServer(responder=policy) as healed:
        entry = _entry(healed.url)
        steps, _, failed = stream_model(build_backend(entry), entry, items, released, folder, **kwargs)
        assert failed == [] and healed.requests == 5  # t = 6 .. 10 of r1 only
    data = json.loads((folder / "RTD_counting" / "r1.json").read_text())
    assert [s["start"] for s in data["sentences"]] == [3.0, 7.0] and data["n_unparsed"] == 1


@pytest.mark.heavy  # 6 CPU-s
def test_max_calls_one_below_the_jobs_plan_makes_no_call(released, tmp_path):
    """The budget is the whole job's (RTD 10 + PR 10 = 20), checked before the first call and
    naming both parts: max_calls 19 makes no call at all (each part alone would fit)."""
    from omnisocial.streaming.cost import CallBudgetExceeded

    items = load_stream_items(released / "items.json", media_dir=tmp_path / "media")
    segments = tmp_path / "segments"
    cut_stream_segments(items, released, 1.0, None, segments)
    kwargs = dict(step_s=1.0, segments_root=segments, cache_path=tmp_path / "c.jsonl")
    with FakeChatServer(responder=policy) as server:
        entry = {**_entry(server.url), "max_calls": 19}
        with pytest.raises(CallBudgetExceeded, match=r"planned 20 calls .*rtd 10, pr 10.* max_calls 19"):
            stream_model(build_backend(entry), entry, items, released, tmp_path / "out", **kwargs)
        assert server.requests == 0
        entry["max_calls"] = 20
        _, summaries, _ = stream_model(
            build_backend(entry), entry, items, released, tmp_path / "out", **kwargs
        )
        assert server.requests == 20 and summaries["n_planned"].sum() == 20


@pytest.mark.parametrize("reply,kind", [("SILENT", SILENCE), ("I see a clip.", UNPARSED)])
@pytest.mark.heavy  # 7 CPU-s
def test_a_model_that_never_says_a_sentence_has_its_rows(released, tmp_path, reply, kind):
    """A streamed model whose every reply is silent (or unparsed) writes no sentence, yet gets
    its rtd_scores, pr_scores and streaming_metrics rows: scored as an empty response (as the
    released scorers score one: temporal 0, content 0, every reminder 0) with its silent and
    unparsed steps counted beside the scores, and the baselines' rows untouched."""
    from omnisocial.duplexeval.description import score_rtd
    from omnisocial.duplexeval.metrics import stream_step_counts, streaming_metrics
    from omnisocial.judges.lexical import LexicalJudge

    items = load_stream_items(released / "items.json", media_dir=tmp_path / "media")
    segments = tmp_path / "segments"
    cut_stream_segments(items, released, 1.0, None, segments)
    kwargs = dict(step_s=1.0, segments_root=segments, cache_path=tmp_path / "c.jsonl")
    with FakeChatServer(responder=lambda body, number: Action.ok(reply)) as server:
        entry = _entry(server.url)
        steps, _, failed = stream_model(
            build_backend(entry), entry, items, released, tmp_path / "m", **kwargs
        )
    assert failed == [] and (steps["kind"] == kind).all() and len(steps) == 20
    responses = load_stream_responses(tmp_path / "m", items, model="streamer")
    assert responses.empty  # no sentence row: the model is known from its steps only
    other = pd.DataFrame(
        [{"model": "baseline_caption", "split": "RTD_counting", "item_id": "r1", "sentence_index": 0,
          "text": "There is one star.", "start": 3.0, "end": 3.0, "is_point": True}]
    )  # fmt: skip
    models = sorted(steps["model"].unique())
    events = pd.DataFrame(columns=["split", "item_id", "event_index", "t", "kind", "text", "reminder"])
    items = items.assign(answer1=items["answer1"].where(items["split"] != "RTD_counting", "one star"))
    _, rtd = score_rtd(other, items, events, LexicalJudge(), models=models)
    judge = reminder_judge(None, "keyword", 0.5, keyword_match)
    _, pr = score_pr(other, items, judge, models)
    mine = rtd.set_index("model").loc["streamer"]
    assert (mine["n_sentences"], mine["temporal_score"], mine["irrelevant_duration_ratio"]) == (0, 0.0, 0.0)
    assert pd.isna(mine["first_relevant_time"]) and mine["content_score"] == 0.0
    assert rtd.set_index("model").loc["baseline_caption", "n_sentences"] == 1
    assert pr.set_index("model").loc["streamer", ["n_events", "n_passed", "sample_score"]].tolist() == [
        2,
        0,
        0,
    ]
    metrics = streaming_metrics(rtd, pr, stream_step_counts(steps)).set_index(["model", "split"])
    row = metrics.loc[("streamer", "all")]
    assert (row["temporal_100"], row["content_100"], row["reminder_100"]) == (0.0, 0.0, 0.0)
    assert row["n_stream_steps"] == 20 and row["n_silent_steps"] == (20 if kind == SILENCE else 0)
    assert row["n_unparsed_steps"] == (20 if kind == UNPARSED else 0)
    assert metrics.loc[("streamer", "RTD_counting"), "n_stream_steps"] == 10
    assert pd.isna(metrics.loc[("baseline_caption", "all"), "n_stream_steps"])  # not streamed here

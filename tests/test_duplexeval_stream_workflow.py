"""The Omni-DuplexEval workflow streams a registry model (issue 18): a loopback OpenAI-compatible
model whose scripted policy speaks at known times; the scores equal the ones computed by hand."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from http_server import Action, FakeChatServer
from social_workflow import snakemake_command, social_config, social_run

from omnisocial.duplexeval.contracts import STREAM_ITEMS, STREAM_RESPONSES
from omnisocial.duplexeval.importers import load_stream_responses

ROOT = Path(__file__).resolve().parents[1]
NOW = re.compile(r"to ([0-9.]+) s \(now\)")
STEP_S = 1.0
MODEL = "loop"
RUN = {"capture_output": True, "text": True, "timeout": 900}


def grid_after(t: float) -> float:
    """The first query time (step_s, 2 step_s, ...) at or after t."""
    return max(STEP_S, math.ceil(t / STEP_S - 1e-9) * STEP_S)


class Policy:
    """RTD: each event's caption at the first step >= event + 1.5 s, and one unparseable reply at
    t = 1 s; PR: the reminder (answer1) at the first step >= reminder1 + 0.5 s, nothing for
    reminder2. Silent otherwise. Read from the workflow's imported items once they exist."""

    def __init__(self, results: Path):
        self.results = results
        self.says: dict[str, dict[float, str]] | None = None

    def plan(self) -> dict[str, dict[float, str]]:
        items = STREAM_ITEMS.read(self.results / "items" / "stream_items.csv")
        events = pd.read_csv(self.results / "items" / "stream_events.csv")
        says: dict[str, dict[float, str]] = {}
        for item in items.to_dict("records"):
            if item["split"] == "RTD_counting":
                own = events[events["item_id"] == item["item_id"]]
                pairs = zip(own["t"], own["text"], strict=True)
                says[item["question_text"]] = {grid_after(t + 1.5): text for t, text in pairs}
            else:
                says[item["question_text"]] = {grid_after(item["reminder1"] + 0.5): item["answer1"]}
        return says

    def __call__(self, body: dict, number: int) -> Action:
        content = body["messages"][-1]["content"]
        text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
        self.says = self.says or self.plan()
        t = float(NOW.search(text).group(1))
        mine = next(says for question, says in self.says.items() if f'"{question}"' in text)
        if t == 1.0 and "Remind" not in text:
            return Action.ok("I am watching the stars.")  # unparsed: counted, never silence
        return Action.ok(f"SAY: {mine[t]}" if t in mine else "SILENT")


@pytest.mark.slow
@pytest.mark.heavy
def test_a_streamed_model_is_scored_beside_the_baselines_as_computed_by_hand(tmp_path_factory, tmp_path):
    social_run(tmp_path_factory, tmp_path)  # the demo and its baselines, done (social_workflow)
    config = social_config()
    config["social"]["streaming"].update(reminder_judge="keyword", stream_step_s=STEP_S)
    results = tmp_path / "results" / "social"
    command = [*snakemake_command(tmp_path), "--cores", "2"]
    policy = Policy(results)
    with FakeChatServer(responder=policy) as server:
        config["social"]["models"] = [
            {"name": MODEL, "backend": "openai", "model": "m", "base_url": server.url, "max_retries": 0,
             "modalities": ["text", "video"], "media": {"video_audio": "none", "max_frames": 2}}
        ]  # fmt: skip
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        run = subprocess.run([*command, "duplexeval_all"], **RUN, cwd=tmp_path)
        assert run.returncode == 0, run.stderr[-4000:]
        calls = server.requests
        items = STREAM_ITEMS.read(results / "items" / "stream_items.csv")
        planned = sum(math.floor(d / STEP_S + 1e-9) for d in items["video_duration"])
        assert calls == planned  # one call per item and step, to each clip's end

        # a rerun of the streaming job answers from the cache: no request, the same files (its
        # summary as the target: the scores below are the first run's, of the same responses)
        stream = results / "stream" / "duplexeval"
        before = {p.relative_to(stream): p.read_bytes() for p in sorted((stream / MODEL).rglob("*.json"))}
        shutil.rmtree(stream)
        summary_csv = stream / f"{MODEL}_summary.csv"
        again = subprocess.run([*command, str(summary_csv.relative_to(tmp_path))], **RUN, cwd=tmp_path)
        assert again.returncode == 0, again.stderr[-4000:]
        assert server.requests == calls
        after = {p.relative_to(stream): p.read_bytes() for p in sorted((stream / MODEL).rglob("*.json"))}
        assert after == before and len(after) == len(items)

    summary = pd.read_csv(summary_csv).set_index("protocol")
    assert summary.loc["rtd", "n_unparsed"] == 1 and summary["n_calls"].sum() == 0  # the rerun: all cached
    assert summary["n_steps"].sum() == planned
    # the released files read back by the released reader are the responses the scorers got
    responses = STREAM_RESPONSES.read(stream / f"{MODEL}_responses.csv")
    assert responses.equals(load_stream_responses(stream / MODEL, items, model=MODEL))

    rtd_item = items[items["split"] == "RTD_counting"].iloc[0]
    events = pd.read_csv(results / "items" / "stream_events.csv")
    own = events[events["item_id"] == rtd_item["item_id"]].sort_values("t")
    # by hand: sentence k is said at s_k = grid_after(t_k + 1.5) (a point sentence), its judge
    # window is [s_k - 2, s_k - 1.5]; its event lies in the window (cap 3) when s_k - t_k <= 2,
    # else it is at most 2 s before (cap 2); the sentence is that event's own caption
    # (an event whose step would come after the clip's end is never described)
    times = [t for t in own["t"] if grid_after(t + 1.5) <= rtd_item["video_duration"] + 1e-9]
    said = [grid_after(t + 1.5) for t in times]
    caps = [3 if s - t <= 2 + 1e-9 else 2 for s, t in zip(said, times, strict=True)]
    assert len(said) >= 2
    sentences = pd.read_csv(results / "scores" / "rtd_sentences.csv")
    mine = sentences[sentences["model"] == MODEL].sort_values("start")
    assert mine["start"].tolist() == said and mine["end"].tolist() == said
    assert mine["window_start"].tolist() == pytest.approx([s - 2 for s in said])
    assert mine["window_end"].tolist() == pytest.approx([s - 1.5 for s in said])
    assert mine["judged_ok"].all() and mine["is_relevant"].all()
    assert mine["temporal_score"].tolist() == caps
    rtd = pd.read_csv(results / "scores" / "rtd_scores.csv").set_index("model").loc[MODEL]
    assert rtd["temporal_score"] == pytest.approx(sum(caps) / len(caps))
    assert rtd["first_relevant_time"] == said[0]
    assert rtd["first_relevant_offset"] == pytest.approx(said[0] - own["t"].iloc[0])
    # reminders by hand: event 1 has the reminder (its answer's words) in [t, t + 10]; event 2
    # has no text in its window (0, no judge) -> 1 of 2 events, the sample fails
    pr_item = items[items["split"] == "PR_event_reminder"].iloc[0]
    assert grid_after(pr_item["reminder1"] + 0.5) < pr_item["reminder2"]  # nothing in event 2's window
    pr_events = pd.read_csv(results / "scores" / "pr_event_scores.csv")
    pr_mine = pr_events[pr_events["model"] == MODEL].sort_values("event_index")
    assert pr_mine["score"].tolist() == [1, 0] and pr_mine["judged"].tolist() == [True, False]
    metrics = pd.read_csv(results / "metrics" / "streaming_metrics.csv").set_index(["model", "split"])
    overall = metrics.loc[(MODEL, "all")]
    assert overall["reminder_event_100"] == 50 and overall["reminder_100"] == 0
    assert overall["temporal_100"] == pytest.approx(100 * sum(caps) / len(caps) / 3)
    # beside the baselines, per split
    assert {"baseline_caption", "baseline_detector", MODEL} <= set(metrics.index.get_level_values("model"))

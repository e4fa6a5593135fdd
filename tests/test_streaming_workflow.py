"""Issue 18 through the workflow: a registry model on a loopback OpenAI-compatible server streamed
through SocialOmni's every-second "speak now?" protocol.

The server's policy is scripted and known: for a stream prompt (it says "t = <t> s" and names the
target) it answers YES once t >= turn_end + 1.5 s of that item, NO before, and gibberish at the
first step of one item (unparsed). The test computes the response times, offsets and labels by
hand from that policy and the items, kills the streaming job with SIGKILL mid-item, reruns it
plainly (no answered call repeated, outputs equal to a clean run's), and checks that an entry
whose max_calls is below the plan stops before any call.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
import yaml
from http_server import Action, FakeChatServer
from social_workflow import BASE_TARGETS, snakemake_command, social_config, social_run

from omnisocial.socialomni.baselines import SIGNAL_MODEL
from omnisocial.socialomni.contracts import WHEN_STREAM_ITEMS

ROOT = Path(__file__).resolve().parents[1]
STREAM_PROMPT = re.compile(
    r"seen it up to t = ([0-9.]+) s\.\nBased on the conversation so far, should (.+?) speak now\?"
)
MODEL = "streamer"
LAG_S = 1.5  # the policy: YES once t >= turn_end + LAG_S


def _text(body: dict) -> str:
    content = body["messages"][-1]["content"]
    return (
        content if isinstance(content, str) else " ".join(p.get("text", "") for p in content if "text" in p)
    )


class Policy:
    """The scripted model: YES from turn_end + LAG_S on, gibberish once, NO else; a gate can hold a call."""

    def __init__(self, turn_end: dict[str, float], gibberish: tuple[str, float]):
        self.turn_end = turn_end  # target -> its item's turn end (the test keeps one item per target)
        self.gibberish = gibberish
        self.answered: list[tuple[str, float]] = []  # stream calls the server answered, in order
        self.gate_at: int | None = None  # hold the stream call after this many answered ones
        self.reached = threading.Event()
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, body: dict, number: int) -> Action:
        match = STREAM_PROMPT.search(_text(body))
        if not match:
            return Action.ok("NO")  # the single-cut who / when / how questions
        t, target = float(match.group(1)), match.group(2)
        with self._lock:
            held = self.gate_at is not None and len(self.answered) == self.gate_at
        if held:
            self.reached.set()
            self.release.wait(120)
            return Action.error(500, "held call (its client was killed)")
        with self._lock:
            self.answered.append((target, t))
        if (target, t) == self.gibberish:
            return Action.ok("Hmm, the weather looks nice today.")
        return Action.ok("YES" if t >= self.turn_end[target] + LAG_S - 1e-9 else "NO")


def snakemake(tmp_path: Path, *targets: str, wait: bool = True):
    command = [*snakemake_command(tmp_path), "--cores", "2", *targets]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    if not wait:
        return subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)


def expected(items: pd.DataFrame, gibberish: tuple[str, float]) -> dict:
    """By hand: each item's query times 1 s apart from stream_start, its first YES, offset and label."""
    out = {}
    for item in items.to_dict("records"):
        t, times = float(item["stream_start"]), []
        response = None
        while t <= float(item["stream_end"]) + 1e-9:
            times.append(round(t, 6))
            if t >= float(item["turn_end"]) + LAG_S - 1e-9 and (item["target"], round(t, 6)) != gibberish:
                response = round(t, 6)
                break
            t += 1.0
        offset = None if response is None else response - float(item["turn_end"])
        # thresholds (1, 2, 5): Perfect <= 1 < Delayed <= 2 < TooLate <= 5 < NoResponse
        label = (
            "NoResponse" if offset is None or offset > 5
            else "Perfect" if offset <= 1 else "Delayed" if offset <= 2 else "TooLate"
        )  # fmt: skip
        out[item["item_id"]] = {"times": times, "response": response, "offset": offset, "label": label}
    return out


@pytest.mark.slow
@pytest.mark.heavy
def test_a_model_streamed_through_the_when_protocol(tmp_path_factory, tmp_path):
    social_run(tmp_path_factory, tmp_path)  # the demo and its baselines, done (social_workflow)
    config = social_config()
    results = tmp_path / "results" / "social"
    items_csv = results / "items" / "when_stream_items.csv"
    built = snakemake(tmp_path, str(items_csv.relative_to(tmp_path)), *BASE_TARGETS)
    assert built.returncode == 0, built.stderr[-4000:]
    # the copy's mtimes and .snakemake metadata: every copied job is done
    assert "Nothing to be done" in built.stdout + built.stderr, built.stdout[-3000:]
    # two short items with different targets (the server tells the items apart by the target)
    items = WHEN_STREAM_ITEMS.read(items_csv)
    items = items[items["stream_end"] >= items["turn_end"] + LAG_S + 1]
    items = items.assign(steps=items["turn_end"] + LAG_S - items["stream_start"]).sort_values("steps")
    items = items.drop_duplicates("target").head(2).drop(columns="steps").reset_index(drop=True)
    assert len(items) == 2, "the demo clip should give two stream items with different targets"
    WHEN_STREAM_ITEMS.write(items_csv, items)
    first = items.iloc[0]
    gibberish = (first["target"], round(float(first["stream_start"]), 6))  # its first step is unparsed
    truth = expected(items, gibberish)
    total = sum(len(v["times"]) for v in truth.values())
    assert total >= 4

    policy = Policy(dict(zip(items["target"], items["turn_end"].astype(float), strict=True)), gibberish)
    with FakeChatServer(responder=policy) as server:
        entry = {
            "name": MODEL, "backend": "openai", "model": "stream-model", "base_url": server.url,
            "modalities": ["text", "video"], "max_retries": 0, "concurrency": 1,
            "media": {"video_audio": "none", "max_frames": 4},
        }  # fmt: skip
        config["social"]["models"] = [entry]
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        steps_target = f"results/social/stream/when/{MODEL}_steps.csv"

        # 1. kill -9 of the streaming job mid-item: after 3 answered steps, the 4th call held
        policy.gate_at = 3
        running = snakemake(tmp_path, steps_target, wait=False)
        assert policy.reached.wait(600), (tmp_path / "killed_run.txt").read_text()[-4000:]
        time.sleep(0.5)  # the 3rd reply is in the store (appended before the next round's call)
        jobs = [
            p
            for p in psutil.Process(running.pid).children(recursive=True)
            if "stream_when" in " ".join(p.cmdline())
        ]
        assert len(jobs) == 1
        os.kill(jobs[0].pid, signal.SIGKILL)
        assert running.wait(timeout=120) != 0, (tmp_path / "killed_run.txt").read_text()[-3000:]
        policy.gate_at = None
        policy.release.set()
        before = list(policy.answered)
        assert len(before) == 3 and not (tmp_path / steps_target).exists()

        # 2. a plain rerun of everything downstream: no answered call repeated
        timing_target = "results/social/metrics/when_timing.csv"
        figure_target = "results/social/figures/timing.png"  # models beside the silence baseline
        rerun = snakemake(tmp_path, timing_target, figure_target)
        assert rerun.returncode == 0, rerun.stderr[-4000:]
        after = policy.answered[len(before) :]
        assert not set(before) & set(after)
        assert len(before) + len(after) == total  # every step asked exactly once over both runs

        # the labels and offsets equal the hand-computed ones
        scores = pd.read_csv(results / "scores" / "when_stream_scores.csv", dtype={"item_id": str})
        mine = scores[scores["model"] == MODEL].set_index("item_id")
        assert set(mine.index) == set(truth)
        for item_id, want in truth.items():
            assert mine.loc[item_id, "label"] == want["label"]
            if want["response"] is None:
                assert math.isnan(mine.loc[item_id, "response_time"])
            else:
                assert mine.loc[item_id, "response_time"] == pytest.approx(want["response"], abs=1e-9)
                assert mine.loc[item_id, "offset"] == pytest.approx(want["offset"], abs=1e-9)
        assert set(scores["model"]) == {SIGNAL_MODEL, MODEL}  # the model beside the silence baseline
        timing = pd.read_csv(results / "metrics" / "when_timing.csv").set_index("model")
        labels = [v["label"] for v in truth.values()]
        assert timing.loc[MODEL, "n"] == 2
        assert timing.loc[MODEL, "late"] == pytest.approx(
            sum(lb in ("Delayed", "TooLate") for lb in labels) / 2
        )
        assert timing.loc[MODEL, "n_unparsed"] == 1 and timing.loc[MODEL, "n_steps"] == total
        # calls made by the rerun and steps answered from the cache: together an uninterrupted run's
        assert (timing.loc[MODEL, "n_calls"], timing.loc[MODEL, "n_cached"]) == (total - 3, 3)
        rates = pd.read_csv(results / "metrics" / "when_stream_rates.csv").set_index("model")
        assert rates.loc[MODEL, "n_unparsed"] == 1 and pd.isna(rates.loc[SIGNAL_MODEL, "n_unparsed"])
        offsets = [v["offset"] for v in truth.values() if v["offset"] is not None]
        assert timing.loc[MODEL, "mean_offset"] == pytest.approx(sum(offsets) / len(offsets))
        assert {"precision_0.2", "recall_0.5", "f1_1"} <= set(timing.columns)
        profile = pd.read_csv(results / "metrics" / "social_profile.csv").set_index("model")
        assert profile.loc[MODEL, "when_on_time"] == pytest.approx(timing.loc[MODEL, "on_time"])
        assert (tmp_path / figure_target).stat().st_size > 0
        steps = pd.read_csv(results / "stream" / "when" / f"{MODEL}_steps.csv", dtype={"item_id": str})
        assert steps["cached"].sum() == 3  # the three steps answered before the kill
        summary = pd.read_csv(results / "stream" / "when" / f"{MODEL}_summary.csv")
        assert summary.loc[0, "n_calls"] == total - 3 and summary.loc[0, "n_planned"] >= total
        log = (results / "logs" / f"socialomni_stream_when_{MODEL}.log").read_text()
        assert "planned calls" in log

        # 3. a clean run (fresh cache) gives the same outputs
        kept = steps.drop(columns=["cached", "latency_s"])
        shutil.rmtree(results / "stream" / "when")
        (results / "cache" / f"stream_when_{MODEL}.jsonl").unlink()
        clean = snakemake(tmp_path, steps_target)
        assert clean.returncode == 0, clean.stderr[-4000:]
        assert len(policy.answered) == 2 * total
        fresh = pd.read_csv(results / "stream" / "when" / f"{MODEL}_steps.csv", dtype={"item_id": str})
        assert fresh.drop(columns=["cached", "latency_s"]).equals(kept) and not fresh["cached"].any()

        # 4. max_calls below the plan: the job stops before any call, naming the numbers
        entry["max_calls"] = total - 1
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        shutil.rmtree(results / "stream" / "when")
        requests = server.requests
        capped = snakemake(tmp_path, steps_target)
        assert capped.returncode != 0
        log = (results / "logs" / f"socialomni_stream_when_{MODEL}.log").read_text()
        planned = int(summary.loc[0, "n_planned"])
        assert f"{MODEL}: planned {planned} calls (2 items x up to" in log
        assert f"max_calls {total - 1}; no call was made" in log
        assert server.requests == requests

"""The social workflow with an LLM judge: a model on a loopback OpenAI-compatible server."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from http_server import Action, FakeChatServer
from social_workflow import snakemake_command, social_config, social_run

from omnisocial.duplexeval.baselines import CAPTION_MODEL, DETECTOR_MODEL

ROOT = Path(__file__).resolve().parents[1]


def judge_reply(body: dict, number: int) -> Action:
    """Judge-shaped replies: the released temporal truncation (2.6 -> 2) and a free-text how score."""
    content = body["messages"][-1]["content"]
    text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
    if '"temporal_score"' in text:
        return Action.ok('{"temporal_score": 2.6, "is_relevant": true}')
    if '"content_score"' in text:
        return Action.ok('{"content_score": 2.25, "content_reasoning": "ok"}')
    if '"success_score"' in text:
        return Action.ok('{"success_score": 1, "reasoning": "ok"}')
    return Action.ok("Score: 75")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _judge(name: str, url: str) -> dict:
    return {
        "name": name,
        "backend": "openai",
        "model": "judge-model",
        "base_url": url,
        "modalities": ["text", "video"],
        "max_retries": 0,
        "media": {"video_audio": "none", "max_frames": 4},
    }


@pytest.mark.slow
def test_llm_judge_runs_through_the_social_workflow(tmp_path_factory, tmp_path):
    social_run(tmp_path_factory, tmp_path)  # the demo and its baselines, done (social_workflow)
    config = social_config()
    command = [*snakemake_command(tmp_path), "--cores", "2"]
    results = tmp_path / "results" / "social"
    with FakeChatServer(responder=judge_reply) as server:
        judge = _judge("judge-a", server.url)
        config["social"]["judges"] = {
            "how": [judge],
            "rtd_temporal": [judge],
            "rtd_content": [judge],
            "pr": [judge],
        }
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        run = subprocess.run(
            [*command, "social_all"], capture_output=True, text=True, timeout=900, cwd=tmp_path
        )
        assert run.returncode == 0, run.stderr[-4000:]
        calls = server.requests
        assert calls > 0
        frames_sent = sum(
            1
            for body in server.bodies
            if isinstance(body["messages"][-1]["content"], list)
            and '"temporal_score"' in str(body["messages"][-1]["content"][-1])
            and any(p["type"] == "image_url" for p in body["messages"][-1]["content"])
        )
        assert frames_sent > 0  # temporal requests carry their window's frames

        how = pd.read_csv(results / "metrics" / "how_metrics.csv")
        mine = how[(how["judge"] == "judge-a") & (how["scoring"] == "judged")]
        assert len(mine) and (mine["mean_without_zeros"] == 75).all() and (mine["n_judge_failed"] == 0).all()
        assert {"llm", "all", "embedding:all-MiniLM-L6-v2"} <= set(how["judge"])
        released = pd.read_csv(results / "metrics" / "how_released.csv")
        assert {"judge-a", "llm"} <= set(released["judge"]) and (released["parser"] == "released").all()
        assert {"mean_pipeline", "response_coverage", "large_gap_rate"} <= set(released.columns)
        rtd = pd.read_csv(results / "metrics" / "rtd_judge_metrics.csv").set_index(
            ["judge", "model", "split"]
        )
        caption = rtd.loc[("judge-a", CAPTION_MODEL, "all")]
        assert caption["temporal_score"] == 2 and caption["content_score"] == 2.25  # 2.6 -> 2 as released
        assert caption["n_judge_failed"] == 0
        pr = pd.read_csv(results / "metrics" / "pr_judge_metrics.csv").set_index(["judge", "model", "split"])
        assert pr.loc[("judge-a", DETECTOR_MODEL, "all"), "success_fraction"] == 1
        assert (results / "cache" / "judge_judge-a.jsonl").stat().st_size > 0
        # the streaming judges' agreement: the LLM judge beside the offline one, per task and model
        agreement = pd.read_csv(results / "metrics" / "stream_judge_agreement.csv")
        temporal = agreement.set_index(["task", "model", "split"]).loc[("rtd_temporal", CAPTION_MODEL, "all")]
        assert temporal["judges"] == "judge-a;offline" and temporal["n_items"] >= 1
        assert "pr" in set(agreement["task"])

        # a rerun of the judge jobs answers from the cache: no new request
        shutil.rmtree(results / "judges")
        again = subprocess.run(
            [*command, "social_all"], capture_output=True, text=True, timeout=900, cwd=tmp_path
        )
        assert again.returncode == 0, again.stderr[-4000:]
        assert server.requests == calls
        assert pd.read_csv(results / "metrics" / "how_metrics.csv").equals(how)

    # a judge on a dead port fails its job in seconds (the probe), before any call
    dead = _judge("dead-judge", f"http://127.0.0.1:{_free_port()}/v1")
    config["social"]["judges"] = {"how": [dead]}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    started = time.monotonic()
    target = "results/social/judges/how/dead-judge.csv"  # relative to --directory
    failed = subprocess.run([*command, target], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    elapsed = time.monotonic() - started
    assert failed.returncode != 0, failed.stderr[-2000:]
    log = (results / "logs" / "socialomni_llm_judge_dead-judge.log").read_text()
    assert "unreachable" in log + failed.stderr and "no call was made" in log + failed.stderr
    assert elapsed < 90, elapsed
    assert not (tmp_path / target).exists()

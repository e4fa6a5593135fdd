"""The social workflow with an LLM judge: a model on a loopback OpenAI-compatible server.

The run is social_workflow.judged_run, shared with test_social_pipeline (its registry models).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from http_server import FakeChatServer
from social_workflow import (
    JUDGE,
    JUDGE_REQUESTS,
    judge_entry,
    judge_reply,
    judged_config,
    judged_run,
    snakemake_command,
    write_config,
)

from omnisocial.duplexeval.baselines import CAPTION_MODEL, DETECTOR_MODEL

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
@pytest.mark.xdist_group("social-judged")  # one shared run (social_workflow.judged_run)
@pytest.mark.heavy  # 12 CPU-s
def test_llm_judge_runs_through_the_social_workflow(tmp_path_factory, tmp_path):
    # the judge on every judged task through social_all, beside three registry models (which
    # test_social_pipeline checks): social_workflow's shared run, whose build fails with
    # Snakemake's stderr and records what the judge's server was asked
    judged_run(tmp_path_factory, tmp_path)
    config = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert {task: [j["name"] for j in judges] for task, judges in config["social"]["judges"].items()} == {
        task: [JUDGE] for task in ("how", "rtd_temporal", "rtd_content", "pr")
    }
    command = [*snakemake_command(tmp_path), "--cores", "2"]
    results = tmp_path / "results" / "social"
    asked = json.loads((tmp_path / JUDGE_REQUESTS).read_text())
    calls = asked["requests"]
    assert calls > 0 and len(asked["bodies"]) == calls
    frames_sent = sum(
        1
        for body in asked["bodies"]
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
    rtd = pd.read_csv(results / "metrics" / "rtd_judge_metrics.csv").set_index(["judge", "model", "split"])
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

    # a rerun of the judge jobs (the judge now on this server) answers from the cache: no
    # request. The judges' tables are named as targets: Snakemake does not rebuild a deleted
    # file that only up-to-date files downstream of it need (social_all alone reran nothing).
    judges = [results / "judges" / task / f"{JUDGE}.csv" for task in ("how", "stream")]
    replies = [pd.read_csv(path) for path in judges]
    with FakeChatServer(responder=judge_reply) as server:
        config = judged_config(server.url)
        write_config(tmp_path, config)
        shutil.rmtree(results / "judges")
        targets = [str(path.relative_to(tmp_path)) for path in judges] + [
            "results/social/metrics/how_metrics.csv"
        ]
        again = subprocess.run(
            [*command, *targets], capture_output=True, text=True, timeout=900, cwd=tmp_path
        )
        assert again.returncode == 0, again.stderr[-4000:]
        assert server.requests == 0
        for path, before in zip(judges, replies, strict=True):
            rerun = pd.read_csv(path)  # the same replies, now from the cache
            assert rerun["cached"].all() and not before["cached"].any(), path
            assert rerun.drop(columns="cached").equals(before.drop(columns="cached")), path
        assert pd.read_csv(results / "metrics" / "how_metrics.csv").equals(how)

    # a judge on a dead port fails its job in seconds (the probe), before any call
    dead = judge_entry("dead-judge", f"http://127.0.0.1:{_free_port()}/v1")
    config["social"]["judges"] = {"how": [dead]}
    write_config(tmp_path, config)
    started = time.monotonic()
    target = "results/social/judges/how/dead-judge.csv"  # relative to --directory
    failed = subprocess.run([*command, target], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    elapsed = time.monotonic() - started
    assert failed.returncode != 0, failed.stderr[-2000:]
    log = (results / "logs" / "socialomni_llm_judge_dead-judge.log").read_text()
    assert "unreachable" in log + failed.stderr and "no call was made" in log + failed.stderr
    assert elapsed < 90, elapsed
    assert not (tmp_path / target).exists()

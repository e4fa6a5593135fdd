"""The social workflow tests' shared runs, each built once per session (conftest.shared_dir) and
copied into a test's own folder, so that each test runs only the jobs its own models, judges or
parameters add:

- `social_run`: one small social demo, its import, the who / when / how and streaming baselines
  and the streaming benchmark's video segments (test_duplexeval_stream_workflow,
  test_streaming_workflow; and the start of the next one);
- `judged_run`: that, plus three registry baseline models with their modality ablations and an
  LLM judge on a loopback server, through `social_all` (test_social_pipeline reads the models,
  test_social_llm_judges_workflow the judge).

A copy keeps the files' mtimes and the `.snakemake` metadata, so Snakemake sees the copied jobs
as done: test_streaming_workflow checks that in its copy of the first (BASE_TARGETS: "Nothing to
be done"), test_social_pipeline in its copy of the second (social_all).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import shared_dir
from http_server import Action, FakeChatServer
from test_release import SNAKEMAKE

ROOT = Path(__file__).resolve().parents[1]
RESULTS = "results/social"
# What the tests' own jobs read and none of them rebuilds (relative to the run folder): the demo
# and its import (implied), the who / when / how and streaming baselines, and the streaming
# benchmark's video segments (one set for every model that streams video).
BASE_TARGETS = [
    f"{RESULTS}/replies/who_baselines.csv",
    f"{RESULTS}/replies/when_baselines.csv",
    f"{RESULTS}/replies/how_baselines.csv",
    f"{RESULTS}/baselines/stream_baseline_responses.csv",
    f"{RESULTS}/duplexeval_stream_media/video",
]


def social_config() -> dict:
    """The demo config with one small social demo that answers every social workflow test: one
    multi-party clip, a counting and a reminder clip of 20-24 s, captions 2 s after each event."""
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    config["social"]["demo"].update(
        n_multiparty=1, who_items_per_clip=2, when_transitions_per_clip=1,
        visual_splits=["RTD_counting", "PR_event_reminder"], visual_duration_s=[20, 24],
    )  # fmt: skip
    config["social"]["streaming"]["caption_delay_s"] = 2.0
    return config


def write_config(workdir: Path, config: dict) -> None:
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def snakemake_command(workdir: Path) -> list[str]:
    """Snakemake on the workflow in `workdir`, with its config.yaml."""
    return [*SNAKEMAKE, "--directory", str(workdir), "--configfile", str(workdir / "config.yaml")]


def _snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    # the workflow parses with this checkout's package (as test_streaming_workflow's runs)
    path = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    command = [*snakemake_command(workdir), *args]
    env = {**os.environ, "PYTHONPATH": path}
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=workdir, env=env)
    assert result.returncode == 0, f"snakemake {' '.join(args)} failed:\n{result.stderr[-4000:]}"
    return result


def _build(folder: Path) -> None:
    write_config(folder, social_config())
    _snakemake(folder, "--cores", "2", *BASE_TARGETS)


def copy_run(source: Path, workdir: Path) -> Path:
    """`source`'s run into `workdir`: every file with its mtime, the .snakemake metadata too."""
    shutil.copytree(source, workdir, symlinks=True, dirs_exist_ok=True)  # copy2: mtimes kept
    return workdir


def social_run(tmp_path_factory: pytest.TempPathFactory, workdir: Path) -> Path:
    """The shared start (built once per session) copied into `workdir`, with its config.yaml."""
    return copy_run(shared_dir(tmp_path_factory, "social", _build), workdir)


# --- registry models and an LLM judge in one run ---------------------------------------------

# Registry models side by side (--cores 2): they share the cut clips of socialomni_cut_media;
# the modality ablation runs each of them again on audio only and on the transcript only.
CHANCE_AV = {"backend": "baseline", "model": "chance", "modalities": ["audio", "video"]}
REGISTRY_MODELS = [
    {**CHANCE_AV, "name": "chance-av-1"},
    {**CHANCE_AV, "name": "chance-av-2"},
    {**CHANCE_AV, "name": "chance-audio", "modalities": ["audio"]},
]
ABLATIONS = ["audio", "transcript"]
JUDGE = "judge-a"
JUDGE_REQUESTS = "judge_requests.json"  # what the judge's server was asked during the run


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


def judge_entry(name: str, url: str) -> dict:
    return {
        "name": name,
        "backend": "openai",
        "model": "judge-model",
        "base_url": url,
        "modalities": ["text", "video"],
        "max_retries": 0,
        "media": {"video_audio": "none", "max_frames": 4},
    }


def judged_config(url: str) -> dict:
    """The shared start's config with the registry models, their ablations and the judge at `url`
    on every judged task."""
    config = social_config()
    config["social"]["models"] = REGISTRY_MODELS
    config["social"]["ablations"] = ABLATIONS
    judge = judge_entry(JUDGE, url)
    tasks = ("how", "rtd_temporal", "rtd_content", "pr")
    config["social"]["judges"] = {task: [judge] for task in tasks}
    return config


def _last_message(body: dict) -> dict:
    """A request's last message, its images' data left out (the tests count them)."""
    content = body["messages"][-1]["content"]
    if isinstance(content, list):
        content = [p if p.get("type") != "image_url" else {"type": "image_url"} for p in content]
    return {"messages": [{"content": content}]}


def _build_judged(tmp_path_factory: pytest.TempPathFactory, folder: Path) -> None:
    social_run(tmp_path_factory, folder)
    with FakeChatServer(responder=judge_reply) as server:
        write_config(folder, judged_config(server.url))
        _snakemake(folder, "--cores", "2", "social_all")
        asked = {"requests": server.requests, "bodies": [_last_message(b) for b in server.bodies]}
    (folder / JUDGE_REQUESTS).write_text(json.dumps(asked))


def judged_run(tmp_path_factory: pytest.TempPathFactory, workdir: Path) -> Path:
    """The models-and-judge run (built once per session) copied into `workdir`, with its
    config.yaml (the judge's server is gone: a test that reruns a judge job serves it anew)."""
    build = lambda folder: _build_judged(tmp_path_factory, folder)  # noqa: E731
    return copy_run(shared_dir(tmp_path_factory, "social-judged", build), workdir)

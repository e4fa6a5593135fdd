"""The demo corpus entry point: plan, build every interaction (at most two processes), write tables.

Part of `corpus.demo` (see its docstring). The corpus is built in `{root}.tmp` and renamed
onto `root` when complete.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from omnisocial.demo_kit import fresh_build, pcm16, publish, write_pcm_wav
from omnisocial.familiarity.corpus.demo.broken import (
    MODES,
    break_tracks,
    corrupt_video,
    frame_count,
    wav_payload,
    write_participant_json,
)
from omnisocial.familiarity.corpus.demo.design import (
    NOISE_RMS,
    Plan,
    plan_corpus,
    speech_targets,
    validate_params,
)
from omnisocial.familiarity.corpus.demo.layout import participant_json, tables
from omnisocial.familiarity.corpus.demo.scenes import (
    encode_mp4s,
    render_speech,
    video_frames,
)
from omnisocial.familiarity.corpus.demo.timeline import build_timeline, make_supply
from omnisocial.familiarity.corpus.demo.voices import Synth
from omnisocial.io import write_csv
from omnisocial.processes import fork_context

log = logging.getLogger(__name__)


def _make_interaction(task: tuple[Plan, dict, str]) -> dict:
    """Lay out, synthesize and write one interaction's participant files; return its measures."""
    plan, params, root = task
    rng = np.random.default_rng([int(params["seed"]), 1, plan.index])
    sample_rate = int(params["sample_rate"])
    duration = float(params["duration_s"])
    video = params["video"]
    style = params["style"][plan.relationship]
    mode = MODES.get(plan.expected, "dialogue")
    targets = speech_targets(params["min_total_speech_s"])
    out = Path(root)
    with tempfile.TemporaryDirectory(prefix="omnisocial-demo-") as scratch:
        workdir = Path(scratch)
        synth = Synth(sample_rate, workdir)
        supply = make_supply(rng, plan, synth)
        pieces, stats = build_timeline(
            mode,
            rng,
            supply,
            style,
            duration,
            sample_rate,
            targets,
            label=f"{plan.interaction_id} ({plan.expected})",
        )
        n_samples = int(round(duration * sample_rate))
        crosstalk = 10.0 ** (float(params["crosstalk_db"]) / 20.0)
        speech = [render_speech(pieces, who, n_samples, plan.people[who].gain) for who in range(2)]
        mics = []
        for who in range(2):
            noise = rng.normal(0.0, NOISE_RMS, n_samples).astype(np.float32)
            mics.append(speech[who] + crosstalk * speech[1 - who] + noise)
        pcm = [pcm16(mic) for mic in mics]
        break_tracks(plan.expected, pcm, mics, rng, sample_rate, n_samples)
        n_frames = int(round(duration * float(video["fps"])))
        cameras = []
        for who in range(plan.n_files):
            stem = out / plan.relative_stem(who)
            person = plan.people[who]
            write_pcm_wav(stem.with_suffix(".wav"), wav_payload(plan.expected, who, pcm[who]), sample_rate)
            frames_n = frame_count(plan.expected, who, n_frames)
            frames = video_frames(speech[who], person, video, sample_rate, frames_n)
            cameras.append((stem.with_suffix(".mp4"), frames, pcm[who]))
            data = participant_json(plan, who, pieces, rng, transcript=plan.expected != "missing_transcript")
            write_participant_json(plan.expected, who, stem.with_suffix(".json"), data)
        encode_mp4s(cameras, video, sample_rate, workdir)  # both cameras in one ffmpeg process
        for who, (mp4, _, _) in enumerate(cameras):
            corrupt_video(plan.expected, who, mp4)
    return {
        "interaction_id": plan.interaction_id,
        "expected": plan.expected,
        "speech_s": round(stats.speech_s, 3),
        "min_turns": stats.min_turns,
        "espeak_calls": synth.calls,
    }


# --------------------------------------------------------------------------- entry point


def _workers(n_tasks: int) -> int:
    return max(1, min(2, os.cpu_count() or 1, n_tasks))


def generate_demo_corpus(root: Path, params: dict) -> None:
    """Write the demo corpus described by `params` (the config's `demo:` block) to `root`.

    An existing `root` is replaced only once the new corpus is complete.
    """
    params = validate_params(params)
    root = Path(root)
    began = time.perf_counter()
    plans, prompts = plan_corpus(params)
    build = fresh_build(root)
    try:
        tasks = [(plan, params, str(build)) for plan in plans]
        workers = _workers(len(tasks))
        if workers == 1:
            results = [_make_interaction(task) for task in tasks]
        else:
            # the voices resample with scipy.signal, whose import costs about 1.6 CPU-s: imported
            # here, before the fork, each worker inherits it instead of importing it again
            import scipy.signal  # noqa: F401

            with ProcessPoolExecutor(max_workers=workers, mp_context=fork_context()) as pool:
                futures = [pool.submit(_make_interaction, task) for task in tasks]
                try:
                    results = [future.result() for future in futures]
                except BaseException:
                    pool.shutdown(wait=True, cancel_futures=True)
                    raise
        for name, frame in tables(plans, prompts, params).items():
            write_csv(build / name, frame)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    for result in results:
        log.debug("demo %(interaction_id)s %(expected)s: %(speech_s)s s speech", result)
    publish(build, root)
    log.info(
        "demo corpus: %d interactions (%d built to fail) in %s, %.1f s",
        len(plans),
        len(params["failures"]),
        root,
        time.perf_counter() - began,
    )

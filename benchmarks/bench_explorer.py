"""The results explorer at a real study's size, in headless Chromium (docs/explorer.md).

    .venv/bin/python benchmarks/bench_explorer.py [--items 2000] [--models 12] [--raters 20]

Generates a familiarity study's tables at that size (the contracts validate every one): the
design, a stimulus manifest with a transcript, two audio renderings and a video per dyad (real
files, made with ffmpeg), `--raters` human ratings per dyad and modality, every model's
predictions and response records (raw JSON replies with rationales of varied length, ~3%
unparsed and ~2% failed calls with their reasons), the crowd's majority votes, Rasch
difficulties, the filter report and a speech timeline per interaction; builds the items with
`familiarity.explorer.explorer_items` and writes the page with `omnisocial.explorer.write_explorer`,
the functions the workflow's rule calls. The same at 100 items is the baseline of the ratios.

In headless Chromium (file://) it times, per size: the load (navigation start to the page
ready, the data parsed and indexed and the list drawn), each filter and sort (the change event
to the list redrawn), opening an item (hash change to its detail drawn) and a scroll of the list.
Prints one table and the machine's load; exits 1 when the load at full size passes 2 s or a
filter, a sort or an item's opening passes 200 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from omnisocial.explorer import write_explorer
from omnisocial.familiarity import explorer as familiarity
from omnisocial.familiarity.contracts import (
    FILTER_REPORT,
    MAJORITY_VOTES,
    RASCH_DIFFICULTY,
    RESPONSES,
    SPEECH,
    STIMULI_MANIFEST,
)
from omnisocial.tables import DESIGN, PREDICTIONS, TRIALS

LOAD_TARGET_MS = 2000.0
ACTION_TARGET_MS = 200.0
MODALITIES = ("text", "audio", "video")
CUES = [
    "they finish each other's sentences",
    "the laughter is shared and quick",
    "long pauses before answering",
    "formal greetings and careful turn-taking",
    "they refer to past events they both attended",
    "one of them asks basic questions about the other's job",
    "overlapping speech without apology",
    "teasing that the other takes lightly",
    "polite agreement with little elaboration",
    "nicknames and inside jokes",
    "they mirror each other's posture",
    "hesitant eye contact and nervous smiles",
]
ERRORS = ["HTTP 429: rate limited after 3 retries", "timeout after 120 s", "HTTP 500: internal error"]


def media_files(folder: Path) -> dict[str, Path]:
    """One real clip of each kind (20 s): the manifest's rows point at hard links of them."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "text": folder / "t.txt",
        "mix": folder / "m.wav",
        "stereo": folder / "s.wav",
        "video": folder / "v.mp4",
    }
    files["text"].write_text("A: So, would you rather go to the mountains?\nB: The beach, every time.\n")
    run = ["ffmpeg", "-v", "error", "-y", "-f", "lavfi"]
    subprocess.run([*run, "-i", "sine=f=220:d=20", "-ar", "16000", str(files["mix"])], check=True)
    subprocess.run(
        [*run, "-i", "sine=f=330:d=20", "-ac", "2", "-ar", "16000", str(files["stereo"])], check=True
    )
    subprocess.run(
        [
            *run,
            "-i",
            "testsrc=s=320x120:r=10:d=20",
            "-f",
            "lavfi",
            "-i",
            "sine=f=440:d=20",
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
            "-shortest",
            str(files["video"]),
        ],
        check=True,
    )
    return files


def study_tables(folder: Path, n_items: int, n_models: int, n_raters: int, seed: int = 7) -> dict:
    """The tables of a familiarity study of that size, written under `folder`; their paths."""
    rng = np.random.default_rng(seed)
    ids = [f"D{i:05d}" for i in range(n_items)]
    interactions = [f"V{i % 7:02d}_S{rng.integers(1000, 9999)}_I{i:08d}" for i in range(n_items)]
    truth = rng.choice(["familiar", "stranger"], n_items)
    starts = rng.uniform(0, 120, n_items).round(3)
    design = pd.DataFrame(
        {
            "dyad_id": ids,
            "interaction_id": interactions,
            "site": [f"V{i % 7:02d}" for i in range(n_items)],
            "relationship": truth,
            "gender_mix": rng.choice(["female-female", "male-male", "female-male"], n_items),
            "position": rng.choice(["early", "late"], n_items),
            "clip_start": starts,
            "clip_end": starts + 20.0,
            "n_turns": rng.integers(4, 14, n_items),
            "participant_a": [f"P{rng.integers(1000, 9999)}" for _ in ids],
            "participant_b": [f"P{rng.integers(1000, 9999)}" for _ in ids],
        }
    )
    design["cell"] = design["site"] + "|" + design["relationship"] + "|" + design["gender_mix"]
    media = media_files(folder / "source")
    stimuli = folder / "stimuli"
    rows = []
    for dyad in ids:
        for modality, variant, key in (
            ("text", "transcript", "text"),
            ("audio", "mix", "mix"),
            ("audio", "stereo", "stereo"),
            ("video", "side_by_side", "video"),
        ):
            path = Path("media") / modality / f"{dyad}_{variant}{media[key].suffix}"
            (stimuli / path).parent.mkdir(parents=True, exist_ok=True)
            os.link(media[key], stimuli / path)
            rows.append((dyad, modality, variant, str(path), 20.0, "0" * 64, 0.0, 20.0))
    manifest = pd.DataFrame(rows, columns=STIMULI_MANIFEST.names)

    difficulty = rng.normal(0, 1, (n_items, 3))
    p_human = 1 / (1 + np.exp(difficulty - 0.4))
    trials = []
    for m, modality in enumerate(MODALITIES):
        correct = rng.random((n_items, n_raters)) < p_human[:, [m]]
        for r in range(n_raters):
            response = np.where(correct[:, r], truth, np.where(truth == "familiar", "stranger", "familiar"))
            trials.append(
                pd.DataFrame(
                    {
                        "rater_id": f"{modality[0].upper()}{r:03d}",
                        "dyad_id": ids,
                        "modality": modality,
                        "response": response,
                        "correct": correct[:, r],
                    }
                )
            )
    trials = pd.concat(trials, ignore_index=True)
    votes = trials.groupby(["modality", "dyad_id"], sort=False)["response"].agg(
        n_raters="size", n_familiar=lambda s: int((s == "familiar").sum())
    )
    votes = votes.reset_index().rename(columns={"dyad_id": "item_id"})
    votes["n_stranger"] = votes["n_raters"] - votes["n_familiar"]
    votes["tie"] = votes["n_familiar"] == votes["n_stranger"]
    votes["label"] = np.where(votes["n_familiar"] > votes["n_stranger"], "familiar", "stranger")
    votes["vote_share"] = np.maximum(votes["n_familiar"], votes["n_stranger"]) / votes["n_raters"]
    votes["truth"] = votes["item_id"].map(dict(zip(ids, truth, strict=True)))
    votes["source"] = ""

    predictions, responses = [], []
    for k in range(n_models):
        name = f"model-{k:02d}"
        skill = rng.uniform(-0.5, 1.2)
        for m, modality in enumerate(MODALITIES):
            right = rng.random(n_items) < 1 / (1 + np.exp(difficulty[:, m] - skill))
            label = np.where(right, truth, np.where(truth == "familiar", "stranger", "familiar"))
            status = rng.choice(["answered", "unparsed", "failed"], n_items, p=[0.95, 0.03, 0.02])
            label = np.where(status == "answered", label, "")
            confidence = np.where(status == "answered", rng.beta(5, 2, n_items).round(3), np.nan)
            rationale = [
                "; ".join(rng.choice(CUES, rng.integers(1, 6), replace=False)).capitalize() + "."
                if s == "answered"
                else ""
                for s in status
            ]
            raw = [
                json.dumps({"relationship_label": lab.upper(), "confidence": c, "rationale": why})
                if s == "answered"
                else ("I cannot tell from this clip." if s == "unparsed" else "")
                for s, lab, c, why in zip(status, label, confidence, rationale, strict=True)
            ]
            model = f"{name}@v1"
            predictions.append(
                pd.DataFrame(
                    {
                        "model": model,
                        "modality": modality,
                        "item_id": ids,
                        "truth": truth,
                        "label": label,
                        "confidence": confidence,
                    }
                )
            )
            responses.append(
                pd.DataFrame(
                    {
                        "model": model,
                        "name": name,
                        "modality": modality,
                        "prompt_variant": "v1",
                        "item_id": ids,
                        "truth": truth,
                        "prompt_hash": "p",
                        "template_sha256": "t",
                        "media_hashes": "{}",
                        "model_fingerprint": name,
                        "model_version": "",
                        "settings": "{}",
                        "cache_key": "k",
                        "status": status,
                        "raw_reply": raw,
                        "label": label,
                        "confidence": confidence,
                        "rationale": rationale,
                        "parse_error": np.where(
                            status == "unparsed", "no familiar/stranger label in the reply", ""
                        ),
                        "error": [rng.choice(ERRORS) if s == "failed" else "" for s in status],
                        "attempts": np.where(status == "failed", 3, 1),
                        "finish_reason": np.where(status == "failed", "", "stop"),
                        "audio_path": "",
                    }
                )
            )
    predictions = pd.concat(predictions, ignore_index=True)
    responses = pd.concat(responses, ignore_index=True)

    rasch = []
    for m, modality in enumerate(MODALITIES):
        for rater_type in ("human", "model"):
            rasch.append(
                pd.DataFrame(
                    {
                        "modality": modality,
                        "rater_type": rater_type,
                        "dyad_id": ids,
                        "truth": truth,
                        "difficulty": difficulty[:, m] + rng.normal(0, 0.3, n_items),
                        "sd": 0.4,
                        "sd_relative": 0.4,
                        "hdi_low": difficulty[:, m] - 0.8,
                        "hdi_high": difficulty[:, m] + 0.8,
                        "accuracy": p_human[:, m],
                        "n_responses": n_raters if rater_type == "human" else n_models,
                        "source": "",
                    }
                )
            )
    rasch = pd.concat(rasch, ignore_index=True)
    report = pd.DataFrame(
        {
            "interaction_id": interactions,
            "site": design["site"],
            "relationship": truth,
            "gender_mix": design["gender_mix"],
            "ingest_pass": True,
            "f1_prompt_pass": True,
            "f1_prompt_value": "NAT_EO_03: either-or",
            "f2_turns_pass": True,
            "f2_turns_value": design["n_turns"],
            "f3_speech_pass": True,
            "f3_speech_value": rng.uniform(5, 12, n_items).round(3),
            "f4_tracks_pass": True,
            "f4_tracks_value": "similarity=0.1 lag=+0.00s",
            "f4_lag_measured": True,
            "f5_amount_pass": True,
            "f5_amount_value": rng.uniform(40, 90, n_items).round(3),
            "audit_pass": True,
            "audit_value": "3 hits",
            "passed": True,
            "reasons": "",
        }
    )
    speech = []
    for interaction, start in zip(interactions, starts, strict=True):
        t = start - 10
        for turn in range(14):  # alternating turns with small overlaps, over the clip and around it
            length = rng.uniform(0.8, 4.0)
            speech.append((interaction, "ab"[turn % 2], round(t, 3), round(t + length, 3), "corpus_vad"))
            t += length + rng.uniform(-0.3, 0.8)
    speech = pd.DataFrame(speech, columns=SPEECH.names)

    paths = {}
    for name, contract, frame in (
        ("design", DESIGN, design),
        ("trials", TRIALS, trials),
        ("majority_votes", MAJORITY_VOTES, votes),
        ("rasch_difficulty", RASCH_DIFFICULTY, rasch),
        ("filter_report", FILTER_REPORT, report),
        ("speech", SPEECH, speech),
    ):
        paths[name] = folder / f"{name}.csv"
        contract.write(paths[name], frame)
    paths["manifest"] = stimuli / "manifest.csv"
    STIMULI_MANIFEST.write(paths["manifest"], manifest)
    paths["predictions"] = [folder / "predictions.csv"]
    PREDICTIONS.write(paths["predictions"][0], predictions)
    paths["responses"] = [folder / "responses.csv"]
    RESPONSES.write(paths["responses"][0], responses)
    return paths


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(argument)
    return webdriver.Chrome(
        service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options
    )


ACTIONS = [  # (name, element id, value): a filter or sort as a user sets it
    ("filter: benchmark", "f-benchmark", "familiarity"),
    ("filter: model", "f-model", "model-03@v1"),
    ("filter: status failed", "f-status", "failed"),
    ("filter: best model vs crowd", "f-flag", "models_vs_humans"),
    ("filter: difficulty >= 1", "f-difficulty", "1"),
    ("sort: hardest first", "f-sort", "difficulty-desc"),
    ("search: a dyad id", "f-search", "D0019"),
]
CHANGE = """
const [id, value] = arguments; const node = document.getElementById(id);
const t0 = performance.now(); node.value = value;
node.dispatchEvent(new Event(node.tagName === 'SELECT' ? 'change' : 'input'));
return [performance.now() - t0, document.getElementById('count').textContent];"""
OPEN = """
const [id, done] = [arguments[0], arguments[arguments.length - 1]]; const t0 = performance.now();
location.hash = encodeURIComponent(id);
const wait = () => document.getElementById('detail').dataset.item === id
  ? requestAnimationFrame(() => done(performance.now() - t0)) : setTimeout(wait, 1);
wait();"""
SCROLL = """
const list = document.getElementById('list'); const t0 = performance.now();
list.scrollTop = list.scrollHeight / 2; list.dispatchEvent(new Event('scroll'));
const done = arguments[arguments.length - 1];
requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t0)));"""


def measure(driver, page: Path, repeats: int) -> dict[str, float]:
    """Median milliseconds of the load and of each action, over `repeats` fresh loads."""
    times: dict[str, list[float]] = {}
    for _ in range(repeats):
        driver.get(page.as_uri())
        deadline = time.time() + 60
        while not driver.execute_script("return document.body.dataset.ready === '1'"):
            if time.time() > deadline:
                raise RuntimeError(f"{page}: not ready after 60 s: {driver.get_log('browser')}")
            time.sleep(0.02)
        times.setdefault("load (navigation to ready)", []).append(
            driver.execute_script("return EXPLORER_READY_AT")
        )
        times.setdefault("  of which the data and list", []).append(
            driver.execute_script("return EXPLORER_READY_MS")
        )
        times.setdefault("scroll the list", []).append(driver.execute_async_script(SCROLL))
        first = driver.execute_script("return document.querySelector('#list .row').dataset.id")
        times.setdefault("open an item", []).append(driver.execute_async_script(OPEN, first))
        for name, element, value in ACTIONS:
            elapsed, _ = driver.execute_script(CHANGE, element, value)
            times.setdefault(name, []).append(elapsed)
    return {name: float(np.median(values)) for name, values in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--models", type=int, default=12)
    parser.add_argument("--raters", type=int, default=20)
    parser.add_argument("--baseline-items", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    results, sizes = {}, {}
    with tempfile.TemporaryDirectory(prefix="bench-explorer-") as tmp:
        driver = browser()
        try:
            for n in (args.baseline_items, args.items):
                folder = Path(tmp) / str(n)
                t0 = time.perf_counter()
                items = familiarity.explorer_items(
                    study_tables(folder / "tables", n, args.models, args.raters)
                )
                built = time.perf_counter() - t0
                t0 = time.perf_counter()
                counts = write_explorer(items, folder / "explorer", title=f"benchmark: {n} items")
                written = time.perf_counter() - t0
                size = (folder / "explorer" / "items.js").stat().st_size
                sizes[n] = (counts["items"], sum(len(i["answers"]) for i in items), size, built, written)
                results[n] = measure(driver, folder / "explorer" / "index.html", args.repeats)
        finally:
            driver.quit()
    small, big = args.baseline_items, args.items
    print(
        f"explorer benchmark: {args.models} models x 3 modalities, {args.raters} raters per dyad and"
        f" modality; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    for n in (small, big):
        items, answers, size, built, written = sizes[n]
        print(
            f"  {n} items: {answers} answers, items.js {size / 1e6:.1f} MB; "
            f"items built in {built:.1f} s, written in {written:.1f} s"
        )
    print(f"{'measure (median of ' + str(args.repeats) + ')':34} {small:>10} {big:>10}   ratio   target")
    failed = []
    for name in results[big]:
        target = (
            LOAD_TARGET_MS
            if name.startswith("load")
            else (None if name.startswith("  ") else ACTION_TARGET_MS)
        )
        a, b = results[small][name], results[big][name]
        mark = "" if target is None else (f"< {target:.0f} ms" if b < target else f"MISSED {target:.0f} ms")
        if target is not None and b >= target:
            failed.append(name)
        print(f"{name:34} {a:8.1f}ms {b:8.1f}ms {b / a if a else float('nan'):6.1f}x   {mark}")
    if failed:
        print(f"missed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

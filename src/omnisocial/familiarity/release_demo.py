"""A small generated FriendBench release in both layouts, to try the release presets (issue 60).

`omnisocial friendbench-demo data/friendbench` writes, into one folder, the two layouts the
presets read (`release.LAYOUTS`):

    validation/data/metadata.csv                 dyads (+ transcript_path, audio_path, video_path)
    validation/ratings/human_ratings.csv         rater_id, dyad_id, modality, response
    validation/ratings/model_predictions.csv     model, modality, dyad_id, prediction, confidence
    validation/baselines/results.csv             the same columns, the released baselines
    validation/stimuli/{transcript,audio,video}/{dyad}.{txt,wav,mp4}
    val/metadata.jsonl, val/human_responses.jsonl
    GENERATED_BY_OMNISOCIAL.json                  what made it (the run says so on the console)

so that `snakemake --cores all --configfile config/friendbench_release.example.yaml` and
`... friendbench_val.example.yaml` run end to end without the real data. Nothing in it is real:
the dyads' relationships are drawn, the ratings and predictions are a simulated panel and
simulated models that answer right with a fixed probability, and the stimuli are two espeak-ng
voices reading a short exchange (audio) and that audio under a card naming the dyad (video).
Column names are those the presets map. The folder is built in `{root}.tmp` and renamed onto
`root` when complete; an existing `root` is replaced only when this generator made it (a real
download there is never touched). The same parameters give the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from omnisocial.demo_kit import encode_mp4, fresh_build, publish, speak, text_mask, write_wav
from omnisocial.familiarity.release import GENERATED_MARK, MODALITIES

SAMPLE_RATE = 16000
VIDEO = {"width": 160, "height": 96, "fps": 5}
VOICES = (("en-us", 40), ("en-gb", 70))  # (espeak-ng voice, pitch): speaker A, speaker B
LINES = {
    "familiar": ("Did you finish the book I lent you?", "Almost, the ending is slow.", "Told you so."),
    "stranger": ("Hi, I am new here. Where are you from?", "From the coast. And you?", "Nice to meet you."),
}
DEFAULTS = {"n_dyads": 8, "raters_per_modality": 4, "seed": 3, "human_accuracy": 0.7, "model_accuracy": 0.75}
MODELS = ("gpt-4o", "gemini-2.5-pro")
BASELINES = ("behavioural", "chance")


def dyads(n_dyads: int) -> pd.DataFrame:
    """The release's dyad table: ids, relationship (the release's own spellings), site, gender mix, clip."""
    index = np.arange(n_dyads)
    return pd.DataFrame(
        {
            "dyad_id": [f"FB{i:03d}" for i in index],
            "relationship": ["Friends" if i % 2 == 0 else "strangers" for i in index],
            "site": ["V00" if i < n_dyads // 2 else "V01" for i in index],
            "gender_mix": ["female-male"] * n_dyads,
            "clip_start": [5.0 + i for i in index],
            "clip_end": [25.0 + i for i in index],
        }
    )


def _familiar(relationship: str) -> bool:
    return relationship.lower().startswith("f")


def ratings(table: pd.DataFrame, raters: int, accuracy: float, seed: int) -> pd.DataFrame:
    """A simulated panel: every rater of each modality answers every dyad, right with `accuracy`."""
    rng = np.random.default_rng(seed)
    rows = []
    for modality in MODALITIES:
        for rater in range(raters):
            for dyad, relationship in zip(table["dyad_id"], table["relationship"], strict=True):
                right = rng.random() < accuracy
                familiar = _familiar(relationship) == right
                rows.append(
                    {
                        "rater_id": f"{modality[0]}{rater}",
                        "dyad_id": dyad,
                        "modality": modality,
                        "response": "familiar" if familiar else "stranger",
                    }
                )
    return pd.DataFrame(rows)


def predictions(table: pd.DataFrame, models, accuracy: float, seed: int) -> pd.DataFrame:
    """Simulated models: one answer per model, modality and dyad, right with `accuracy`, with a confidence."""
    rng = np.random.default_rng(seed)
    rows = []
    for model in models:
        for modality in MODALITIES:
            for dyad, relationship in zip(table["dyad_id"], table["relationship"], strict=True):
                right = rng.random() < accuracy
                rows.append(
                    {
                        "model": model,
                        "modality": modality,
                        "dyad_id": dyad,
                        "prediction": "familiar" if _familiar(relationship) == right else "stranger",
                        "confidence": round(float(rng.uniform(0.5, 1.0)), 3),
                    }
                )
    return pd.DataFrame(rows)


def _card(dyad: str) -> np.ndarray:
    """One RGB video frame: the dyad's id on a dark card."""
    frame = np.full((VIDEO["height"], VIDEO["width"], 3), 30, dtype=np.uint8)
    mask = text_mask(dyad, scale=3)
    y, x = (VIDEO["height"] - mask.shape[0]) // 2, (VIDEO["width"] - mask.shape[1]) // 2
    frame[y : y + mask.shape[0], x : x + mask.shape[1]][mask] = (230, 230, 230)
    return frame


def _stimuli(build: Path, dyad: str, relationship: str, work: Path) -> dict[str, str]:
    """The dyad's transcript, audio and video under validation/stimuli/; their paths, relative to the root."""
    from omnisocial.media.pipe import yuv420p

    lines = LINES["familiar" if _familiar(relationship) else "stranger"]
    speakers = ["A", "B", "A"]
    paths = {
        "transcript_path": f"validation/stimuli/transcript/{dyad}.txt",
        "audio_path": f"validation/stimuli/audio/{dyad}.wav",
        "video_path": f"validation/stimuli/video/{dyad}.mp4",
    }
    for path in paths.values():
        (build / path).parent.mkdir(parents=True, exist_ok=True)
    (build / paths["transcript_path"]).write_text(
        "".join(f"{s}: {line}\n" for s, line in zip(speakers, lines, strict=True)), encoding="utf-8"
    )
    pause = np.zeros(int(0.3 * SAMPLE_RATE), dtype=np.float32)
    pieces = []
    for speaker, line in zip(speakers, lines, strict=True):
        voice, pitch = VOICES[0 if speaker == "A" else 1]
        pieces += [speak(voice, pitch, 170, line, work / "line.wav", SAMPLE_RATE), pause]
    audio = np.concatenate(pieces)
    write_wav(build / paths["audio_path"], audio, SAMPLE_RATE)
    n_frames = int(np.ceil(len(audio) / SAMPLE_RATE * VIDEO["fps"]))
    encode_mp4(
        build / paths["video_path"],
        yuv420p(_card(dyad)) * n_frames,
        n_frames,
        VIDEO,
        work,
        audio,
        SAMPLE_RATE,
    )
    return paths


def write_release(root: str | Path, params: dict | None = None) -> Path:
    """Generate the release into `root` (module docstring); returns `root`."""
    params = {**DEFAULTS, **(params or {})}
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"friendbench-demo: unknown parameter(s) {', '.join(unknown)}")
    root = Path(root)
    if root.exists() and not (root / GENERATED_MARK).is_file():
        raise ValueError(
            f"{root} exists and was not made by omnisocial friendbench-demo: it is left as it is "
            "(a real download?); name another folder"
        )
    build = fresh_build(root)
    work = build / ".work"
    work.mkdir()
    table = dyads(params["n_dyads"])
    panel = ratings(table, params["raters_per_modality"], params["human_accuracy"], params["seed"])

    # validation/ (CSV): metadata with stimuli, ratings, model predictions, released baselines
    stimuli = [
        _stimuli(build, d, r, work) for d, r in zip(table["dyad_id"], table["relationship"], strict=True)
    ]
    metadata = pd.concat([table, pd.DataFrame(stimuli)], axis=1)
    for folder in ("data", "ratings", "baselines"):
        (build / "validation" / folder).mkdir(parents=True, exist_ok=True)
    metadata.to_csv(build / "validation" / "data" / "metadata.csv", index=False)
    panel.to_csv(build / "validation" / "ratings" / "human_ratings.csv", index=False)
    accuracy = params["model_accuracy"]
    predictions(table, MODELS, accuracy, params["seed"] + 2).to_csv(
        build / "validation" / "ratings" / "model_predictions.csv", index=False
    )
    predictions(table, BASELINES, accuracy, params["seed"] + 4).to_csv(
        build / "validation" / "baselines" / "results.csv", index=False
    )
    # val/ (JSON lines): metadata and human responses, no predictions
    (build / "val").mkdir()
    table.to_json(build / "val" / "metadata.jsonl", orient="records", lines=True)
    panel.to_json(build / "val" / "human_responses.jsonl", orient="records", lines=True)

    for path in work.iterdir():
        path.unlink()
    work.rmdir()
    mark = {
        "generator": "omnisocial friendbench-demo (omnisocial.familiarity.release_demo)",
        "note": "simulated dyads, ratings and predictions: not the FriendBench data",
        "params": params,
    }
    (build / GENERATED_MARK).write_text(json.dumps(mark, indent=2, sort_keys=True) + "\n")
    publish(build, root)
    return root


def add_cli(subparsers) -> None:
    """Register `omnisocial friendbench-demo ROOT`."""
    parser = subparsers.add_parser(
        "friendbench-demo",
        help="generate a small FriendBench release in both layouts (to try the release presets)",
        description="Write a small generated FriendBench release into ROOT in both layouts the presets "
        "read: validation/ (CSV, with model predictions and baselines; "
        "config/friendbench_release.example.yaml) and val/ (JSON lines, ratings only; "
        "config/friendbench_val.example.yaml). Simulated data, never the real release.",
    )
    parser.add_argument("root", help="the folder to write (the presets read data/friendbench)")
    parser.add_argument(
        "--n-dyads", type=int, default=DEFAULTS["n_dyads"], help="dyads (default: %(default)s)"
    )
    parser.add_argument(
        "--raters",
        type=int,
        default=DEFAULTS["raters_per_modality"],
        help="simulated raters per modality (default: %(default)s)",
    )
    parser.add_argument(
        "--seed", type=int, default=DEFAULTS["seed"], help="random seed (default: %(default)s)"
    )
    parser.set_defaults(func=_run)


def _run(args) -> int:
    import sys

    from omnisocial.errors import EXIT_OK, InputError

    try:
        root = write_release(
            args.root, {"n_dyads": args.n_dyads, "raters_per_modality": args.raters, "seed": args.seed}
        )
    except ValueError as error:
        raise InputError(str(error)) from None
    print(
        f"omnisocial friendbench-demo: a generated release (both layouts, {args.n_dyads} dyads) in {root}",
        file=sys.stderr,
    )
    return EXIT_OK

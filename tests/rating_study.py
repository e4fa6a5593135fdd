"""A small real study for the rating experiment's tests: design, stimuli rendered by ffmpeg, lists.

`build_study(folder)` renders six dyads' stimuli (1.2 s windows of two synthetic participants:
testsrc cameras, sine voices) and a practice stimulus per modality, deals the dyads into 3
blocks (2 per rater: 4 dyads a list), writes the survey lists and builds the three experiments.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd

from omnisocial.config import validate_config
from omnisocial.familiarity.ratings import rating_design, write_survey_lists
from omnisocial.familiarity.ratings.experiment import build_experiment, read_lists
from omnisocial.familiarity.stimuli import render_stimuli
from omnisocial.tables import DESIGN

REPO = Path(__file__).resolve().parents[1]
JSPSYCH_DIR = REPO / "node_modules"
CLIP_S = 1.2
N_DYADS = 6
PARAMS = {"sample_rate": 16000, "stereo": False, "video_height": 96, "video_fps": 10}


def _participant(folder: Path, name: str, freq: int, pattern: str) -> tuple[str, str]:
    base = ["ffmpeg", "-nostdin", "-v", "error", "-y"]
    video, audio = folder / f"{name}.mp4", folder / f"{name}.wav"
    subprocess.run(
        [*base, "-f", "lavfi", "-i", f"{pattern}=size=64x48:rate=10:duration=12"]
        + ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(video)],
        check=True,
    )
    subprocess.run(
        [*base, "-f", "lavfi", "-i", f"sine=frequency={freq}:sample_rate=48000:duration=12"]
        + ["-c:a", "pcm_s16le", str(audio)],
        check=True,
    )
    return video.name, audio.name


def _design(n: int, prefix: str = "D") -> pd.DataFrame:
    rows = []
    for i in range(n):
        relationship = "familiar" if i % 2 == 0 else "stranger"
        rows.append(
            {
                "dyad_id": f"{prefix}{i + 1:03d}",
                "interaction_id": "I001",
                "cell": f"s1|{relationship}|ff",
                "site": "s1",
                "relationship": relationship,
                "gender_mix": "ff",
                "position": "early" if i % 4 < 2 else "late",
                "clip_start": 1.0 + i * 1.5,
                "clip_end": 1.0 + i * 1.5 + CLIP_S,
                "n_turns": 2,
                "participant_a": "P1",
                "participant_b": "P2",
            }
        )
    return DESIGN.validate(pd.DataFrame(rows))


def experiment_settings(**overrides) -> dict:
    """ratings.experiment with the schema's defaults, and `overrides` on top."""
    config = validate_config({"ratings": {"experiment": overrides}})
    return config["ratings"]["experiment"]


def build_study(
    folder: Path, raters: int = 3, settings: dict | None = None, design_keys: dict | None = None
) -> dict:
    """Design, stimuli, lists and the three experiments under `folder`; returns their paths.

    `design_keys` are recorded in each build.json as the workflow records the configuration's.
    """
    folder.mkdir(parents=True, exist_ok=True)
    media = folder / "corpus"
    media.mkdir()
    video_a, audio_a = _participant(media, "pa", 440, "testsrc")
    video_b, audio_b = _participant(media, "pb", 660, "testsrc2")
    interactions = pd.DataFrame(
        [
            {
                "interaction_id": "I001",
                "participant_a": "P1",
                "participant_b": "P2",
                "video_a": video_a,
                "audio_a": audio_a,
                "video_b": video_b,
                "audio_b": audio_b,
            }
        ]
    )
    segments = pd.DataFrame(
        [
            ("I001", "a" if i % 2 else "b", 1.0 + i * 0.75, 1.6 + i * 0.75, f"words of turn {i}")
            for i in range(14)
        ],
        columns=["interaction_id", "speaker", "start", "end", "text"],
    )
    design = _design(N_DYADS)
    stimuli = folder / "stimuli"
    render_stimuli(design, interactions, segments, stimuli, PARAMS, media_root=media)
    practice_design = _design(1, prefix="P")
    practice_dir = folder / "practice_stimuli"
    render_stimuli(practice_design, interactions, segments, practice_dir, PARAMS, media_root=media)
    suffix = {"text": "txt", "audio": "wav", "video": "mp4"}
    practice = {m: [str(practice_dir / m / f"P001.{suffix[m]}")] for m in suffix}
    settings = settings or experiment_settings(practice=practice)
    made = rating_design(design, 3, 2, {"text": raters, "audio": raters, "video": raters}, seed=7)
    surveys = folder / "surveys"
    experiments = folder / "experiment"
    for modality in ("text", "audio", "video"):
        write_survey_lists(made.survey_lists(modality), surveys, modality)
        build_experiment(
            modality,
            read_lists(surveys, modality),
            made.assignments_by_modality()[modality],
            made.blocks,
            stimuli,
            settings,
            JSPSYCH_DIR,
            experiments / modality,
            design=design,
            design_keys=design_keys,
        )
    return {
        "design": design,
        "blocks": made.blocks,
        "assignments": made.assignments,
        "experiments": experiments,
        "settings": settings,
        "stimuli": stimuli,
        "surveys": surveys,
    }

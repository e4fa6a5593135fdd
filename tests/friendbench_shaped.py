"""A SIMULATED download in the FriendBench release's validation/ layout at the published size, for
setting the release preset's paper numbers beside the published ones when the release itself is
not at hand (docs/friendbench-release.md#paper-numbers).

96 dyads (3 sites x 2 relationships x 2 gender mixes x 8), 90 raters per modality in a planned-
missing design (6 blocks of 16 dyads, 2 blocks a rater: 30 ratings per dyad), two models'
predictions and a chance baseline's. Each rating is right with probability logistic(modality +
rater + dyad), the modality terms set so that a typical rater is right on the published 49.9% /
56.3% / 60.9% (text / audio / video) of typical dyads, rater SD 0.4 and dyad SD 0.6 on the logit
scale. The published figures are the generating values, so agreement is a recovery check of the
statistics on data of the release's shape and size, not a reproduction of the paper.

    python tests/friendbench_shaped.py /tmp/friendbench_shaped
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

MODALITIES = ("text", "audio", "video")
PUBLISHED_ACCURACY = {"text": 0.499, "audio": 0.563, "video": 0.609}
RATER_SD, DYAD_SD = 0.4, 0.6
N_BLOCKS, BLOCKS_PER_RATER, RATERS = 6, 2, 90


def _logit(p: float) -> float:
    return float(np.log(p / (1 - p)))


def dyads() -> pd.DataFrame:
    rows = []
    for site in ("V00", "V01", "V02"):
        for relationship in ("familiar", "stranger"):
            for gender_mix in ("same", "mixed"):
                for i in range(8):
                    rows.append(
                        {
                            "dyad_id": f"FB{len(rows):03d}",
                            "relationship": relationship,
                            "site": site,
                            "gender_mix": gender_mix,
                            "clip_start": 5.0 + i,
                            "clip_end": 25.0 + i,
                        }
                    )
    return pd.DataFrame(rows)


def ratings(design: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    ids = list(design["dyad_id"])
    truth = dict(zip(ids, design["relationship"], strict=True))
    ease = dict(zip(ids, rng.normal(0, DYAD_SD, len(ids)), strict=True))
    blocks = [ids[b::N_BLOCKS] for b in range(N_BLOCKS)]
    pairs = [(a, b) for a in range(N_BLOCKS) for b in range(a + 1, N_BLOCKS)]
    rows = []
    for modality in MODALITIES:
        for r in range(RATERS):
            skill = rng.normal(0, RATER_SD)
            first, second = pairs[r % len(pairs)]
            for dyad in blocks[first] + blocks[second]:
                p = 1 / (1 + np.exp(-(_logit(PUBLISHED_ACCURACY[modality]) + skill + ease[dyad])))
                right = rng.random() < p
                other = "stranger" if truth[dyad] == "familiar" else "familiar"
                rows.append(
                    {
                        "rater_id": f"{modality[0]}{r:03d}",
                        "dyad_id": dyad,
                        "modality": modality,
                        "response": truth[dyad] if right else other,
                    }
                )
    return pd.DataFrame(rows)


def predictions(design: pd.DataFrame, rng: np.random.Generator, models: dict[str, float]) -> pd.DataFrame:
    rows = []
    for model, accuracy in models.items():
        for modality in MODALITIES:
            for dyad, relationship in zip(design["dyad_id"], design["relationship"], strict=True):
                right = rng.random() < accuracy
                other = "stranger" if relationship == "familiar" else "familiar"
                rows.append(
                    {
                        "model": model,
                        "modality": modality,
                        "dyad_id": dyad,
                        "prediction": relationship if right else other,
                        "confidence": round(float(rng.uniform(0.5, 1.0)), 3),
                    }
                )
    return pd.DataFrame(rows)


def write(root: Path, seed: int = 63) -> Path:
    rng = np.random.default_rng(seed)
    design = dyads()
    for modality, suffix in (("transcript", "txt"), ("audio", "wav"), ("video", "mp4")):
        folder = root / "validation" / "stimuli" / modality
        folder.mkdir(parents=True, exist_ok=True)
        for dyad in design["dyad_id"]:
            (folder / f"{dyad}.{suffix}").write_text(f"A: hello ({dyad})\nB: hi\n")
        design[f"{modality}_path"] = [
            f"validation/stimuli/{modality}/{d}.{suffix}" for d in design["dyad_id"]
        ]
    for folder in ("data", "ratings", "baselines"):
        (root / "validation" / folder).mkdir(parents=True, exist_ok=True)
    design.to_csv(root / "validation" / "data" / "metadata.csv", index=False)
    ratings(design, rng).to_csv(root / "validation" / "ratings" / "human_ratings.csv", index=False)
    models = predictions(design, rng, {"gpt-4o": 0.55, "gemini-2.5-pro": 0.6})
    models.to_csv(root / "validation" / "ratings" / "model_predictions.csv", index=False)
    baselines = predictions(design, rng, {"chance": 0.5})
    baselines.to_csv(root / "validation" / "baselines" / "results.csv", index=False)
    return root


if __name__ == "__main__":
    print(write(Path(sys.argv[1])))

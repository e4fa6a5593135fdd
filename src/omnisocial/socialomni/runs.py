"""Run names and inputs of the who / when / how model jobs: one run per registry entry and ablation.

Kept free of heavy imports (no pandas, scipy or ffmpeg): the workflow's rule files import
it while Snakemake parses, and on a cluster every job parses the workflow again.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Mapping

from omnisocial.models.capabilities import needs_audio


def model_modality(entry: Mapping) -> str | None:
    """The who/when input modality of a registry entry: audio_video, video or audio; None for text-only."""
    modalities = set(entry.get("modalities") or ())
    if {"audio", "video"} <= modalities:
        return "audio_video"
    if "video" in modalities:
        return "video"
    if "audio" in modalities:
        return "audio"
    return None


MEDIA_SUFFIX = {"audio": ".wav", "video": ".mp4", "audio_video": ".mp4"}

ABLATIONS = ("audio", "video", "transcript")
ABLATION_SEPARATOR = "@"


def run_name(name: str, ablation: str | None = None) -> str:
    """The run of a registry entry: its name for the full input, `<name>@<ablation>` for an ablation."""
    if not ablation:
        return name
    if ablation not in ABLATIONS:
        raise ValueError(f"unknown ablation {ablation!r}; expected one of {', '.join(ABLATIONS)}")
    return f"{name}{ABLATION_SEPARATOR}{ablation}"


def split_run(run: str) -> tuple[str, str | None]:
    """(registry name, ablation or None) of a run name (`run_name` reversed)."""
    name, separator, ablation = run.rpartition(ABLATION_SEPARATOR)
    if separator and ablation in ABLATIONS:
        return name, ablation
    return run, None


def run_modality(entry: Mapping, ablation: str | None = None) -> str | None:
    """The input of one run of an entry: `model_modality` for the full input, else the ablation.

    None when the run has no requests (module doc): a text-only entry's full input, an
    ablation the entry cannot take (a transcript for a model that refuses requests without
    audio, docs/api-capabilities.md), or one that is already its full input.
    """
    full = model_modality(entry)
    if not ablation:
        return full
    if ablation not in ABLATIONS:
        raise ValueError(f"unknown ablation {ablation!r}; expected one of {', '.join(ABLATIONS)}")
    if ablation == full:
        return None
    if ablation != "transcript" and ablation not in set(entry.get("modalities") or ()):
        return None
    if ablation == "transcript" and needs_audio(entry):
        return None
    return ablation


# --- the streaming when protocol (socialomni.stream); here, scipy-free, for the rule files ---

DEFAULT_STREAM_S = 60.0  # cluster runtime estimate for an item without a stream_end


def first_query(stream_start: float, step_s: float) -> float:
    """The first query time: stream_start, or one step later when it is the clip's start (module doc)."""
    return float(stream_start) if stream_start > 0 else float(stream_start) + step_s


def planned_steps(items_csv: str | os.PathLike, step_s: float) -> int:
    """Calls a model's streaming job may make, for its cluster runtime (DEFAULT_STREAM_S of
    stream where an item's end is unknown)."""
    total = 0
    with open(items_csv, encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            start = first_query(float(row["stream_start"]), step_s)
            end = float(row["stream_end"]) if row.get("stream_end") else start + DEFAULT_STREAM_S
            total += max(int(math.floor((end - start) / step_s + 1e-9)) + 1, 0)
    return total

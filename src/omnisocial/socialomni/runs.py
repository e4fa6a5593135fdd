"""Run names and inputs of the who / when / how model jobs: one run per registry entry and ablation.

Kept free of heavy imports (no pandas, scipy or ffmpeg): the workflow's rule files import
it while Snakemake parses, and on a cluster every job parses the workflow again.
"""

from __future__ import annotations

from collections.abc import Mapping


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
    ablation the entry cannot take, or one that is already its full input.
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
    return ablation

"""Joining corpus transcripts with ASR output, and carrying ASR failures as exclusions."""

from __future__ import annotations

import pandas as pd

from omnisocial.familiarity.contracts import SEGMENTS


def combine_segments(*frames: pd.DataFrame) -> pd.DataFrame:
    """One SEGMENTS table from corpus transcripts and ASR, in a stable order."""
    combined = pd.concat([SEGMENTS.validate(frame) for frame in frames], ignore_index=True)
    combined = combined.sort_values(["interaction_id", "start", "speaker", "end"], kind="mergesort")
    return SEGMENTS.validate(combined)


def mark_asr_failures(interactions: pd.DataFrame, failures: pd.DataFrame | None) -> pd.DataFrame:
    """Interactions whose transcription failed become unusable, with ASR's reason."""
    marked = interactions.copy()
    if failures is None or failures.empty:
        return marked
    reasons = failures.groupby("interaction_id")["reason"].agg("; ".join)
    hit = marked["interaction_id"].isin(reasons.index) & marked["ingest_ok"]
    marked.loc[hit, "ingest_ok"] = False
    marked.loc[hit, "ingest_reason"] = "ASR failed: " + marked.loc[hit, "interaction_id"].map(reasons)
    return marked

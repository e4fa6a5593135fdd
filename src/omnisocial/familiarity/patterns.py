"""How a table writes a dyad id: patterns such as "video/{dyad_id}.mp4" (ratings and release imports).

Standard library only: `release.prediction_files` runs while Snakemake parses the workflow.
"""

from __future__ import annotations

import re


def pattern_regex(pattern: str) -> re.Pattern:
    """A regex with group `dyad_id` for a pattern holding "{dyad_id}" exactly once."""
    if pattern.count("{dyad_id}") != 1:
        raise ValueError(f"pattern {pattern!r} must hold {{dyad_id}} exactly once")
    before, after = pattern.split("{dyad_id}")
    return re.compile(f"{re.escape(before)}(?P<dyad_id>.+?){re.escape(after)}")

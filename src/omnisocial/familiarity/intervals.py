"""Time intervals (seconds): lengths of unions, optionally clipped to a window."""

from __future__ import annotations

from collections.abc import Iterable


def union_seconds(
    intervals: Iterable[tuple[float, float]], lo: float | None = None, hi: float | None = None
) -> float:
    """Total length of the union of (start, end) intervals, overlaps counted once.

    With `lo`/`hi`, only the part inside [lo, hi] counts. Empty or reversed intervals add 0.
    """
    total = 0.0
    current_start = current_end = None
    pieces = []
    for start, end in intervals:
        start, end = float(start), float(end)
        if lo is not None:
            start = max(start, lo)
        if hi is not None:
            end = min(end, hi)
        if end > start:
            pieces.append((start, end))
    for start, end in sorted(pieces):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total

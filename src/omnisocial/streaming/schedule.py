"""The query times of one streamed item: t_k = start, start + step, ... up to end (inclusive)."""

from __future__ import annotations

import math
from dataclasses import dataclass

EPS = 1e-9
DIGITS = 6  # times are rounded to the microsecond: 0.1 + 0.2 is 0.3, so keys and labels stay stable


@dataclass(frozen=True)
class Schedule:
    """Query times from `start` to `end` every `step_s` seconds; `end` is included when it falls
    on the grid (within 1e-9 s of float noise), never passed."""

    start: float
    end: float
    step_s: float = 1.0

    def __post_init__(self):
        for name in ("start", "end", "step_s"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"schedule {name} must be a finite number, got {value!r}")
        if self.step_s <= 0:
            raise ValueError(f"schedule step_s must be > 0, got {self.step_s}")
        if self.end < self.start - EPS:
            raise ValueError(f"schedule end {self.end} is before its start {self.start}")

    def __len__(self) -> int:
        return int(math.floor((self.end - self.start) / self.step_s + EPS)) + 1

    def times(self) -> list[float]:
        """t_0 = start, ..., the last grid time <= end; computed as start + k * step (no drift)."""
        return [round(self.start + k * self.step_s, DIGITS) for k in range(len(self))]


def format_time(t: float) -> str:
    """A query time as prompts and request ids show it: to the microsecond, no trailing zeros."""
    return f"{float(t):.{DIGITS}f}".rstrip("0").rstrip(".")

"""One frozen settings object per config block, its fields named as the schema's keys.

The workflow's schema (`workflow/schemas/config.schema.yaml`) is the one place for defaults:
`of(block)` builds a block's settings from a config block (a rule's params, already validated
and filled by the workflow) or from part of one (a test, a benchmark, the recorded calls), whose
missing keys take the schema's defaults. A key the schema does not know stops it, naming the key.
A rule builds its settings once where its params enter (its script) and passes them down whole,
so a value keeps its schema name from the config to the function that uses it, and a documented
`null` reaches that function as None (what it means is said at the field's use and in the schema).

`tests/test_settings.py` holds every class's fields equal to its block's keys in the schema.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from omnisocial.config import DEFAULT_SCHEMA, safe_load_yaml


@functools.cache
def _schema() -> dict:
    return safe_load_yaml(DEFAULT_SCHEMA.read_text())


def block_schema(path: tuple[str, ...]) -> dict:
    """The schema of the config block at `path` (("signals",), ("analysis", "glmm"), ...)."""
    node = _schema()
    for key in path:
        node = node["properties"][key]
    return node


def schema_defaults(path: tuple[str, ...]) -> dict:
    """Each key of the block at `path` with its schema default (every key of these blocks has one)."""
    return {key: spec["default"] for key, spec in block_schema(path)["properties"].items()}


def _coerced(value, annotation):
    """A YAML number as the field's type (6 -> 6.0 for a float field), a list as a tuple."""
    if value is None:
        return None
    kinds = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    if float in kinds and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, list):
        return tuple(value)
    return value


class _Block:
    """What every settings class shares: `PATH` (the block's keys in the config) and `of`."""

    PATH: ClassVar[tuple[str, ...]]

    @classmethod
    def name(cls) -> str:
        return ".".join(cls.PATH)

    @classmethod
    def of(cls, block: Mapping | None = None, **changes):
        """The settings of a config block (or part of one; `changes` win): the schema's defaults
        for what it leaves out; a key the schema does not know raises ValueError naming it."""
        given = {**dict(block or {}), **changes}
        fields = {field.name: field for field in dataclasses.fields(cls)}
        unknown = sorted(set(given) - set(fields))
        if unknown:
            names = ", ".join(f"{cls.name()}.{key}" for key in unknown)
            raise ValueError(f"unknown config key(s) {names} (allowed: {', '.join(fields)})")
        hints = typing.get_type_hints(cls)
        values = {**schema_defaults(cls.PATH), **given}
        return cls(**{name: _coerced(values[name], hints[name]) for name in fields})

    def replace(self, **changes):
        """A copy with `changes` (schema names)."""
        return dataclasses.replace(
            self, **{k: _coerced(v, typing.get_type_hints(type(self))[k]) for k, v in changes.items()}
        )


@dataclass(frozen=True)
class Vad(_Block):
    """Config `vad:`: silero's settings (omnisocial.media.vad)."""

    PATH: ClassVar[tuple[str, ...]] = ("vad",)
    threshold: float
    min_speech_s: float
    min_silence_s: float
    restart_s: float | None  # None: one run over the track


@dataclass(frozen=True)
class Signals(_Block):
    """Config `signals:`: how the signals behind F3-F5 are measured (omnisocial.familiarity.signals,
    omnisocial.media.crosstalk). The schema says what each key and its null mean."""

    PATH: ClassVar[tuple[str, ...]] = ("signals",)
    hop_s: float
    track_lag_search_s: float
    track_lag_min_peak: float
    track_lag_min_prominence: float
    av_lag_search_s: float
    av_min_correlation: float
    motion_fps: float
    crosstalk_margin_db: float | None  # None: no attribution and no bleed cancelling
    speech_edge_below_level_db: float | None  # None: silero's edges
    speech_edge_above_floor_db: float
    speech_edge_hangover_s: float | None  # None: every unvoiced end is trimmed
    noise_floor_window_s: float | None  # None: one floor for the whole track
    cancel_bleed: bool
    own_speech_excess_db: float | None  # None: all speech the other mic leads is dropped
    bleed_path_s: float | None  # None: one frame only
    bleed_tail_s: float | None  # None: the bleed of the moment only
    bleed_coherence: float
    backchannel_max_s: float
    backchannel_pause_s: float

    @property
    def attributes(self) -> bool:
        """Whether silero speech is attributed by level (and bleed can be cancelled)."""
        return self.crosstalk_margin_db is not None

    @property
    def cancels_bleed(self) -> bool:
        """Whether bleed is cancelled: `cancel_bleed`, and a margin to tell where the other leads."""
        return bool(self.cancel_bleed) and self.attributes


@dataclass(frozen=True)
class Filters(_Block):
    """Config `filters:`: the thresholds of F1-F5 and the prompt audit (omnisocial.familiarity.filters)."""

    PATH: ClassVar[tuple[str, ...]] = ("filters",)
    turn_gap_s: float | None  # None: a turn lasts until the other person speaks
    min_turns: int
    min_speech_per_speaker_s: float
    min_total_speech_s: float
    duplicate_similarity: float
    max_track_lag_s: float
    fail_unmeasurable_track_lag: bool
    max_shared_speech_share: float
    max_av_lag_s: float
    max_duration_mismatch_s: float
    measure_av_sync: bool
    either_or_marker: str
    placeholder_prompts: tuple[str, ...]
    audit_keywords: tuple[str, ...]
    audit_min_hits: int


@dataclass(frozen=True)
class Glmm(_Block):
    """Config `analysis.glmm:`: the NUTS settings of the GLMM (omnisocial.stats.glmm.fit_glmm)."""

    PATH: ClassVar[tuple[str, ...]] = ("analysis", "glmm")
    draws: int | None  # None: sized, and extended until the convergence rule holds
    tune: int | None  # None: the package's tuning (glmm._sample.AUTO_TUNE)
    chains: int
    target_accept: float | None  # None: the package's tuned start (glmm.default_target_accept)
    max_divergences: int


@dataclass(frozen=True)
class Rasch(_Block):
    """Config `analysis.rasch:`: the Rasch fits and the attenuation correction (omnisocial.stats.rasch)."""

    PATH: ClassVar[tuple[str, ...]] = ("analysis", "rasch")
    draws: int
    tune: int
    chains: int
    until_converged: bool
    max_draws: int
    target_accept: float
    max_divergences: int
    correction_bootstrap: int
    min_reliability: float


BLOCKS = (Vad, Signals, Filters, Glmm, Rasch)

"""Data contracts: one per table, written once, validated at every boundary.

A contract names each column, its type and (optionally) its allowed values. `validate`
coerces a frame read from CSV to those types and raises `TableError` naming the file,
row and column of the first problem, so a bad row never travels further silently.

The contracts here are those more than one benchmark or layer reads (DESIGN, PREDICTIONS,
TRIALS, METRICS: `stats` scores them); each benchmark keeps its own in its `contracts.py`
(the familiarity corpus, signals, filter and stimuli tables in
`omnisocial.familiarity.contracts`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from omnisocial.io import read_csv_strings, write_csv

KINDS = ("str", "int", "float", "bool")
# The `source` value of every row a simulated rater panel produced (a demo's ratings); figure
# subtitles (figures.style.simulated_note) name it, so it lives in this shared layer.
SIMULATED_LABEL = "simulated rater panel (demo)"
_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


class TableError(ValueError):
    """A table broke its contract; the message names file, row and column."""


@dataclass(frozen=True)
class Column:
    name: str
    kind: str = "str"
    allowed: tuple[str, ...] | None = None
    nullable: bool = False
    doc: str = ""
    blank: bool = True  # a str column may hold "" (False: every row needs a value)
    bounds: tuple[float, float] | None = None  # inclusive range of a number column

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"column {self.name}: unknown kind {self.kind!r}")


@dataclass(frozen=True)
class Contract:
    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...] = field(default=())

    @property
    def names(self) -> list[str]:
        return [column.name for column in self.columns]

    def validate(self, frame: pd.DataFrame, source: str = "<frame>") -> pd.DataFrame:
        """Return `frame` with the contract's columns, in order, coerced to their kinds."""
        missing = [name for name in self.names if name not in frame.columns]
        if missing:
            raise TableError(f"{source}: table {self.name} lacks column(s) {', '.join(missing)}")
        out = pd.DataFrame(index=frame.index)
        for column in self.columns:
            out[column.name] = _coerce(frame[column.name], column, source, self.name)
        if self.key:
            repeats = out.duplicated(list(self.key), keep="first").to_numpy()
            if repeats.any():
                row = int(np.flatnonzero(repeats)[0])  # the repeat, not the row it repeats
                key = out.iloc[row][list(self.key)]
                first = int(np.flatnonzero((out[list(self.key)] == key).all(axis=1).to_numpy())[0])
                values = ", ".join(f"{k}={key[k]}" for k in self.key)
                raise TableError(
                    f"{source}: table {self.name} row {row + 2}: duplicate key ({values}) of row {first + 2}"
                )
        return out.reset_index(drop=True)

    def read(self, path: str | os.PathLike) -> pd.DataFrame:
        return self.validate(read_csv_strings(path), source=str(path))

    def write(self, path: str | os.PathLike, frame: pd.DataFrame) -> pd.DataFrame:
        valid = self.validate(frame, source=str(path))
        write_csv(path, valid)
        return valid

    def empty(self) -> pd.DataFrame:
        return self.validate(pd.DataFrame({name: pd.Series(dtype=object) for name in self.names}))


def _fail(source: str, table: str, position: int, column: str, message: str) -> TableError:
    # +2: one for the header line, one because people count rows from 1.
    return TableError(f"{source}: table {table} row {position + 2} column {column}: {message}")


def _is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA or value == ""


def _coerce(series: pd.Series, column: Column, source: str, table: str) -> pd.Series:
    values = []
    for position, value in enumerate(series.tolist()):
        if _is_missing(value):
            if (not column.nullable and column.kind != "str") or (column.kind == "str" and not column.blank):
                raise _fail(source, table, position, column.name, "empty value")
            values.append(None if column.kind != "str" else "")
            continue
        try:
            values.append(_convert(value, column.kind))
        except (TypeError, ValueError):
            raise _fail(source, table, position, column.name, f"{value!r} is not {column.kind}") from None
        if column.bounds is not None and not column.bounds[0] <= values[-1] <= column.bounds[1]:
            low, high = column.bounds
            raise _fail(source, table, position, column.name, f"{value!r} is outside [{low:g}, {high:g}]")
        if column.allowed is not None and values[-1] not in column.allowed:
            raise _fail(
                source, table, position, column.name, f"{value!r} not in {{{', '.join(column.allowed)}}}"
            )
    if column.kind == "str":
        return pd.Series(values, index=series.index, dtype=object)
    if column.kind == "bool":
        return pd.Series(values, index=series.index, dtype="boolean" if column.nullable else bool)
    if column.kind == "int":
        return pd.Series(values, index=series.index, dtype="Int64" if column.nullable else "int64")
    return pd.Series([np.nan if v is None else v for v in values], index=series.index, dtype="float64")


def is_true(value) -> bool:
    """Truth of a flag that may arrive as bool, number, string ('true'/'1'/'yes') or missing."""
    if isinstance(value, str):
        return value.strip().lower() in _TRUE
    if _is_missing(value):
        return False
    return bool(value)


def _convert(value, kind: str):
    if kind == "str":
        return str(value)
    if kind == "int":
        number = float(value)
        if not number.is_integer():
            raise ValueError
        return int(number)
    if kind == "float":
        return float(value)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError


RELATIONSHIPS = ("familiar", "stranger")
NON_ANSWER = ""  # the label of a prediction or trial that gave no answer
# how a fit's flag opens when the fit cannot exist (one model: no Rasch model to fit), not failed
NOT_APPLICABLE = "not applicable"
POSITIONS = ("early", "late")
SPEAKERS = ("a", "b")


DESIGN = Contract(
    "design",
    (
        Column("dyad_id"),
        Column("interaction_id"),
        Column("cell", doc="site|relationship|gender_mix"),
        Column("site"),
        Column("relationship", allowed=RELATIONSHIPS),
        Column("gender_mix"),
        Column("position", allowed=("", *POSITIONS), doc="empty when a released design does not say"),
        Column("clip_start", "float", nullable=True, doc="empty when a released design does not say"),
        Column("clip_end", "float", nullable=True),
        Column("n_turns", "int", nullable=True),
        Column("participant_a"),
        Column("participant_b"),
    ),
    key=("dyad_id",),
)


# --- Responses from models and people (familiarity study) -------------------------------

PREDICTIONS = Contract(
    "predictions",
    (
        Column("model", blank=False, doc="model name, or a rater id / 'human_majority' for people"),
        Column("modality", allowed=("text", "audio", "video")),
        Column("item_id", blank=False, doc="the dyad id"),
        Column("truth", allowed=RELATIONSHIPS),
        Column("label", allowed=("", *RELATIONSHIPS), doc="empty = non-answer"),
        Column(
            "confidence",
            "float",
            nullable=True,
            bounds=(0.0, 1.0),
            doc="0..1, the model's confidence in its label",
        ),
    ),
    key=("model", "modality", "item_id"),
)

TRIALS = Contract(
    "trials",
    (
        Column("rater_id"),
        Column("dyad_id"),
        Column("modality", allowed=("text", "audio", "video")),
        Column("response", allowed=RELATIONSHIPS),
        Column("correct", "bool"),
    ),
    key=("rater_id", "dyad_id", "modality"),
)

METRICS = Contract(
    "metrics",
    (
        Column("model"),
        Column("modality"),
        Column("n_items", "int"),
        Column("n_answered", "int"),
        Column("coverage", "float"),
        Column("accuracy", "float", nullable=True, doc="on answered items"),
        Column("ci_low", "float", nullable=True, doc="95% Wilson"),
        Column("ci_high", "float", nullable=True),
        Column("p_value", "float", nullable=True, doc="exact two-sided binomial vs 0.5"),
        Column("familiar_recall", "float", nullable=True),
        Column("stranger_recall", "float", nullable=True),
        Column("d_prime", "float", nullable=True, doc="log-linear corrected"),
        Column("criterion", "float", nullable=True, doc="c > 0: bias toward 'stranger'"),
    ),
    key=("model", "modality"),
)

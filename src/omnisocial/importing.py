"""Shared pieces of the released-format importers (SocialOmni and Omni-DuplexEval).

Both benchmarks' readers (`omnisocial.socialomni.importers`,
`omnisocial.duplexeval.importers`) are tolerant of the variations the releases show and
strict about anything else; this module holds what they share:

- `ImportErrorWithItem`, a `ValueError` whose message names the file, the item id (or
  `#<position>` when the item has no readable id) and the field; `IMPORT_ERRORS`, the table
  of collected errors (`collect_errors=True` skips bad items and returns them there);
- `parse_timestamp`, the clock-time reader;
- the item readers: `ItemErrors` (raise at once, or collect), `read_json`, `rows_of` (the
  item list, bare or wrapped), `is_missing`, `item_id_of`, `text_field`, `check_unique` and
  `finish_items` (validate the rows, with the errors table in collect mode);
- `resolve` (a media path against a data set's root), `concat_frames` (concatenate and
  validate, empty -> the contract's empty table) and `nan_to_none`.

Timestamps (`parse_timestamp(value, mode)`, `read_timestamp` also says how it read them):
    "17" / "17.5"          -> seconds
    "1:05" / "1:05.5"      -> M:SS, 65 / 65.5 s (the seconds field must be < 60)
    three fields, mode "clock" (the default here, and Omni-DuplexEval's reading):
    "0:01:05" / "00:01:05" -> H:MM:SS, 65 s (minutes and seconds fields < 60)
    three fields, mode "excel" (SocialOmni's: its data builder wrote the annotators'
    "M:SS" into Excel time cells, which stored them as H:MM:00):
    "00:17:00"             -> 0 min 17 s, as the released level-2 pipeline reads it
    "01:02:50"             -> 1 min 2.50 s: a last field other than 00 is hundredths, as the
                              released hosted evaluator reads it (the level-2 pipeline would
                              drop it); the demo writes its sub-second cuts that way.
Every excel reading of a three-field stamp comes back from `read_timestamp` as a note, so
an importer can list it. Where a release's stamps mean something else, the times come out
beyond the clips' length, which the readers' `max_time_s` check turns into an error.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from omnisocial.tables import Column, Contract

IMPORT_ERRORS = Contract(
    "import_errors",
    (
        Column("source", doc="the file"),
        Column("item_id", doc="empty when the item has no readable id"),
        Column("field"),
        Column("message"),
    ),
)


class ImportErrorWithItem(ValueError):
    """A released item is malformed; the message names the file, the item and the field."""

    def __init__(self, source, item_id, field: str, message: str):
        self.source = str(source)
        self.item_id = "" if item_id is None else str(item_id)
        self.field = field
        self.message = message
        super().__init__(f"{self.source}: item {self.item_id or '?'}: field {field}: {message}")

    def row(self) -> dict:
        return {"source": self.source, "item_id": self.item_id, "field": self.field, "message": self.message}


_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")


_CLOCK = re.compile(r"^(\d+):(\d{1,2}(?:\.\d+)?)$")


_CLOCK3 = re.compile(r"^(\d+):(\d{1,2}):(\d{1,2}(?:\.\d+)?)$")


TIMESTAMP_MODES = ("excel", "clock")


def read_timestamp(value, mode: str = "clock") -> tuple[float, str]:
    """(seconds, note) of a timestamp: a number, "SS[.s]", "M:SS[.s]" or three fields (module doc).

    `note` is "" unless an excel-mode three-field stamp was read (then it says how). A
    trailing "s" is allowed ("12.5s"), full-width colons are read as colons. Raises
    ValueError for anything else, negative or non-finite values, and minute or second
    fields of 60 or more.
    """
    if mode not in TIMESTAMP_MODES:
        raise ValueError(f"unknown timestamp mode {mode!r}; expected one of {', '.join(TIMESTAMP_MODES)}")
    if isinstance(value, bool) or value is None:
        raise ValueError(f"not a timestamp: {value!r}")
    if isinstance(value, (int, float)):
        number = float(value)
        if not math.isfinite(number) or number < 0:
            raise ValueError(f"timestamp must be a finite number >= 0, got {value!r}")
        return number, ""
    if not isinstance(value, str):
        raise ValueError(f"not a timestamp: {value!r}")
    text = value.strip().replace("：", ":")
    if text.lower().endswith("s") and _NUMBER.match(text[:-1].strip()):
        text = text[:-1].strip()
    if _NUMBER.match(text):
        return float(text), ""
    match = _CLOCK.match(text)
    if match:
        minutes, seconds = int(match.group(1)), float(match.group(2))
        if seconds >= 60:
            raise ValueError(f"seconds field >= 60 in {value!r}")
        return minutes * 60 + seconds, ""
    match = _CLOCK3.match(text)
    if match and mode == "excel":
        minutes, seconds, last = int(match.group(1)), int(match.group(2)), match.group(3)
        if seconds >= 60:
            raise ValueError(f"seconds field (the middle one, excel reading) >= 60 in {value!r}")
        if not re.fullmatch(r"\d{1,2}", last):
            raise ValueError(f"last field of an excel time must be 00-99 (hundredths), got {value!r}")
        total = minutes * 60 + seconds + int(last) / 100
        how = "H:MM:00 read as M:SS" if int(last) == 0 else "H:MM:CC read as M:SS.CC"
        return total, f"excel time {text!r} -> {total:g} s ({how})"
    if match:
        hours, minutes, seconds = int(match.group(1)), int(match.group(2)), float(match.group(3))
        if minutes >= 60 or seconds >= 60:
            raise ValueError(f"minutes or seconds field >= 60 in {value!r}")
        return hours * 3600 + minutes * 60 + seconds, ""
    raise ValueError(f"not a timestamp (seconds, M:SS or three fields): {value!r}")


def format_excel_time(seconds: float) -> str:
    """A time as the SocialOmni data builder's Excel cells hold it: 17 s -> "00:17:00", 62.5 s -> "01:02:50".

    Minutes, seconds, hundredths; `read_timestamp(..., "excel")` reads it back.
    """
    hundredths = round(float(seconds) * 100)
    if hundredths < 0:
        raise ValueError(f"time must be >= 0, got {seconds!r}")
    minutes, rest = divmod(hundredths, 6000)
    return f"{minutes:02d}:{rest // 100:02d}:{rest % 100:02d}"


def parse_timestamp(value, mode: str = "clock") -> float:
    """Seconds from a timestamp (`read_timestamp` without the note)."""
    return read_timestamp(value, mode)[0]


class ItemErrors:
    """Raise at once (strict) or keep the errors for a table (collect mode)."""

    def __init__(self, collect: bool):
        self.collect = collect
        self.rows: list[dict] = []

    def add(self, error: ImportErrorWithItem) -> None:
        if not self.collect:
            raise error
        self.rows.append(error.row())

    def table(self) -> pd.DataFrame:
        if not self.rows:
            return IMPORT_ERRORS.empty()
        return IMPORT_ERRORS.validate(pd.DataFrame(self.rows))


def read_json(path) -> object:
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise ImportErrorWithItem(file, "", "(file)", f"cannot read: {error.strerror or error}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ImportErrorWithItem(
            file, "", "(file)", f"not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})"
        ) from None


def rows_of(data, source, wrapper_keys=("data",)) -> list:
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in wrapper_keys:
            if isinstance(data.get(key), list):
                return data[key]
    raise ImportErrorWithItem(source, "", "(file)", "expected a list of items or {'data': [...]}")


def is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def item_id_of(raw, key: str, source, position: int) -> str:
    if not isinstance(raw, dict):
        raise ImportErrorWithItem(
            source, f"#{position}", "(item)", f"expected an object, got {type(raw).__name__}"
        )
    value = raw.get(key)
    if (
        is_missing(value)
        or isinstance(value, bool)
        or not isinstance(value, (str, int))
        or not str(value).strip()
    ):
        raise ImportErrorWithItem(source, f"#{position}", key, "missing or empty id")
    return str(value).strip()


def text_field(
    raw: dict, key: str, source, item_id: str, required: bool = True, label: str | None = None
) -> str:
    label = label or key
    value = raw.get(key)
    if is_missing(value) or (isinstance(value, str) and not value.strip()):
        if required:
            raise ImportErrorWithItem(source, item_id, label, "missing or empty")
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ImportErrorWithItem(source, item_id, label, f"expected text, got {type(value).__name__}")
    return str(value).strip()


def finish_items(contract, rows: list[dict], source, errors: ItemErrors, collect: bool):
    frame = contract.validate(pd.DataFrame(rows, columns=contract.names), source=str(source))
    return (frame, errors.table()) if collect else frame


def check_unique(key, seen: set, source, item_id: str, field: str) -> None:
    if key in seen:
        raise ImportErrorWithItem(source, item_id, field, "duplicate id")
    seen.add(key)


def resolve(root: str | os.PathLike, path: str) -> Path:
    """A media path from an item: absolute as given, else relative to the data set's root."""
    candidate = Path(str(path))
    return candidate if candidate.is_absolute() else Path(root) / candidate


def concat_frames(frames: Sequence[pd.DataFrame], contract: Contract) -> pd.DataFrame:
    frames = [frame for frame in frames if len(frame)]
    return contract.validate(pd.concat(frames, ignore_index=True)) if frames else contract.empty()


def nan_to_none(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value

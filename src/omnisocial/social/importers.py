"""Importers for the released SocialOmni and Omni-DuplexEval formats (data-formats.md).

Every reader is tolerant of the variations the releases show (a list or a `{"data": [...]}`
wrapper, option prefixes "A." / "(A)" / "A)", full-width colons in times, numbers given
as strings, several names for a response sentence's text and time) and strict about
anything else: a malformed item raises `ImportErrorWithItem`, a `ValueError` whose message
names the file, the item id (or `#<position>` when the item has no readable id) and the
field. With `collect_errors=True` a reader skips bad items instead and returns
`(items, errors)`, the errors as an `IMPORT_ERRORS` table, so one bad item does not stop
the import. Errors of the file as a whole (unreadable, not JSON, wrong top-level shape)
always raise.

Timestamps (`parse_timestamp`) are read as real clock times:
    "17" / "17.5"          -> seconds
    "1:05" / "1:05.5"      -> M:SS, 65 / 65.5 s (the seconds field must be < 60)
    "0:01:05" / "00:01:05" -> H:MM:SS, 65 s (minutes and seconds fields < 60)
The released SocialOmni code reads three-field times differently, and not even
consistently: the level-2 pipeline takes the middle field as seconds ("00:17:00" -> 17 s),
and the hosted evaluator reads "01:02:50" as 1 min 2.5 s (the last field as hundredths).
We do not copy either: "00:17:00" is 17 minutes here. Where a release's three-field stamps
really mean something else, the times come out far beyond the 10-30 s clips, which the
readers' `max_time_s` check turns into an error naming the item.

SocialOmni level 1 keeps the query time in the question text; `extract_query_interval`
finds it (patterns of the released questions: "from 0:04 to 0:08", "between second 3 and
7", "at the 2th and 6th second", "at 0:05", "at 5 seconds"), and exactly one distinct time
or interval must be found. `query_time` is the interval's end (the point where the
released evaluator cuts the clip), `query_start` its start (equal for a point).

Omni-DuplexEval response sentences (one file `{root}/{split}/{id}.json` per item):
- the file is a list, or an object with a `sentences` or `chunks` list (both present and
  different: an error);
- a sentence's text is the first present of `sentence`, `text`, `content`; a blank text
  is skipped, as both released scorers do;
- with `start` (and optionally `end`) the sentence spans [start, end]; `end` missing:
  `current_time`/`time` if present, else start; without `start`, `current_time` or `time`
  is a point (start = end = that time, `is_point`); a sentence with no time at all is an
  error (the released scorers silently put it at 0 s);
- `end < start` is set to `end = start`, as the released scorer does;
- rows keep the file's order (`sentence_index`), scorers sort by time themselves.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from omnisocial.io import read_csv_strings
from omnisocial.social.contracts import (
    IMPORT_ERRORS,
    LETTERS,
    STREAM_ITEMS,
    STREAM_RESPONSES,
    STREAM_SPLITS,
    WHEN_ITEMS,
    WHO_ITEMS,
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


# --- times ---------------------------------------------------------------------------

_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")
_CLOCK = re.compile(r"^(\d+):(\d{1,2}(?:\.\d+)?)$")
_CLOCK3 = re.compile(r"^(\d+):(\d{1,2}):(\d{1,2}(?:\.\d+)?)$")


def parse_timestamp(value) -> float:
    """Seconds from a timestamp: a number, "SS[.s]", "M:SS[.s]" or "H:MM:SS[.s]" (real clock time).

    A trailing "s" is allowed ("12.5s"), full-width colons are read as colons. Raises
    ValueError for anything else, negative or non-finite values, and minute or second
    fields of 60 or more.
    """
    if isinstance(value, bool) or value is None:
        raise ValueError(f"not a timestamp: {value!r}")
    if isinstance(value, (int, float)):
        number = float(value)
        if not math.isfinite(number) or number < 0:
            raise ValueError(f"timestamp must be a finite number >= 0, got {value!r}")
        return number
    if not isinstance(value, str):
        raise ValueError(f"not a timestamp: {value!r}")
    text = value.strip().replace("：", ":")
    if text.lower().endswith("s") and _NUMBER.match(text[:-1].strip()):
        text = text[:-1].strip()
    if _NUMBER.match(text):
        return float(text)
    match = _CLOCK.match(text)
    if match:
        minutes, seconds = int(match.group(1)), float(match.group(2))
        if seconds >= 60:
            raise ValueError(f"seconds field >= 60 in {value!r}")
        return minutes * 60 + seconds
    match = _CLOCK3.match(text)
    if match:
        hours, minutes, seconds = int(match.group(1)), int(match.group(2)), float(match.group(3))
        if minutes >= 60 or seconds >= 60:
            raise ValueError(f"minutes or seconds field >= 60 in {value!r}")
        return hours * 3600 + minutes * 60 + seconds
    raise ValueError(f"not a timestamp (seconds, M:SS or H:MM:SS): {value!r}")


_NUM = r"(\d+(?:\.\d+)?)"
_CLK = r"(\d+:\d{1,2}(?::\d{1,2})?(?:\.\d+)?)"
_ORD = r"(?:st|nd|rd|th)?"
_UNIT = r"\s*(?:seconds?|secs?|s)\b"
_QUERY_PATTERNS = [
    re.compile(
        rf"\b(?:from|between)\s+(?:the\s+)?{_CLK}\s*(?:to|and|until|till|-|–|~)\s*(?:the\s+)?{_CLK}", re.I
    ),
    re.compile(
        rf"\b(?:from|between|at)\s+(?:the\s+)?(?:second\s+)?{_NUM}{_ORD}(?:{_UNIT})?\s+(?:to|and)\s+"
        rf"(?:the\s+)?(?:second\s+)?{_NUM}{_ORD}{_UNIT}",
        re.I,
    ),
    re.compile(rf"\bbetween\s+seconds?\s+{_NUM}\s+and\s+{_NUM}\b", re.I),
    re.compile(rf"\bat\s+(?:the\s+)?{_CLK}", re.I),
    re.compile(rf"\bat\s+(?:the\s+)?{_NUM}{_ORD}{_UNIT}", re.I),
    re.compile(rf"\bat\s+second\s+{_NUM}\b", re.I),
]


def extract_query_interval(question: str) -> tuple[float, float]:
    """(start, end) in seconds of the time asked about in a level-1 question; a point gives start == end.

    Overlapping matches keep the longest; the question must hold exactly one distinct
    time or interval, with end > 0 and start <= end (ValueError otherwise).
    """
    if not isinstance(question, str):
        raise ValueError("question is not text")
    text = question.replace("：", ":")
    matches = []
    for pattern in _QUERY_PATTERNS:
        for match in pattern.finditer(text):
            matches.append((match.start(), match.end(), match.groups()))
    matches.sort(key=lambda m: (-(m[1] - m[0]), m[0]))
    kept: list[tuple[int, int, tuple]] = []
    for start, end, groups in matches:
        if all(end <= s or start >= e for s, e, _ in kept):
            kept.append((start, end, groups))
    values = set()
    for _, _, groups in kept:
        times = [parse_timestamp(g) for g in groups]
        values.add((times[0], times[-1]))
    if not values:
        raise ValueError("no time or interval found in the question")
    if len(values) > 1:
        raise ValueError(f"ambiguous: several times in the question {sorted(values)}")
    start, end = values.pop()
    if end <= 0:
        raise ValueError("the asked time must be > 0 s")
    if start > end:
        raise ValueError(f"interval starts after it ends ({start} > {end})")
    return start, end


def format_clock(seconds: float) -> str:
    """M:SS.s for question texts (round-trips through `extract_query_interval`)."""
    total = round(float(seconds), 1)
    minutes = int(total // 60)
    rest = round(total - 60 * minutes, 1)
    return f"{minutes}:{rest:04.1f}"


# --- options -------------------------------------------------------------------------

_OPTION_PREFIX = re.compile(r"^\s*[\(\[]?\s*([A-Da-d])\s*[\)\]\.:：、]\s*(.*)$", re.S)
_SAID = re.compile(r"^(.*?)\s+said\s*[:,]?\s*(.*)$", re.S | re.I)


def split_said(option: str) -> tuple[str, str] | None:
    """("<speaker>", "<utterance>") of an option "<speaker> said <utterance>"; None without " said "."""
    match = _SAID.match(option.strip()) if isinstance(option, str) else None
    if not match or not match.group(1).strip():
        return None
    return match.group(1).strip(), match.group(2).strip()


def _parse_options(raw) -> dict[str, str]:
    """Map A-D to option texts without their prefixes; ValueError when malformed."""
    if isinstance(raw, dict):
        upper = {str(k).strip().upper(): v for k, v in raw.items()}
        if set(upper) != set(LETTERS):
            raise ValueError(f"option keys must be A-D, got {sorted(upper)}")
        texts = {}
        for letter in LETTERS:
            value = upper[letter]
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"option {letter} is empty or not text")
            match = _OPTION_PREFIX.match(value)
            texts[letter] = (
                match.group(2).strip() if match and match.group(1).upper() == letter else value.strip()
            )
        return texts
    if not isinstance(raw, list) or len(raw) != 4:
        raise ValueError("expected a list of 4 options")
    if not all(isinstance(v, str) and v.strip() for v in raw):
        raise ValueError("every option must be non-empty text")
    matches = [_OPTION_PREFIX.match(v) for v in raw]
    if all(m is None for m in matches):
        return {letter: value.strip() for letter, value in zip(LETTERS, raw, strict=True)}
    if any(m is None for m in matches):
        raise ValueError("some options have a letter prefix and some do not")
    letters = [m.group(1).upper() for m in matches]
    if sorted(letters) != list(LETTERS):
        raise ValueError(f"option letters must be A, B, C, D once each, got {letters}")
    return {m.group(1).upper(): m.group(2).strip() for m in matches}


def _letter(value, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a letter, got {value!r}")
    match = re.match(r"^\s*[\(\[]?\s*([A-Za-z])\s*(?:[\)\]\.:：]|$|\s)", value)
    letter = match.group(1).upper() if match else ""
    if letter not in allowed:
        raise ValueError(f"expected one of {', '.join(allowed)}, got {value!r}")
    return letter


# --- shared plumbing -----------------------------------------------------------------


class _Errors:
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


def _read_json(path) -> object:
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


def _rows_of(data, source, wrapper_keys=("data",)) -> list:
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in wrapper_keys:
            if isinstance(data.get(key), list):
                return data[key]
    raise ImportErrorWithItem(source, "", "(file)", "expected a list of items or {'data': [...]}")


def _is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def _item_id(raw, key: str, source, position: int) -> str:
    if not isinstance(raw, dict):
        raise ImportErrorWithItem(
            source, f"#{position}", "(item)", f"expected an object, got {type(raw).__name__}"
        )
    value = raw.get(key)
    if (
        _is_missing(value)
        or isinstance(value, bool)
        or not isinstance(value, (str, int))
        or not str(value).strip()
    ):
        raise ImportErrorWithItem(source, f"#{position}", key, "missing or empty id")
    return str(value).strip()


def _text(raw: dict, key: str, source, item_id: str, required: bool = True, label: str | None = None) -> str:
    label = label or key
    value = raw.get(key)
    if _is_missing(value) or (isinstance(value, str) and not value.strip()):
        if required:
            raise ImportErrorWithItem(source, item_id, label, "missing or empty")
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ImportErrorWithItem(source, item_id, label, f"expected text, got {type(value).__name__}")
    return str(value).strip()


def _check_time(value: float, max_time_s: float | None, source, item_id: str, field: str) -> None:
    if max_time_s is not None and value > max_time_s:
        raise ImportErrorWithItem(
            source, item_id, field, f"{value:g} s is beyond max_time_s={max_time_s:g} (clock-time reading)"
        )


def _metadata(raw: dict, source, item_id: str) -> dict:
    value = raw.get("metadata")
    if _is_missing(value):
        return {}
    if not isinstance(value, dict):
        raise ImportErrorWithItem(
            source, item_id, "metadata", f"expected an object, got {type(value).__name__}"
        )
    return value


def _first_text(mapping: dict, keys: Iterable[str]) -> str:
    for key in keys:
        value = mapping.get(key)
        if not _is_missing(value) and str(value).strip():
            return str(value).strip()
    return ""


def _finish(contract, rows: list[dict], source, errors: _Errors, collect: bool):
    frame = contract.validate(pd.DataFrame(rows, columns=contract.names), source=str(source))
    return (frame, errors.table()) if collect else frame


def _unique(key, seen: set, source, item_id: str, field: str) -> None:
    if key in seen:
        raise ImportErrorWithItem(source, item_id, field, "duplicate id")
    seen.add(key)


# --- SocialOmni level 1 (who) --------------------------------------------------------


def _who_item(raw, source, position: int, max_time_s: float | None) -> dict:
    item_id = _item_id(raw, "id", source, position)
    video_path = _text(raw, "video_path", source, item_id)
    question = _text(raw, "question", source, item_id)
    try:
        query_start, query_time = extract_query_interval(question)
    except ValueError as error:
        raise ImportErrorWithItem(source, item_id, "question", f"timestamp: {error}") from None
    _check_time(query_time, max_time_s, source, item_id, "question")
    try:
        options = _parse_options(raw.get("options"))
    except ValueError as error:
        raise ImportErrorWithItem(source, item_id, "options", str(error)) from None
    try:
        correct = _letter(raw.get("correct_answer"), LETTERS)
    except ValueError as error:
        raise ImportErrorWithItem(source, item_id, "correct_answer", str(error)) from None
    metadata = _metadata(raw, source, item_id)
    consistency = metadata.get("consistency")
    if not isinstance(consistency, str) or consistency.strip().lower() not in ("consistent", "inconsistent"):
        raise ImportErrorWithItem(
            source,
            item_id,
            "metadata.consistency",
            f"expected 'consistent' or 'inconsistent', got {consistency!r}",
        )
    said = split_said(options[correct])
    return {
        "item_id": item_id,
        "source": "socialomni",
        "video_path": video_path,
        "question": question,
        "query_start": query_start,
        "query_time": query_time,
        **{f"option_{letter.lower()}": options[letter] for letter in LETTERS},
        "correct_answer": correct,
        "speaker": said[0] if said else "",
        "consistency": consistency.strip().lower(),
        "domain": _first_text(metadata, ("domain", "category")),
        "subcategory": _first_text(metadata, ("subcategory", "sub_category", "subcategory_name")),
        "asr_content": _text(raw, "asr_content", source, item_id, required=False),
        **{f"kind_{letter.lower()}": "" for letter in LETTERS},
        "clip_start": None,
        "clip_end": None,
        "review_status": "released",
        "metadata_json": json.dumps(metadata, sort_keys=True, ensure_ascii=False),
    }


def load_who_items(path: str | os.PathLike, collect_errors: bool = False, max_time_s: float | None = None):
    """Read SocialOmni `data/level_1/dataset.json` into a WHO_ITEMS table.

    Required per item: id, video_path, question (holding one time or interval), options
    (4, prefixed "A. " ... or unprefixed in order A-D, or an object keyed A-D),
    correct_answer (A-D), metadata.consistency. `max_time_s`: asked times beyond it are
    errors (catches three-field stamps meant as something other than clock time).
    """
    errors = _Errors(collect_errors)
    rows, seen = [], set()
    for position, raw in enumerate(_rows_of(_read_json(path), path)):
        try:
            row = _who_item(raw, path, position, max_time_s)
            _unique(row["item_id"], seen, path, row["item_id"], "id")
        except ImportErrorWithItem as error:
            errors.add(error)
            continue
        rows.append(row)
    return _finish(WHO_ITEMS, rows, path, errors, collect_errors)


# --- SocialOmni level 2 (when / how) -------------------------------------------------

_TARGET = re.compile(r"^\s*what\s+should\s+(.+?)\s+say\s*\??\s*$", re.I)


def _when_item(raw, source, position: int, max_time_s: float | None) -> dict:
    item_id = _item_id(raw, "video_id", source, position)
    video_path = _text(raw, "video_file", source, item_id)
    q1 = raw.get("question_1")
    if not isinstance(q1, dict):
        raise ImportErrorWithItem(source, item_id, "question_1", "missing or not an object")
    question = _text(q1, "question", source, item_id, label="question_1.question")
    stamp = q1.get("timestamp")
    if _is_missing(stamp) or (isinstance(stamp, str) and not stamp.strip()):
        raise ImportErrorWithItem(source, item_id, "question_1.timestamp", "missing or empty")
    try:
        cut_time = parse_timestamp(stamp)
    except ValueError as error:
        raise ImportErrorWithItem(source, item_id, "question_1.timestamp", str(error)) from None
    _check_time(cut_time, max_time_s, source, item_id, "question_1.timestamp")
    # The options are always YES / NO in the release; a missing one takes that default.
    option_a = (
        _text(q1, "option_A", source, item_id, required=False, label="question_1.option_A") or "YES"
    ).upper()
    option_b = (
        _text(q1, "option_B", source, item_id, required=False, label="question_1.option_B") or "NO"
    ).upper()
    if {option_a, option_b} != {"YES", "NO"}:
        raise ImportErrorWithItem(
            source,
            item_id,
            "question_1.option_A",
            f"options must be YES and NO, got {option_a!r}, {option_b!r}",
        )
    answer = q1.get("correct_answer")
    text = answer.strip().upper() if isinstance(answer, str) else ""
    if text in ("YES", "NO"):
        correct = "A" if option_a == text else "B"
    else:
        try:
            correct = _letter(answer, ("A", "B"))
        except ValueError as error:
            raise ImportErrorWithItem(source, item_id, "question_1.correct_answer", str(error)) from None
    gold = option_a if correct == "A" else option_b
    q2 = raw.get("question_2")
    if _is_missing(q2):
        q2 = {}
    if not isinstance(q2, dict):
        raise ImportErrorWithItem(source, item_id, "question_2", "not an object")
    how_question = _text(q2, "question", source, item_id, required=False, label="question_2.question")
    target = _TARGET.match(how_question)
    metadata = _metadata(raw, source, item_id)
    return {
        "item_id": item_id,
        "video_path": video_path,
        "question": question,
        "timestamp_raw": str(stamp).strip(),
        "cut_time": cut_time,
        "option_a": option_a,
        "option_b": option_b,
        "correct_answer": correct,
        "gold": gold,
        "target": target.group(1).strip() if target else "",
        "how_question": how_question,
        "how_reference": _text(q2, "answer", source, item_id, required=False, label="question_2.answer"),
        "full_asr": _text(raw, "full_asr", source, item_id, required=False),
        "domain": _first_text(metadata, ("domain", "category")),
        "subcategory": _first_text(metadata, ("subcategory", "sub_category", "subcategory_name")),
        "metadata_json": json.dumps(metadata, sort_keys=True, ensure_ascii=False),
    }


def load_when_items(path: str | os.PathLike, collect_errors: bool = False, max_time_s: float | None = None):
    """Read SocialOmni `data/level_2/annotations.json` (a list or {'data': [...]}) into WHEN_ITEMS.

    Required: video_id, video_file, question_1.question, question_1.timestamp (clock time),
    question_1.correct_answer ("A"/"B" or "YES"/"NO"). option_A / option_B default to
    YES / NO; question_2 (the how part), full_asr and metadata are optional.
    """
    errors = _Errors(collect_errors)
    rows, seen = [], set()
    for position, raw in enumerate(_rows_of(_read_json(path), path)):
        try:
            row = _when_item(raw, path, position, max_time_s)
            _unique(row["item_id"], seen, path, row["item_id"], "video_id")
        except ImportErrorWithItem as error:
            errors.add(error)
            continue
        rows.append(row)
    return _finish(WHEN_ITEMS, rows, path, errors, collect_errors)


# --- Omni-DuplexEval items -----------------------------------------------------------


def _optional_time(raw: dict, key: str, source, item_id: str) -> float | None:
    value = raw.get(key)
    if _is_missing(value) or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return parse_timestamp(value)
    except ValueError as error:
        raise ImportErrorWithItem(source, item_id, key, str(error)) from None


def _media(raw: dict, key: str, source, item_id: str) -> str:
    value = raw.get(key)
    if _is_missing(value):
        return ""
    if isinstance(value, dict):  # a Hugging Face media column: {"path": ..., "bytes": ...}
        value = value.get("path") or ""
    if not isinstance(value, str):
        raise ImportErrorWithItem(source, item_id, key, f"expected a path, got {type(value).__name__}")
    return value.strip()


def _stream_item(raw, source, position: int, split: str | None) -> dict:
    item_id = _item_id(raw, "id", source, position)
    row_split = _text(raw, "split", source, item_id, required=False)
    if split and row_split and row_split != split:
        raise ImportErrorWithItem(source, item_id, "split", f"row says {row_split!r}, file is {split!r}")
    split = split or row_split
    if split not in STREAM_SPLITS:
        raise ImportErrorWithItem(source, item_id, "split", f"unknown split {split!r}")
    duration = _optional_time(raw, "video_duration", source, item_id)
    reminders = {key: _optional_time(raw, key, source, item_id) for key in ("reminder1", "reminder2")}
    for key, value in reminders.items():
        if value is not None and duration is not None and value > duration:
            raise ImportErrorWithItem(
                source, item_id, key, f"{value:g} s is after the video's end ({duration:g} s)"
            )
    return {
        "split": split,
        "item_id": item_id,
        "task": "RTD" if split.startswith("RTD_") else "PR",
        "question_text": _text(raw, "question_text", source, item_id),
        "answer1": _text(raw, "answer1", source, item_id, required=False),
        "answer2": _text(raw, "answer2", source, item_id, required=False),
        **reminders,
        "video_type": _text(raw, "video_type", source, item_id, required=False),
        "video_duration": duration,
        "video": _media(raw, "video", source, item_id),
        "question_audio": _media(raw, "question_audio", source, item_id),
    }


def load_stream_items(path: str | os.PathLike, split: str | None = None, collect_errors: bool = False):
    """Read Omni-DuplexEval items from JSON or CSV into STREAM_ITEMS.

    JSON: a list of items, `{"data": [...]}`, or an object keyed by split name. The split
    comes from `split`, else the key, else each row's `split` field. CSV: one row per item,
    every column read as text (empty cells are missing values). Required: id,
    question_text, a known split; reminder1/2 and video_duration are optional times (a
    reminder after video_duration is an error). Items without reminders are kept: the
    released reminder scorer then judges the whole response once.
    """
    source = Path(path)
    errors = _Errors(collect_errors)
    batches: list[tuple[str | None, list]] = []
    if source.suffix.lower() == ".csv":
        try:
            frame = read_csv_strings(source)
        except (OSError, ValueError) as error:
            raise ImportErrorWithItem(source, "", "(file)", f"cannot read CSV: {error}") from None
        batches.append((split, frame.to_dict("records")))
    else:
        data = _read_json(source)
        if isinstance(data, dict) and data and all(key in STREAM_SPLITS for key in data):
            for key, rows in data.items():
                if split and key != split:
                    continue
                if not isinstance(rows, list):
                    raise ImportErrorWithItem(source, "", key, "expected a list of items")
                batches.append((key, rows))
        else:
            batches.append((split, _rows_of(data, source)))
    rows, seen = [], set()
    for batch_split, batch in batches:
        for position, raw in enumerate(batch):
            try:
                row = _stream_item(raw, source, position, batch_split)
                _unique((row["split"], row["item_id"]), seen, source, row["item_id"], "id")
            except ImportErrorWithItem as error:
                errors.add(error)
                continue
            rows.append(row)
    return _finish(STREAM_ITEMS, rows, source, errors, collect_errors)


# --- Omni-DuplexEval responses -------------------------------------------------------

_TEXT_KEYS = ("sentence", "text", "content")


def _time_field(entry: dict, key: str, source, item_id: str, label: str) -> float | None:
    value = entry.get(key)
    if _is_missing(value):
        return None
    try:
        return parse_timestamp(value)
    except ValueError as error:
        raise ImportErrorWithItem(source, item_id, f"{label}.{key}", str(error)) from None


def _sentence(entry, source, item_id: str, label: str) -> dict | None:
    if not isinstance(entry, dict):
        raise ImportErrorWithItem(source, item_id, label, f"expected an object, got {type(entry).__name__}")
    text = None
    for key in _TEXT_KEYS:
        if not _is_missing(entry.get(key)):
            text = entry[key]
            break
    if text is None:
        raise ImportErrorWithItem(source, item_id, f"{label}.sentence", "no sentence, text or content")
    if not isinstance(text, str):
        raise ImportErrorWithItem(
            source, item_id, f"{label}.sentence", f"expected text, got {type(text).__name__}"
        )
    if not text.strip():
        return None
    start = _time_field(entry, "start", source, item_id, label)
    end = _time_field(entry, "end", source, item_id, label)
    point = _time_field(entry, "current_time", source, item_id, label)
    if point is None:
        point = _time_field(entry, "time", source, item_id, label)
    is_point = False
    if start is None:
        if point is None:
            raise ImportErrorWithItem(source, item_id, f"{label}.start", "no start, current_time or time")
        start, is_point = point, end is None
    if end is None:
        end = point if point is not None else start
    return {"text": text.strip(), "start": start, "end": max(end, start), "is_point": is_point}


def read_stream_response(path: str | os.PathLike, split: str, item_id: str, model: str = "") -> pd.DataFrame:
    """One response file -> STREAM_RESPONSES rows (one per non-blank sentence); raises ImportErrorWithItem."""
    source = Path(path)
    data = _read_json(source)
    if isinstance(data, list):
        entries, container = data, ""
    elif isinstance(data, dict):
        lists = {key: data[key] for key in ("sentences", "chunks") if isinstance(data.get(key), list)}
        if not lists:
            raise ImportErrorWithItem(
                source, item_id, "(file)", "expected a list or an object with sentences/chunks"
            )
        if len(lists) == 2 and lists["sentences"] != lists["chunks"]:
            raise ImportErrorWithItem(source, item_id, "sentences/chunks", "both lists present and different")
        container = next(iter(lists))
        entries = lists[container]
    else:
        raise ImportErrorWithItem(
            source, item_id, "(file)", "expected a list or an object with sentences/chunks"
        )
    rows = []
    for index, entry in enumerate(entries):
        sentence = _sentence(entry, source, item_id, f"{container}[{index}]")
        if sentence is not None:
            rows.append(
                {"model": model, "split": split, "item_id": item_id, "sentence_index": len(rows), **sentence}
            )
    return STREAM_RESPONSES.validate(pd.DataFrame(rows, columns=STREAM_RESPONSES.names), source=str(source))


def response_path(root: str | os.PathLike, split: str, item_id: str) -> Path:
    return Path(root) / split / f"{item_id}.json"


def load_stream_responses(
    root: str | os.PathLike, items: pd.DataFrame, model: str = "", collect_errors: bool = False
):
    """Read `{root}/{split}/{id}.json` for every (split, item_id) of `items`.

    A missing file is an error of that item (field `(file)`); in collect mode a file with
    any malformed sentence is left out whole and reported once.
    """
    errors = _Errors(collect_errors)
    frames = []
    for split, item_id in items[["split", "item_id"]].itertuples(index=False):
        path = response_path(root, split, item_id)
        try:
            if not path.is_file():
                raise ImportErrorWithItem(path, item_id, "(file)", "response file not found")
            frames.append(read_stream_response(path, split, item_id, model))
        except ImportErrorWithItem as error:
            errors.add(error)
    frames = [frame for frame in frames if len(frame)]
    responses = (
        STREAM_RESPONSES.validate(pd.concat(frames, ignore_index=True))
        if frames
        else STREAM_RESPONSES.empty()
    )
    return (responses, errors.table()) if collect_errors else responses

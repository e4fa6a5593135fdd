"""Importers for the released Omni-DuplexEval items and per-item streaming response files.

`import_duplexeval` reads the items (JSON or CSV: `items_file` under the root, keyed by
split) and the demo's timed events (`truth/events.csv`, when present);
`import_stream_responses` reads every model folder `{responses_root}/{model}/` with
`load_stream_responses` (`{root}/{split}/{id}.json` per item). Readers are strict, with
errors that name file, item and field (`omnisocial.importing.ImportErrorWithItem`), or an
error table when collecting.

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

import os
from pathlib import Path

import pandas as pd

from omnisocial.duplexeval.contracts import (
    STREAM_EVENTS,
    STREAM_ITEMS,
    STREAM_RESPONSES,
    STREAM_SPLITS,
)
from omnisocial.importing import (
    IMPORT_ERRORS,
    ImportErrorWithItem,
    _Errors,
    _finish,
    _is_missing,
    _item_id,
    _read_json,
    _rows_of,
    _text,
    _unique,
    concat_frames,
    parse_timestamp,
)
from omnisocial.io import read_csv_strings


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


def import_duplexeval(
    root: str | os.PathLike, items_file: str = "items.json", skip_bad: bool = False
) -> dict[str, pd.DataFrame]:
    """Omni-DuplexEval items (JSON or CSV: `items_file` under `root`) and the demo's timed events."""
    root = Path(root)
    path = root / items_file
    if skip_bad:
        items, errors = load_stream_items(path, collect_errors=True)
    else:
        items, errors = load_stream_items(path), IMPORT_ERRORS.empty()
    events_file = root / "truth" / "events.csv"
    events = STREAM_EVENTS.read(events_file) if events_file.is_file() else STREAM_EVENTS.empty()
    keys = set(zip(items["split"], items["item_id"], strict=True))
    inside = [key in keys for key in zip(events["split"], events["item_id"], strict=True)]
    events = events[pd.Series(inside, index=events.index, dtype=bool)]
    return {"stream_items": items, "stream_events": STREAM_EVENTS.validate(events), "errors": errors}


def import_stream_responses(
    responses_root: str | os.PathLike | None, items: pd.DataFrame, skip_bad: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every model folder `{responses_root}/{model}/` read for the items: (responses, import errors)."""
    if not responses_root:
        return STREAM_RESPONSES.empty(), IMPORT_ERRORS.empty()
    root = Path(responses_root)
    if not root.is_dir():
        raise FileNotFoundError(f"responses_root {root} is not a folder")
    frames, errors = [], []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if skip_bad:
            responses, bad = load_stream_responses(folder, items, model=folder.name, collect_errors=True)
            errors.append(bad)
        else:
            responses = load_stream_responses(folder, items, model=folder.name)
        frames.append(responses)
    return concat_frames(frames, STREAM_RESPONSES), concat_frames(errors, IMPORT_ERRORS)

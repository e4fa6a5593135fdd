"""Importers for the released Omni-DuplexEval items and per-item streaming response files.

`import_duplexeval` reads the items (JSON or CSV: `items_file` under the root, keyed by
split) and the demo's timed events (`truth/events.csv`, when present);
`import_stream_responses` reads every model folder `{responses_root}/{model}/` with
`load_stream_responses` (`{root}/{split}/{id}.json` per item). Readers are strict, with
errors that name file, item and field (`omnisocial.importing.ImportErrorWithItem`), or an
error table when collecting.

Items (`load_stream_items`) come from a JSON or CSV file, a parquet file or a Hugging Face
`datasets` folder (`save_to_disk`: `state.json` + `data-*.arrow`, read with pyarrow's IPC
stream reader; a `DatasetDict` folder holds one such folder per split). An item without a
`split` field takes the split given (config `social.duplexeval_split`), else the one its
file or folder is named after (`RTD_OCR.parquet`, `RTD_OCR-00000-of-00001.parquet`,
`.../PR_correction/`). A media field given as bytes (`{"bytes": ..., "path": ...}` whose path
is not a file under the root, or raw bytes) is written once to `media_dir/<sha256[:16]>.<ext>`.

Omni-DuplexEval response sentences (one file per item, found like the released batch
scripts: `{root}/{split}/{id}.json`, else `{root}/{id}.json`, else `{root}/{split lower}/{id}.json`):
- the file is a list, or an object with a `sentences` or `chunks` list (both present and
  different: an error);
- each released scorer reads its own keys, so the sentence is read by the scorer of its
  split. Description splits (RTD_*, `real_time_description.normalize_response_items`):
  text = the first key present of `sentence`, `text`, `content`; with a `start` key,
  start = start (null -> 0 s), end = `end` if that key is present (null -> start) else
  `current_time` or `time` or start; without `start`, start = `current_time` or `time`
  (a point sentence, `is_point`) or 0 s. Reminder splits (PR_*,
  `proactive_reminder.normalize_chunks`): text = first key present of `text`, `sentence`,
  `content`; time = the first key present of `current_time`, `start`, `time` (null -> 0 s),
  or 0 s; end = `end` when given, else that time;
- as released, a sentence whose text is missing, null or blank is skipped and one with
  no time (or a null one) is put at 0 s; each such case is noted (`notes`: source,
  item_id, field, message rows, the import report) instead of passing silently;
- times may be numbers or clock strings ("0:05", "1:02.5", "12s"); an unreadable or
  negative time, a non-object sentence and a non-text text stay errors naming file,
  item and field;
- `end < start` is set to `end = start`, as the released scorer does;
- rows keep the file's order (`sentence_index`, counting only the sentences kept), scorers
  sort by time themselves.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from pathlib import Path

import pandas as pd

from omnisocial.duplexeval.contracts import (
    RTD_SPLITS,
    STREAM_EVENTS,
    STREAM_ITEMS,
    STREAM_RESPONSES,
    STREAM_SPLITS,
)
from omnisocial.importing import (
    IMPORT_ERRORS,
    ImportErrorWithItem,
    ItemErrors,
    check_unique,
    concat_frames,
    finish_items,
    is_missing,
    item_id_of,
    parse_timestamp,
    read_json,
    resolve,
    rows_of,
    text_field,
)
from omnisocial.io import read_csv_strings


def _optional_time(raw: dict, key: str, source, item_id: str) -> float | None:
    value = raw.get(key)
    if is_missing(value) or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return parse_timestamp(value)
    except ValueError as error:
        raise ImportErrorWithItem(source, item_id, key, str(error)) from None


def released_reads_time(value) -> bool:
    """Whether the released reminder scorer reads this reminder time (`proactive_reminder.
    parse_float_or_none`: a number, or text that Python's float() reads; "0:15" or "12s" is
    dropped there)."""
    if isinstance(value, (int, float)):
        return True
    if isinstance(value, str):
        try:
            float(value.strip())
        except ValueError:
            return False
        return True
    return False


def _reminder(raw: dict, key: str, source, item_id: str, reminders: str, notes) -> float | None:
    """A reminder time: read like every time (`strict`), or as the released scorer reads it
    (`released`: Python's float(), so "1e1" is 10 s and -2 stays -2; one it cannot read is
    dropped with a note)."""
    value = raw.get(key)
    if reminders == "released" and _given(value):
        if not released_reads_time(value) or isinstance(value, bool):
            message = f"{value!r} is not a number the released scorer reads: reminder dropped, as released"
            _note(notes, source, item_id, key, message)
            return None
        number = float(value.strip() if isinstance(value, str) else value)
        if number < 0 or (isinstance(value, str) and not _PLAIN_NUMBER.match(value.strip())):
            _note(
                notes,
                source,
                item_id,
                key,
                f"{value!r} read as {number:g} s: reminder read by float(), as released",
            )
        return number
    return _optional_time(raw, key, source, item_id)


_PLAIN_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")


def _given(value) -> bool:
    return not (is_missing(value) or (isinstance(value, str) and not value.strip()))


_MEDIA_SUFFIX = {"video": ".mp4", "question_audio": ".wav"}


def _write_bytes(data: bytes, media_dir, key: str, name: str, source, item_id: str) -> str:
    if media_dir is None:
        raise ImportErrorWithItem(
            source, item_id, key, "media given as bytes; no media folder to write it to"
        )
    suffix = Path(name).suffix if name and Path(name).suffix else _MEDIA_SUFFIX.get(key, ".bin")
    target = Path(media_dir) / f"{hashlib.sha256(data).hexdigest()[:16]}{suffix}"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".part")
        partial.write_bytes(data)
        partial.replace(target)
    return str(target)


def _media(raw: dict, key: str, source, item_id: str, root=None, media_dir=None) -> str:
    value = raw.get(key)
    if is_missing(value):
        return ""
    if isinstance(value, (bytes, bytearray)):
        return _write_bytes(bytes(value), media_dir, key, "", source, item_id) if value else ""
    if isinstance(value, dict):  # a Hugging Face media column: {"path": ..., "bytes": ...}
        path, data = value.get("path") or "", value.get("bytes")
        local = bool(path) and root is not None and resolve(root, str(path)).is_file()
        if isinstance(data, (bytes, bytearray)) and data and not local:
            return _write_bytes(bytes(data), media_dir, key, str(path), source, item_id)
        value = path
    if not isinstance(value, str):
        raise ImportErrorWithItem(source, item_id, key, f"expected a path, got {type(value).__name__}")
    return value.strip()


def _stream_item(
    raw,
    source,
    position: int,
    split: str | None,
    root=None,
    media_dir=None,
    default_split: str | None = None,
    reminders: str = "strict",
    notes=None,
) -> dict:
    item_id = item_id_of(raw, "id", source, position)
    row_split = text_field(raw, "split", source, item_id, required=False)
    if split and row_split and row_split != split:
        raise ImportErrorWithItem(source, item_id, "split", f"row says {row_split!r}, file is {split!r}")
    split = split or row_split or default_split or ""
    if split not in STREAM_SPLITS:
        raise ImportErrorWithItem(source, item_id, "split", f"unknown split {split!r}")
    try:
        duration = _optional_time(raw, "video_duration", source, item_id)
    except ImportErrorWithItem as error:
        if reminders != "released":
            raise
        # the released scorers never read the field (they probe the clip)
        _note(
            notes,
            source,
            item_id,
            "video_duration",
            f"{error.message}: unreadable video_duration ignored, as released",
        )
        duration = None
    keys = ("reminder1", "reminder2")
    reading = reminders if split.startswith("PR_") else "strict"  # only the reminder scorer reads them
    times = {key: _reminder(raw, key, source, item_id, reading, notes) for key in keys}
    dropped = [key for key in keys if times[key] is None and _given(raw.get(key))]
    if dropped and all(times[key] is None for key in keys):
        _note(notes, source, item_id, dropped[0], "no reminder left: the whole response is judged once")
    for key, value in times.items():
        if value is not None and duration is not None and value > duration:
            message = f"{value:g} s is after the video's end ({duration:g} s)"
            if reading != "released":
                raise ImportErrorWithItem(source, item_id, key, message)
            _note(notes, source, item_id, key, f"{message}: reminder after the video's end kept, as released")
    return {
        "split": split,
        "item_id": item_id,
        "task": "RTD" if split.startswith("RTD_") else "PR",
        "question_text": text_field(raw, "question_text", source, item_id),
        "answer1": text_field(raw, "answer1", source, item_id, required=False),
        "answer2": text_field(raw, "answer2", source, item_id, required=False),
        **times,
        "video_type": text_field(raw, "video_type", source, item_id, required=False),
        "video_duration": duration,
        "video": _media(raw, "video", source, item_id, root, media_dir),
        "question_audio": _media(raw, "question_audio", source, item_id, root, media_dir),
    }


def split_from_name(path: str | os.PathLike) -> str | None:
    """The split a file or folder is named after: its name, or its name's start before '-' / '.'."""
    for part in (Path(path).name, Path(path).parent.name):
        stem = part.split(".")[0]
        for candidate in (stem, stem.split("-")[0]):
            if candidate in STREAM_SPLITS:
                return candidate
    return None


def _arrow_rows(folder: Path) -> list:
    """Rows of a `datasets` save_to_disk folder (data-*.arrow: Arrow IPC streams, in state.json's order)."""
    import pyarrow as pa

    names = []
    state = folder / "state.json"
    if state.is_file():
        try:
            names = [
                entry["filename"] for entry in json.loads(state.read_text(encoding="utf-8"))["_data_files"]
            ]
        except (ValueError, KeyError, TypeError):
            names = []
    files = [folder / name for name in names] or sorted(folder.glob("data-*.arrow"))
    if not files:
        raise ImportErrorWithItem(folder, "", "(file)", "no data-*.arrow files in this datasets folder")
    rows = []
    for file in files:
        try:
            with pa.memory_map(str(file)) as handle:
                try:
                    table = pa.ipc.open_stream(handle).read_all()
                except pa.ArrowInvalid:
                    table = pa.ipc.open_file(handle).read_all()
        except (OSError, pa.ArrowInvalid) as error:
            raise ImportErrorWithItem(file, "", "(file)", f"cannot read Arrow data: {error}") from None
        rows += table.to_pylist()
    return rows


def _parquet_rows(path: Path) -> list:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path).to_pylist()
    except (OSError, pa.ArrowInvalid) as error:
        raise ImportErrorWithItem(path, "", "(file)", f"cannot read parquet: {error}") from None


def _folder_batches(source: Path, split: str | None, default_split: str | None) -> list:
    """(forced split, default split, rows) per datasets folder: one Dataset, or a DatasetDict's splits."""
    if (source / "state.json").is_file() or any(source.glob("data-*.arrow")):
        return [(split, default_split or split_from_name(source), _arrow_rows(source))]
    batches = []
    for folder in sorted(p for p in source.iterdir() if p.is_dir() and (p / "state.json").is_file()):
        if split and folder.name != split:
            continue
        batches.append((split, default_split or split_from_name(folder), _arrow_rows(folder)))
    if not batches:
        raise ImportErrorWithItem(
            source, "", "(file)", "not a datasets folder (no state.json / data-*.arrow)"
        )
    return batches


def load_stream_items(
    path: str | os.PathLike,
    split: str | None = None,
    collect_errors: bool = False,
    default_split: str | None = None,
    media_dir: str | os.PathLike | None = None,
    reminders: str = "strict",
    notes: list | None = None,
):
    """Read Omni-DuplexEval items from JSON, CSV, parquet or a `datasets` folder into STREAM_ITEMS.

    JSON: a list of items, `{"data": [...]}`, or an object keyed by split name. The split
    comes from `split`, else the key, else each row's `split` field, else `default_split`,
    else the split the file or folder is named after (module doc). CSV: one row per item,
    every column read as text (empty cells are missing values). Parquet and `datasets`
    folders are read with pyarrow; media given as bytes is written under `media_dir`.
    Required: id, question_text, a known split; reminder1/2 and video_duration are optional
    times (a reminder after video_duration is an error). Items without reminders are kept:
    the released reminder scorer then judges the whole response once. `reminders`: `strict`
    reads a reminder time like every time ("0:15" = 15 s); `released` drops one the released
    scorer cannot read (`released_reads_time`), as it does, with a note in `notes` (so an
    item whose reminders are all dropped is judged once on the whole response).
    """
    if reminders not in ("strict", "released"):
        raise ValueError(f"unknown reminders reading {reminders!r}; expected strict or released")
    source = Path(path)
    root = source if source.is_dir() else source.parent
    errors = ItemErrors(collect_errors)
    named = default_split or split_from_name(source)
    batches: list[tuple[str | None, str | None, list]] = []
    if source.is_dir():
        batches = _folder_batches(source, split, default_split)
    elif source.suffix.lower() == ".parquet":
        batches.append((split, named, _parquet_rows(source)))
    elif source.suffix.lower() == ".csv":
        try:
            frame = read_csv_strings(source)
        except (OSError, ValueError) as error:
            raise ImportErrorWithItem(source, "", "(file)", f"cannot read CSV: {error}") from None
        batches.append((split, named, frame.to_dict("records")))
    else:
        data = read_json(source)
        if isinstance(data, dict) and data and all(key in STREAM_SPLITS for key in data):
            for key, rows in data.items():
                if split and key != split:
                    continue
                if not isinstance(rows, list):
                    raise ImportErrorWithItem(source, "", key, "expected a list of items")
                batches.append((key, None, rows))
        else:
            batches.append((split, named, rows_of(data, source)))
    rows, seen = [], set()
    for batch_split, batch_default, batch in batches:
        for position, raw in enumerate(batch):
            try:
                row = _stream_item(
                    raw, source, position, batch_split, root, media_dir, batch_default, reminders, notes
                )
                if reminders == "released" and (row["split"], row["item_id"]) in seen:
                    # the released batch scripts write one output per split and id: the first stands
                    _note(notes, source, row["item_id"], "id", "duplicate id, first copy kept, as released")
                    continue
                check_unique((row["split"], row["item_id"]), seen, source, row["item_id"], "id")
            except ImportErrorWithItem as error:
                errors.add(error)
                continue
            rows.append(row)
    return finish_items(STREAM_ITEMS, rows, source, errors, collect_errors)


# The text keys each released scorer tries, in order (module doc).
_TEXT_KEYS = {"rtd": ("sentence", "text", "content"), "pr": ("text", "sentence", "content")}


def scorer_of(split: str) -> str:
    """'rtd' for the real-time description splits, 'pr' for the reminder splits."""
    return "rtd" if split in RTD_SPLITS else "pr"


def _time_value(
    entry: dict, key: str, source, item_id: str, label: str, released: bool = False
) -> float | None:
    """The key's time; None when the key is absent, null or blank (the released `x or 0.0`).
    `released`: a number (or text float() reads) is taken as it is, negative too, as released."""
    value = entry.get(key)
    if is_missing(value) or (isinstance(value, str) and not value.strip()):
        return None
    if released and not isinstance(value, bool):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = None
        if number is not None and math.isfinite(number):
            return number
    try:
        return parse_timestamp(value)
    except ValueError as error:
        raise ImportErrorWithItem(source, item_id, f"{label}.{key}", str(error)) from None


def _first_time(entry: dict, keys, source, item_id: str, label: str, released: bool = False) -> float | None:
    """The first of `keys` with a non-zero time (the released `a or b or ...` chain), else a 0 or None."""
    found = None
    for key in keys:
        value = _time_value(entry, key, source, item_id, label, released)
        if value:
            return value
        found = value if found is None else found
    return found


def _note(notes, source, item_id: str, field: str, message: str) -> None:
    if notes is not None:
        notes.append({"source": str(source), "item_id": item_id, "field": field, "message": message})


def _sentence(
    entry, source, item_id: str, label: str, scorer: str = "rtd", notes=None, released: bool = False
) -> dict | None:
    if not isinstance(entry, dict):
        message = f"expected an object, got {type(entry).__name__}"
        if not released:
            raise ImportErrorWithItem(source, item_id, label, message)
        _note(notes, source, item_id, label, f"{message}: non-object entry skipped, as released")
        return None
    keys = _TEXT_KEYS[scorer]
    key = next((k for k in keys if k in entry), None)
    text = None if key is None else entry[key]
    if is_missing(text) or (isinstance(text, str) and not text.strip()):
        why = "no " + ", ".join(keys) if key is None else f"{key} is {'null' if text is None else 'blank'}"
        _note(
            notes,
            source,
            item_id,
            f"{label}.{key or keys[0]}",
            f"{why}: sentence without text skipped, as released",
        )
        return None
    if not isinstance(text, str):
        message = f"expected text, got {type(text).__name__}"
        if not released:
            raise ImportErrorWithItem(source, item_id, f"{label}.{key}", message)
        _note(notes, source, item_id, f"{label}.{key}", f"{message}: non-text sentence skipped, as released")
        return None
    if scorer == "rtd":
        point_keys = ("current_time", "time")
        if "start" in entry:
            start = _time_value(entry, "start", source, item_id, label, released)
            if start is None:
                _note(
                    notes,
                    source,
                    item_id,
                    f"{label}.start",
                    "start is null: no time, put at 0 s, as released",
                )
                start = 0.0
        else:
            start = _first_time(entry, point_keys, source, item_id, label, released)
            if start is None:
                _note(
                    notes,
                    source,
                    item_id,
                    f"{label}.start",
                    "no start, current_time or time: no time, put at 0 s, as released",
                )
                start = 0.0
        if "end" in entry:
            end = _time_value(entry, "end", source, item_id, label, released)
        else:
            end = _first_time(entry, point_keys, source, item_id, label, released)
        end = start if end is None else end
        is_point = "start" not in entry and "end" not in entry
    else:
        time_key = next((k for k in ("current_time", "start", "time") if k in entry), None)
        start = None if time_key is None else _time_value(entry, time_key, source, item_id, label, released)
        if start is None:
            what = f"{time_key} is null" if time_key else "no current_time, start or time"
            _note(
                notes,
                source,
                item_id,
                f"{label}.{time_key or 'current_time'}",
                f"{what}: no time, put at 0 s, as released",
            )
            start = 0.0
        end = _time_value(entry, "end", source, item_id, label, released)
        end = start if end is None else end
        is_point = "end" not in entry and time_key != "start"
    if start < 0:
        _note(notes, source, item_id, f"{label}.start", f"{start:g} s: negative time kept, as released")
    return {"text": text.strip(), "start": start, "end": max(end, start), "is_point": is_point}


def read_stream_response(
    path: str | os.PathLike,
    split: str,
    item_id: str,
    model: str = "",
    notes: list | None = None,
    released: bool = False,
) -> pd.DataFrame:
    """One response file -> STREAM_RESPONSES rows (one per kept sentence); raises ImportErrorWithItem.

    Sentences are read with the keys of the released scorer of `split` (module doc); cases the
    release handles silently (no text, no time) are appended to `notes` when given.
    `released`: also read what the released scorers read and ours refuses, each noted: a
    non-object entry or a non-text text is skipped, a negative time kept, and with both
    `sentences` and `chunks` the scorer's own list is read (docs/released-mode.md).
    """
    source = Path(path)
    data = read_json(source)
    if isinstance(data, list):
        entries, container = data, ""
    elif isinstance(data, dict):
        lists = {key: data[key] for key in ("sentences", "chunks") if isinstance(data.get(key), list)}
        if not lists:
            raise ImportErrorWithItem(
                source, item_id, "(file)", "expected a list or an object with sentences/chunks"
            )
        if len(lists) == 2 and lists["sentences"] != lists["chunks"]:
            if not released:
                raise ImportErrorWithItem(
                    source, item_id, "sentences/chunks", "both lists present and different"
                )
            _note(
                notes,
                source,
                item_id,
                "sentences/chunks",
                "both lists present: the scorer's own list of sentences / chunks read, as released",
            )
        # the description scorer looks for sentences first, the reminder scorer for chunks
        order = ("sentences", "chunks") if scorer_of(split) == "rtd" else ("chunks", "sentences")
        container = next(key for key in order if key in lists)
        entries = lists[container]
    else:
        raise ImportErrorWithItem(
            source, item_id, "(file)", "expected a list or an object with sentences/chunks"
        )
    rows = []
    for index, entry in enumerate(entries):
        sentence = _sentence(
            entry, source, item_id, f"{container}[{index}]", scorer_of(split), notes, released
        )
        if sentence is not None:
            rows.append(
                {"model": model, "split": split, "item_id": item_id, "sentence_index": len(rows), **sentence}
            )
    return STREAM_RESPONSES.validate(pd.DataFrame(rows, columns=STREAM_RESPONSES.names), source=str(source))


def response_path(root: str | os.PathLike, split: str, item_id: str) -> Path:
    """The item's response file, looked up as the released batch scripts do (module doc)."""
    candidates = [Path(root) / split / f"{item_id}.json", Path(root) / f"{item_id}.json"]
    candidates.append(Path(root) / split.lower() / f"{item_id}.json")
    return next((path for path in candidates if path.is_file()), candidates[0])


def read_item_response(
    root: str | os.PathLike, split: str, item_id: str, model: str, notes: list | None, released: bool
) -> pd.DataFrame:
    """The item's response file (`response_path`) read by `read_stream_response`; a missing one
    is an error of that item (ImportErrorWithItem, field `(file)`)."""
    path = response_path(root, split, item_id)
    if not path.is_file():
        raise ImportErrorWithItem(path, item_id, "(file)", "response file not found")
    return read_stream_response(path, split, item_id, model, notes, released)


def load_stream_responses(
    root: str | os.PathLike,
    items: pd.DataFrame,
    model: str = "",
    collect_errors: bool = False,
    notes: list | None = None,
    released: bool = False,
):
    """Read `{root}/{split}/{id}.json` for every (split, item_id) of `items` (`released`: as in
    `read_stream_response`).

    A missing file is an error of that item (field `(file)`); in collect mode a file with
    any malformed sentence is left out whole and reported once. Sentences skipped or put at
    0 s as released are appended to `notes` (IMPORT_ERRORS-shaped rows) when given.
    """
    errors = ItemErrors(collect_errors)
    frames = []
    for split, item_id in items[["split", "item_id"]].itertuples(index=False):
        try:
            frames.append(read_item_response(root, split, item_id, model, notes, released))
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
    root: str | os.PathLike,
    items_file: str = "items.json",
    skip_bad: bool = False,
    default_split: str | None = None,
    media_dir: str | os.PathLike | None = None,
    reminders: str = "strict",
    notes: list | None = None,
) -> dict[str, pd.DataFrame]:
    """Omni-DuplexEval items (`items_file` under `root`: JSON, CSV, parquet or a datasets folder) and
    the demo's timed events; `default_split`, `media_dir`, `reminders` and `notes` as in
    `load_stream_items`."""
    root = Path(root)
    path = root / items_file
    options = {
        "default_split": default_split or None,
        "media_dir": media_dir,
        "reminders": reminders,
        "notes": notes,
    }
    if skip_bad:
        items, errors = load_stream_items(path, collect_errors=True, **options)
    else:
        items, errors = load_stream_items(path, **options), IMPORT_ERRORS.empty()
    events_file = root / "truth" / "events.csv"
    events = STREAM_EVENTS.read(events_file) if events_file.is_file() else STREAM_EVENTS.empty()
    keys = set(zip(items["split"], items["item_id"], strict=True))
    inside = [key in keys for key in zip(events["split"], events["item_id"], strict=True)]
    events = events[pd.Series(inside, index=events.index, dtype=bool)]
    return {"stream_items": items, "stream_events": STREAM_EVENTS.validate(events), "errors": errors}


def import_stream_responses(
    responses_root: str | os.PathLike | None,
    items: pd.DataFrame,
    skip_bad: bool = False,
    notes: list | None = None,
    released: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every model folder `{responses_root}/{model}/` read for the items: (responses, import errors);
    `released` as in `read_stream_response`.

    Sentences skipped or put at 0 s as released are appended to `notes` when given."""
    if not responses_root:
        return STREAM_RESPONSES.empty(), IMPORT_ERRORS.empty()
    root = Path(responses_root)
    if not root.is_dir():
        raise FileNotFoundError(f"responses_root {root} is not a folder")
    frames, errors = [], []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if skip_bad:
            responses, bad = load_stream_responses(
                folder, items, model=folder.name, collect_errors=True, notes=notes, released=released
            )
            errors.append(bad)
        else:
            responses = load_stream_responses(
                folder, items, model=folder.name, notes=notes, released=released
            )
        frames.append(responses)
    return concat_frames(frames, STREAM_RESPONSES), concat_frames(errors, IMPORT_ERRORS)


def clip_durations(items: pd.DataFrame, root, note=None) -> list:
    """Each item's clip length as the released description scorer takes it: the clip probed
    (`real_time_description.get_video_duration`), whatever `video_duration` says. Without a
    readable clip: the field. `note(item_id, reason, message)` hears of every item whose
    length is not simply its field (docs/released-mode.md)."""
    from omnisocial.importing import nan_to_none
    from omnisocial.media.audio import MediaError, probe

    note = note or (lambda *_: None)
    out = []
    for item in items.to_dict("records"):
        field = nan_to_none(item["video_duration"])
        path = resolve(root, item["video"]) if str(item["video"] or "").strip() else None
        if path is None or not path.is_file():
            used = ": video_duration used" if field is not None else " and no video_duration"
            note(item["item_id"], "no clip file" + used, str(path or ""))
            out.append(field)
            continue
        try:
            info = probe(path)
            length = float(info["format_duration"] or info["video_duration"])
        except (MediaError, TypeError) as error:
            note(item["item_id"], "clip unreadable: video_duration used", str(error))
            out.append(field)
            continue
        if field is None:
            note(item["item_id"], "no video_duration: the clip's length used, as released")
        elif abs(float(field) - length) > 0.05:
            message = f"field {float(field):g} s, clip {length:.2f} s"
            note(
                item["item_id"],
                "video_duration differs from the clip: the clip's length used, as released",
                message,
            )
        out.append(length)
    return out

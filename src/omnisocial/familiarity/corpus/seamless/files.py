"""Seamless Interaction participant files: their ids, the layout constants, and the participant
json (or JSONL) readers: timed transcript segments and VAD (`read_participant_json`)."""

from __future__ import annotations

import json
import logging
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

FILE_ID = re.compile(r"^V(?P<vendor>\d+)_S(?P<session>\d+)_I(?P<prompt>\d+)_P(?P<participant>\w+)$")

# file suffix -> slot; a participant needs exactly one file per slot.
SLOTS = {".mp4": "video", ".wav": "audio", ".json": "json", ".jsonl": "json"}
SLOT_NAMES = {"video": "mp4", "audio": "wav", "json": "json"}
# Raw per-modality layout: folder -> slot (metadata/<kind>/ for the two metadata kinds).
MODALITY_FOLDERS = {"audio": "audio", "video": "video"}
METADATA_FOLDERS = {"transcript": "transcript", "vad": "vad"}
# Annotation folders drawn directly under the split (`1P-IS/`, `3P-V/`, ...; compared lower-cased).
ANNOTATION_FOLDER = re.compile(r"\d+p-[a-z]+")
RAW_SLOT_NAMES = {"video": "mp4", "audio": "wav"}

TRANSCRIPT_KEYS = ("metadata:transcript", "transcript")
VAD_KEYS = ("metadata:vad", "vad")

# Required columns of each metadata table (others are kept out of the way, not rejected).
INTERACTIONS_COLUMNS = ("prompt_hash", "prompt_id_unique", "participant_a_prompt_text")
RELATIONSHIPS_COLUMNS = ("vendor_id", "session_id", "relationship")
PARTICIPANTS_COLUMNS = ("vendor_id", "participant_id")
GENDER_COLUMNS = ("participant_id", "gender")

GENDER_ALIASES = {"f": "female", "w": "female", "woman": "female", "m": "male", "man": "male"}
_COUNT_WORDS = {2: "two", 3: "three", 4: "four"}


class CorpusError(ValueError):
    """The corpus or its metadata tables are unusable as configured; the message names file and column."""


class ParticipantFileError(ValueError):
    """A participant json could not be read or does not have the expected structure."""


@dataclass(frozen=True)
class FileId:
    """A parsed participant file id; every part keeps its spelling (`0894` stays `0894`)."""

    file_id: str
    vendor: str
    session: str
    prompt_hash: str
    participant: str

    @property
    def interaction_id(self) -> str:
        return f"V{self.vendor}_S{self.session}_I{self.prompt_hash}"

    @property
    def participant_id(self) -> str:
        return f"P{self.participant}"


def parse_file_id(name: str) -> FileId | None:
    """Parse `V00_S0809_I00000582_P0947A`; None when `name` is not a participant file id."""
    match = FILE_ID.match(name)
    if match is None:
        return None
    return FileId(name, match["vendor"], match["session"], match["prompt"], match["participant"])


@dataclass
class ParticipantRecord:
    """What one participant json holds: timed transcript segments (None: no transcript) and VAD."""

    transcript: list[tuple[float, float, str]] | None
    vad: list[tuple[float, float]] | None
    json_id: str | None = None


@dataclass
class _Participant:
    fid: FileId
    files: dict[str, list[Path]] = field(default_factory=lambda: defaultdict(list))
    raw: bool = False  # some file came from a per-modality folder (raw download layout)


def read_participant_json(path: Path) -> ParticipantRecord:
    """Read a participant's json (one object) or its JSONL variant; raise ParticipantFileError."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ParticipantFileError(str(exc)) from None
    return parse_participant_json(text)


def parse_participant_json(text: str) -> ParticipantRecord:
    """Parse the text of a participant json.

    Accepted forms: one JSON object `{"id", "metadata:transcript", "metadata:vad"}`; or
    JSONL, one object a line, each holding some of those keys (lists are concatenated,
    a single segment object is appended) or a keyed record `{"key": K, "value": V}`.
    A JSON list of such objects is read like JSONL.
    """
    data = _json_or_lines(text)
    if isinstance(data, list):
        data = _merge_lines(data)
    if not isinstance(data, dict):
        raise ParticipantFileError(f"expected a JSON object, found {type(data).__name__}")
    return _record(data)


def _json_or_lines(text: str):
    """One JSON document, or JSONL (one object a line) as a list; ParticipantFileError naming the line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as whole:
        if whole.msg != "Extra data":
            raise ParticipantFileError(_json_error(whole)) from None
    data = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ParticipantFileError(f"{exc.msg} line {number} column {exc.colno}") from None
    return data


def _json_error(exc: json.JSONDecodeError) -> str:
    return f"{exc.msg} line {exc.lineno} column {exc.colno}"


def _merge_lines(lines: list) -> dict:
    merged: dict = {}
    for number, item in enumerate(lines, start=1):
        if not isinstance(item, dict):
            raise ParticipantFileError(f"record {number} is a {type(item).__name__}, not an object")
        key = next((k for k in ("key", "field", "feature", "name") if k in item), None)
        value_key = next((k for k in ("value", "data") if k in item), None)
        if key is not None and value_key is not None and len(item) == 2:
            item = {str(item[key]): item[value_key]}
        if _is_bare_segment(item):
            # A bare segment on its line (per-segment JSONL): text or words make it a transcript
            # segment, anything else a VAD segment.
            name = "metadata:transcript" if _is_transcript_segment(item) else "metadata:vad"
            merged.setdefault(name, []).append(item)
            continue
        for name, value in item.items():
            if name in TRANSCRIPT_KEYS or name in VAD_KEYS:
                # Segment lists accumulate over lines; a segment alone on a line is appended.
                merged.setdefault(name, []).extend(value if isinstance(value, list) else [value])
            elif name not in merged:
                merged[name] = value
            elif merged[name] != value:
                raise ParticipantFileError(f"records disagree on {name!r}: {merged[name]!r} vs {value!r}")
    return merged


def _is_bare_segment(item: dict) -> bool:
    """A line that is one segment (`start`, `end`, maybe `transcript` text), not a keyed record."""
    if "start" not in item or "end" not in item or any(k in item for k in ("metadata:transcript", *VAD_KEYS)):
        return False
    return not isinstance(item.get("transcript"), (list, dict))


def _is_transcript_segment(item: dict) -> bool:
    return any(name in item for name in ("transcript", "text", "words"))


def read_segment_file(path: Path, kind: str) -> list:
    """The segments of a per-modality metadata file (raw layout), `kind` 'transcript' or 'vad'.

    JSONL, one segment object a line (blank lines skipped); a JSON list of segments, or an
    object holding them under `metadata:<kind>`/`<kind>`, is accepted too. Returns the
    parsed items (checked by `_segments`); raises ParticipantFileError.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ParticipantFileError(str(exc)) from None
    data = _json_or_lines(text) if text.strip() else []
    if isinstance(data, dict):
        keys = TRANSCRIPT_KEYS if kind == "transcript" else VAD_KEYS
        key = next((k for k in keys if k in data), None)
        data = data[key] if key is not None else [data]
    return data


def _record(data: dict) -> ParticipantRecord:
    transcript_key = next((k for k in TRANSCRIPT_KEYS if k in data), None)
    vad_key = next((k for k in VAD_KEYS if k in data), None)
    transcript = None
    if transcript_key is not None and data[transcript_key] is not None:
        transcript = _segments(data[transcript_key], transcript_key)
    vad = None
    if vad_key is not None and data[vad_key] is not None:
        vad = [(start, end) for start, end, _ in _segments(data[vad_key], vad_key, text=False)]
    json_id = data.get("id")
    return ParticipantRecord(transcript, vad, json_id if isinstance(json_id, str) else None)


def _segments(items, key: str, text: bool = True) -> list[tuple[float, float, str]]:
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list):
        raise ParticipantFileError(f"{key} is a {type(items).__name__}, not a list")
    out = []
    for number, item in enumerate(items, start=1):
        if isinstance(item, (list, tuple)) and len(item) == 2 and not text:
            item = {"start": item[0], "end": item[1]}
        if not isinstance(item, dict):
            raise ParticipantFileError(f"{key} item {number} is not an object")
        if not text and not _is_speech(item, key, number):
            continue  # a VAD entry flagged is_speech false is a non-speech stretch
        start, end = _time(item, "start", key, number), _time(item, "end", key, number)
        if end < start:
            raise ParticipantFileError(f"{key} item {number} ends ({end}) before it starts ({start})")
        out.append((start, end, _segment_text(item) if text else ""))
    return out


def _is_speech(item: dict, key: str, number: int) -> bool:
    """The VAD entry's `is_speech` flag; True when absent. Booleans, 0/1 and true/false/yes/no."""
    value = item.get("is_speech", True)
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no", "1", "0"):
        return value.strip().lower() in ("true", "yes", "1")
    raise ParticipantFileError(f"{key} item {number} has is_speech {value!r}, not true/false")


def _time(item: dict, name: str, key: str, number: int) -> float:
    value = item.get(name)
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ParticipantFileError(f"{key} item {number} has no numeric {name} ({value!r})") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise ParticipantFileError(f"{key} item {number} has {name} {value!r}")
    return seconds


def _segment_text(item: dict) -> str:
    for name in ("transcript", "text"):
        value = item.get(name)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
    # Some releases leave the segment text empty and keep only the words.
    words = item.get("words")
    if isinstance(words, list):
        tokens = [str(w.get("word", "")).strip() for w in words if isinstance(w, dict)]
        return " ".join(token for token in tokens if token)
    return ""

"""Read a Seamless Interaction corpus into the INTERACTIONS, SEGMENTS and SPEECH tables.

Length (about 810 lines): the readers of the corpus layouts, their parsing and checks.

Layouts (see docs/input-formats.md#seamless), detected per file and paired by file id
`V<vendor>_S<session>_I<prompt hash>_P<participant>[A]` (a file's name up to its first dot):
- converted: `{root}/{label}/{split}/{batch}/{archive}/{file_id}.{mp4,wav,json}`, one file
  set per participant; the json (or JSONL) holds transcript and VAD;
- raw download: per-modality folders under each split, `audio/{file_id}.wav`,
  `video/{file_id}.mp4`, `metadata/transcript/{file_id}.jsonl`, `metadata/vad/{file_id}.jsonl`
  (one segment a line; either may be missing, not both), `annotations/<type>/` (ignored);
  or, as seamless_interaction's README draws it, `transcript/`, `vad/` and the annotation
  folders (`1P-IS/`, `1P-R/`, `3P-IS/`, `3P-R/`, `3P-V/`, ignored) directly under the split;
  `json_a/b` then name the VAD file (else the transcript file);
- webdataset tar shards (`*.tar` under the label folder): members grouped by key (the
  member path up to the first dot of its name), extracted into `shard_dir`; without one
  the ingest stops with the exact `tar` command, and a shard beside a folder of its own
  name counts as extracted.
Per-segment JSONL in a converted json file is read too: a bare segment line with text or
words is a transcript segment, otherwise a VAD segment. A VAD entry with `is_speech` false
is not speech and is dropped. The metadata tables `interactions.csv`, `relationships.csv`,
`participants.csv` sit beside the label folders. One conversation (`interaction_id`) is
`V_S_I`; its participants share it.

Two kinds of problems are kept apart:
- a broken configuration (a metadata table missing or lacking a required column, no
  corpus folder, a gender table that contradicts itself) raises `CorpusError` at once;
- anything that makes one interaction unusable (one participant, a missing or unreadable
  file, no relationship or prompt row, a duplicate file id, ...) is recorded in that
  interaction's row: `ingest_ok` False and every reason in `ingest_reason` ('; '-joined);
  an unreadable file is named by its path under the root, with the line where it broke.

Transcripts are all or nothing per interaction: `has_transcript` is True only when both
participants' json hold a transcript, and only then are its segments emitted (source
'transcript'); otherwise the ASR step transcribes both tracks, so one interaction never
mixes transcript and ASR text. SEGMENTS and SPEECH rows are emitted for `ingest_ok`
interactions only. A participant json without VAD is tolerated (no 'corpus_vad' rows:
the VAD step can compute speech from the audio instead) and logged.

Joins compare ids by their digits, so `V03` matches `03` and a `894` written by a
spreadsheet still matches the `0894` of the file id; every id written to the tables keeps
the spelling of the file id.
"""

from __future__ import annotations

import json
import logging
import math
import re
import shutil
import tarfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from omnisocial.familiarity.contracts import INTERACTIONS, SEGMENTS, SPEECH
from omnisocial.io import read_csv_strings
from omnisocial.tables import RELATIONSHIPS

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


# --------------------------------------------------------------------------- participant json


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


# --------------------------------------------------------------------------- metadata tables


def _digits(value: str, prefix: str) -> str:
    """Join key of a numeric id: `V03`, `03` and `3` all give `3`; non-numeric ids stay as spelled."""
    text = str(value).strip()
    if text[:1].upper() == prefix:
        text = text[1:]
    return str(int(text)) if text.isdigit() else text


def participant_key(value: str) -> str:
    """Join key of a participant id: `P0299A`, `0299a` and `299A` all give `299A`."""
    text = str(value).strip()
    if text[:1].upper() == "P":
        text = text[1:]
    match = re.fullmatch(r"(\d+)(\w*)", text)
    if match is None:
        return text.upper()
    return f"{int(match[1])}{match[2].upper()}"


def read_table(path: Path, required: tuple[str, ...], what: str) -> pd.DataFrame:
    """Read a metadata table with every column as a string; CorpusError when unusable."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: {what} table not found")
    try:
        frame = read_csv_strings(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path}: cannot read {what} table: {exc}") from None
    frame.columns = [str(column).strip() for column in frame.columns]
    missing = [column for column in required if column not in frame.columns]
    if missing:
        raise CorpusError(
            f"{path}: {what} table lacks required column(s) {', '.join(missing)} "
            f"(has {', '.join(frame.columns) or 'none'})"
        )
    return frame.apply(lambda column: column.str.strip())


def _relationship_index(frame: pd.DataFrame) -> dict[tuple[str, str], list[tuple[str, str]]]:
    detail = (
        frame["relationship_detail"] if "relationship_detail" in frame else pd.Series("", index=frame.index)
    )
    index: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for vendor, session, relationship, more in zip(
        frame["vendor_id"], frame["session_id"], frame["relationship"], detail, strict=True
    ):
        value = (relationship.lower(), more)
        key = (_digits(vendor, "V"), _digits(session, "S"))
        if value not in index[key]:
            index[key].append(value)
    return index


def _prompt_index(frame: pd.DataFrame) -> dict[str, list[tuple[str, str]]]:
    index: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for prompt_hash, prompt_id, text in zip(
        frame["prompt_hash"], frame["prompt_id_unique"], frame["participant_a_prompt_text"], strict=True
    ):
        value = (prompt_id, text)
        key = _digits(prompt_hash, "I")
        if value not in index[key]:
            index[key].append(value)
    return index


def read_genders(path: Path) -> dict[tuple[str, str], str]:
    """participant -> gender from a user table `participant_id,gender[,vendor_id]`.

    Keys are `(vendor digits or '', participant key)`; a table without `vendor_id` applies
    to every vendor. Genders are lower-cased, `f`/`m` spelled out. Contradictory rows for
    one participant raise CorpusError.
    """
    frame = read_table(path, GENDER_COLUMNS, "gender")
    vendors = frame["vendor_id"] if "vendor_id" in frame else pd.Series("", index=frame.index)
    genders: dict[tuple[str, str], str] = {}
    for row, (vendor, participant, gender) in enumerate(
        zip(vendors, frame["participant_id"], frame["gender"], strict=True), start=2
    ):
        if not participant:
            continue
        value = GENDER_ALIASES.get(gender.lower(), gender.lower())
        key = (_digits(vendor, "V") if vendor else "", participant_key(participant))
        if genders.get(key, value) != value:
            raise CorpusError(
                f"{path}: gender table row {row} column gender: participant {participant} is both "
                f"{genders[key]!r} and {value!r}"
            )
        genders[key] = value
    return genders


def _gender(genders: dict[tuple[str, str], str], fid: FileId) -> str:
    key = participant_key(fid.participant)
    return genders.get((_digits(fid.vendor, "V"), key), genders.get(("", key), ""))


# --------------------------------------------------------------------------- corpus walk


def file_slot(path: Path, base: Path) -> tuple[str | None, bool]:
    """(slot, raw) of a file under `base`: the per-modality folder it sits in (`audio/`,
    `video/`, `metadata/transcript/`, `metadata/vad/`, or `transcript/`, `vad/` directly
    under the split as seamless_interaction's README draws them: raw layout) or else its
    suffix (converted layout). Annotations (`annotations/<type>/`, or a `1P-IS/`-style
    annotation folder under the split), other metadata folders and unknown suffixes give
    slot None."""
    if path.suffix.lower() not in SLOTS:
        return None, False
    try:
        folders = [part.lower() for part in path.relative_to(base).parts[:-1]]
    except ValueError:
        folders = [part.lower() for part in path.parts[:-1]]
    if "annotations" in folders or any(ANNOTATION_FOLDER.fullmatch(folder) for folder in folders):
        return None, True
    if "metadata" in folders:
        after = folders[folders.index("metadata") + 1 : folders.index("metadata") + 2]
        return (METADATA_FOLDERS.get(after[0]) if after else None), True
    # The README's drawing: `transcript/` and `vad/` hold the jsonl files directly.
    if folders and folders[-1] in METADATA_FOLDERS:
        return METADATA_FOLDERS[folders[-1]], True
    for folder in reversed(folders):
        if folder in MODALITY_FOLDERS:
            return MODALITY_FOLDERS[folder], True
    return SLOTS[path.suffix.lower()], False


def _stem(path: Path) -> str:
    """The file id of a participant file: its name up to the first dot (webdataset's key)."""
    return path.name.split(".", 1)[0]


def _walk(bases: list[Path]) -> dict[str, dict[str, _Participant]]:
    """interaction id -> participant id -> that participant's files, found anywhere under `bases`."""
    groups: dict[str, dict[str, _Participant]] = defaultdict(dict)
    skipped = 0
    raw = converted = 0
    for base in bases:
        for path in sorted(base.rglob("*")):
            if not path.is_file():
                continue
            slot, is_raw = file_slot(path, base)
            if slot is None:
                continue
            fid = parse_file_id(_stem(path))
            if fid is None:
                skipped += 1
                log.debug("not a participant file id, skipped: %s", path)
                continue
            participant = groups[fid.interaction_id].setdefault(fid.participant_id, _Participant(fid))
            participant.files[slot].append(path)
            participant.raw |= is_raw
            raw, converted = raw + is_raw, converted + (not is_raw)
    if skipped:
        log.warning("%d file(s) under %s do not carry a participant file id; skipped", skipped, bases[0])
    layouts = [name for name, count in (("per-modality (raw)", raw), ("converted", converted)) if count]
    log.info("corpus layout under %s: %s", bases[0], " + ".join(layouts) or "no participant files")
    return groups


def _participant_order(participant_id: str) -> tuple:
    key = participant_key(participant_id)
    match = re.fullmatch(r"(\d+)(\w*)", key)
    return (0, int(match[1]), match[2]) if match else (1, 0, key)


def _file_problems(participant: _Participant, root: Path) -> tuple[dict[str, Path], list[str]]:
    """The participant's one file per slot, and what is wrong with its files."""
    chosen: dict[str, Path] = {}
    problems: list[str] = []
    names = dict(RAW_SLOT_NAMES if participant.raw else SLOT_NAMES)
    if participant.raw:
        names.update(transcript="transcript jsonl", vad="vad jsonl", json="json")
        if not any(participant.files.get(slot) for slot in ("transcript", "vad", "json")):
            problems.append(f"missing transcript or vad jsonl for {participant.fid.participant_id}")
    for slot, extension in names.items():
        paths = participant.files.get(slot, [])
        if not paths:
            if slot in SLOT_NAMES and (slot != "json" or not participant.raw):
                problems.append(f"missing {extension} for {participant.fid.participant_id}")
            continue
        if len(paths) == 1:
            chosen[slot] = paths[0]
            continue
        folders = sorted({_relative(path.parent, root) for path in paths})
        if len(folders) > 1:
            count = _COUNT_WORDS.get(len(folders), str(len(folders)))
            problems.append(
                f"duplicate file id {participant.fid.file_id} in {count} folders ({', '.join(folders)})"
            )
        else:
            names = ", ".join(path.name for path in paths)
            problems.append(f"several {extension} files for {participant.fid.file_id} ({names})")
    # One folder holding two copies of the same slot gives one reason per slot; say it once.
    return chosen, list(dict.fromkeys(problems))


def _read_metadata_files(
    participant: _Participant, files: dict[str, Path], root: Path
) -> tuple[ParticipantRecord | None, list[str]]:
    """The record of a raw-layout participant from its transcript and VAD jsonl files; a
    problem names the file (relative to `root`) as well as the participant."""
    parts: dict[str, list | None] = {"transcript": None, "vad": None}
    problems = []
    for kind, key in (("transcript", "metadata:transcript"), ("vad", "metadata:vad")):
        if kind not in files:
            continue
        try:
            items = _segments(read_segment_file(files[kind], kind), key, text=kind == "transcript")
        except ParticipantFileError as exc:
            where = _relative(files[kind], root)
            problems.append(f"unreadable {kind} for {participant.fid.participant_id} in {where}: {exc}")
            continue
        parts[kind] = items if kind == "transcript" else [(start, end) for start, end, _ in items]
    if problems:
        return None, problems
    return ParticipantRecord(parts["transcript"], parts["vad"], None), []


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


# --------------------------------------------------------------------------- ingest


def ingest(
    root: Path,
    label: str = "naturalistic",
    gender_table: Path | None = None,
    interactions_csv: Path | None = None,
    relationships_csv: Path | None = None,
    participants_csv: Path | None = None,
    shard_dir: Path | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Read the corpus under `root` into validated (INTERACTIONS, SEGMENTS, SPEECH) frames.

    Metadata tables default to `{root}/interactions.csv`, `{root}/relationships.csv` and
    `{root}/participants.csv` (None or '' means the default); the last is optional (its
    required columns are checked and participants it lacks are logged). Without
    `gender_table` (None or ''), genders and `gender_mix` are empty, so the gender stratum
    is skipped downstream. Raises CorpusError for a configuration problem; per-interaction
    problems end in `ingest_ok`/`ingest_reason`.

    Webdataset tar shards (`*.tar`) under the label folder are read with `extract_shards`
    into `shard_dir` (None or '': not extracted, and the CorpusError gives the exact `tar`
    command); a shard beside a folder of its own name (`0000.tar` and `0000/`) counts as
    extracted by hand and is skipped.
    """
    root = Path(root)
    base = root / label
    if not base.is_dir():
        raise CorpusError(f"{base}: corpus folder not found (root {root}, label {label!r})")
    prompts = _prompt_index(
        read_table(Path(interactions_csv or root / "interactions.csv"), INTERACTIONS_COLUMNS, "interactions")
    )
    relationships = _relationship_index(
        read_table(
            Path(relationships_csv or root / "relationships.csv"), RELATIONSHIPS_COLUMNS, "relationships"
        )
    )
    known_participants = _known_participants(root, participants_csv)
    genders = read_genders(Path(gender_table)) if gender_table else None

    bases = [base]
    shards = pending_shards(base)
    if shards and not shard_dir:
        raise CorpusError(shard_message(shards, base))
    if shards:
        bases.append(extract_shards(shards, root, Path(shard_dir)) / label)
    groups = _walk(bases)
    if not groups:
        raise CorpusError(f"{base}: no participant files ({', '.join(sorted(SLOTS))}) found")

    rows, segments, speech = [], [], []
    unknown: list[str] = []
    for interaction_id in sorted(groups):
        participants = [
            groups[interaction_id][pid] for pid in sorted(groups[interaction_id], key=_participant_order)
        ]
        row, records = _interaction_row(interaction_id, participants, root, prompts, relationships, genders)
        rows.append(row)
        if known_participants is not None:
            unknown += [
                p.fid.file_id
                for p in participants
                if (_digits(p.fid.vendor, "V"), participant_key(p.fid.participant)) not in known_participants
            ]
        if not row["ingest_ok"]:
            continue
        for speaker, record in zip(("a", "b"), records, strict=True):
            if row["has_transcript"]:
                segments += [
                    {
                        "interaction_id": interaction_id,
                        "speaker": speaker,
                        "start": start,
                        "end": end,
                        "text": text,
                        "source": "transcript",
                    }
                    for start, end, text in record.transcript
                ]
            speech += [
                {
                    "interaction_id": interaction_id,
                    "speaker": speaker,
                    "start": start,
                    "end": end,
                    "source": "corpus_vad",
                }
                for start, end in record.vad or []
            ]
    if unknown:
        log.warning("%d participant(s) missing from participants.csv, e.g. %s", len(unknown), unknown[0])

    interactions = INTERACTIONS.validate(pd.DataFrame(rows, columns=INTERACTIONS.names), source=str(base))
    n_bad = int((~interactions["ingest_ok"]).sum())
    log.info("ingested %d interactions from %s (%d unusable)", len(interactions), base, n_bad)
    return interactions, _sorted(SEGMENTS, segments, base), _sorted(SPEECH, speech, base)


def pending_shards(base: Path) -> list[Path]:
    """The webdataset tar shards under `base` not extracted beside themselves (`0000.tar` + `0000/`)."""
    shards = sorted(base.rglob("*.tar"))
    return [path for path in shards if path.is_file() and not path.with_suffix("").is_dir()]


def shard_message(shards: list[Path], base: Path) -> str:
    """The CorpusError text for unextracted shards: the exact command for the first, and for all."""
    first, dest = shards[0], shards[0].with_suffix("")
    return (
        f"{first}: webdataset tar shard not extracted ({len(shards)} under {base}); extract it with "
        f"`mkdir -p {dest} && tar -xf {first} -C {dest}`, every shard with "
        f"`find {base} -name '*.tar' -exec sh -c 'mkdir -p \"${{1%.tar}}\" && "
        f'tar -xf "$1" -C "${{1%.tar}}"\' _ {{}} \\;`, or set corpus.shard_dir to a folder '
        f"the ingest extracts them into"
    )


def shard_members(shard: Path) -> dict[str, dict[str, tarfile.TarInfo]]:
    """key -> extension -> member of a webdataset tar, grouped as webdataset does: the key is
    the member path up to the first dot of its file name, the extension the rest."""
    groups: dict[str, dict[str, tarfile.TarInfo]] = defaultdict(dict)
    with tarfile.open(shard) as archive:
        for member in archive.getmembers():
            if not member.isfile():
                continue
            folder, _, name = member.name.rpartition("/")
            stem, dot, extension = name.partition(".")
            if dot:
                groups[f"{folder}/{stem}" if folder else stem][extension] = member
    return groups


def extract_shards(shards: list[Path], root: Path, shard_dir: Path) -> Path:
    """Extract the participant files of each shard into `{shard_dir}/{shard path under root, no .tar}/`.

    Members are grouped by key (`shard_members`); keys that are not participant file ids and
    extensions other than mp4/wav/json/jsonl (e.g. npz features) are skipped. Files are
    written by their file name only (no member path, so nothing escapes `shard_dir`); one
    already there with the member's size is kept. Returns `shard_dir`; CorpusError naming the
    shard when it cannot be read.
    """
    for shard in shards:
        dest = shard_dir / shard.relative_to(root).with_suffix("")
        try:
            groups = shard_members(shard)
            with tarfile.open(shard) as archive:
                for key, members in sorted(groups.items()):
                    file_id = key.rpartition("/")[2]
                    if parse_file_id(file_id) is None:
                        continue
                    for extension, member in sorted(members.items()):
                        if f".{extension.lower()}" not in SLOTS:
                            continue
                        target = dest / f"{file_id}.{extension}"
                        if target.is_file() and target.stat().st_size == member.size:
                            continue
                        target.parent.mkdir(parents=True, exist_ok=True)
                        source = archive.extractfile(member)
                        with open(target, "wb") as out:
                            shutil.copyfileobj(source, out)
        except (tarfile.TarError, OSError) as exc:
            raise CorpusError(f"{shard}: cannot read webdataset shard: {exc}") from None
        log.info("extracted shard %s into %s", shard, dest)
    return shard_dir


def _known_participants(root: Path, participants_csv: Path | None) -> set[tuple[str, str]] | None:
    path = Path(participants_csv) if participants_csv else root / "participants.csv"
    if not participants_csv and not path.is_file():
        return None
    frame = read_table(path, PARTICIPANTS_COLUMNS, "participants")
    return {
        (_digits(vendor, "V"), participant_key(participant))
        for vendor, participant in zip(frame["vendor_id"], frame["participant_id"], strict=True)
    }


def _sorted(contract, rows: list[dict], source: Path) -> pd.DataFrame:
    if not rows:
        return contract.empty()
    frame = pd.DataFrame(rows, columns=contract.names)
    order = ["interaction_id", "start", "speaker", "end"] + (["text"] if "text" in frame else [])
    frame = frame.sort_values(order, kind="mergesort").reset_index(drop=True)
    return contract.validate(frame, source=str(source))


def _interaction_row(
    interaction_id: str,
    participants: list[_Participant],
    root: Path,
    prompts: dict,
    relationships: dict,
    genders: dict | None,
) -> tuple[dict, list[ParticipantRecord | None]]:
    fid = participants[0].fid
    reasons: list[str] = []
    if len(participants) == 1:
        reasons.append(f"one participant ({fid.file_id})")
    elif len(participants) > 2:
        reasons.append(f"more than two participants ({', '.join(p.fid.file_id for p in participants)})")

    row = {name: "" for name in INTERACTIONS.names}
    row.update(
        interaction_id=interaction_id,
        vendor_id=f"V{fid.vendor}",
        session_id=fid.session,
        prompt_hash=fid.prompt_hash,
        site=f"V{fid.vendor}",
        n_participants=len(participants),
    )

    records: list[ParticipantRecord | None] = []
    for speaker, participant in zip(("a", "b"), participants[:2], strict=False):
        files, problems = _file_problems(participant, root)
        reasons += problems
        record = None
        if "transcript" in files or "vad" in files:
            record, problems = _read_metadata_files(participant, files, root)
            reasons += problems
            if record is not None and record.vad is None:
                log.warning("%s: no VAD file for %s", interaction_id, participant.fid.file_id)
        elif "json" in files:
            try:
                record = read_participant_json(files["json"])
            except ParticipantFileError as exc:
                where = _relative(files["json"], root)
                reasons.append(f"unreadable json for {participant.fid.participant_id} in {where}: {exc}")
            else:
                if record.json_id is not None and record.json_id != participant.fid.file_id:
                    reasons.append(
                        f"json of {participant.fid.file_id} holds the id {record.json_id!r} of another file"
                    )
                if record.vad is None:
                    log.warning("%s: no VAD in %s", interaction_id, files["json"])
        records.append(record)
        row[f"participant_{speaker}"] = participant.fid.participant_id
        row[f"video_{speaker}"] = str(files.get("video", ""))
        row[f"audio_{speaker}"] = str(files.get("audio", ""))
        # Raw layout: the VAD jsonl (else the transcript jsonl) stands in for the combined json.
        row[f"json_{speaker}"] = str(files.get("json", files.get("vad", files.get("transcript", ""))))
        if genders is not None:
            row[f"gender_{speaker}"] = _gender(genders, participant.fid)
    row["has_transcript"] = len(records) == 2 and all(
        r is not None and r.transcript is not None for r in records
    )

    if genders is not None and row["gender_a"] and row["gender_b"]:
        row["gender_mix"] = "-".join(sorted((row["gender_a"], row["gender_b"])))
    elif genders is not None:
        missing = [
            row[f"participant_{s}"] for s in ("a", "b") if row[f"participant_{s}"] and not row[f"gender_{s}"]
        ]
        if missing:
            log.warning("%s: no gender for %s in the gender table", interaction_id, ", ".join(missing))

    session = f"V{fid.vendor} session {fid.session}"
    found = relationships.get((_digits(fid.vendor, "V"), _digits(fid.session, "S")), [])
    if not found:
        reasons.append(f"no relationship row for {session}")
    elif len(found) > 1:
        reasons.append(f"conflicting relationship rows for {session}: {', '.join(r for r, _ in found)}")
    else:
        row["relationship"], row["relationship_detail"] = found[0]
        if row["relationship"] not in RELATIONSHIPS:
            reasons.append(
                f"relationship {row['relationship']!r} for {session} is not one of {', '.join(RELATIONSHIPS)}"
            )

    found = prompts.get(_digits(fid.prompt_hash, "I"), [])
    if not found:
        reasons.append(f"no prompt row for prompt hash {fid.prompt_hash}")
    elif len(found) > 1:
        reasons.append(f"conflicting prompt rows for prompt hash {fid.prompt_hash}")
    else:
        row["prompt_id"], row["prompt_text"] = found[0]

    row["ingest_ok"] = not reasons
    row["ingest_reason"] = "; ".join(reasons)
    return row, records

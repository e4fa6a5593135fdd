"""The walk of a Seamless Interaction corpus folder: each file to its participant and slot in any
of the layouts (`file_slot`), and the problems that make a participant's files unusable."""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from pathlib import Path

from omnisocial.familiarity.corpus.seamless.files import (
    _COUNT_WORDS,
    ANNOTATION_FOLDER,
    METADATA_FOLDERS,
    MODALITY_FOLDERS,
    RAW_SLOT_NAMES,
    SLOT_NAMES,
    SLOTS,
    ParticipantFileError,
    ParticipantRecord,
    _Participant,
    _segments,
    parse_file_id,
    read_segment_file,
)
from omnisocial.familiarity.corpus.seamless.tables import participant_key

log = logging.getLogger(__name__)


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

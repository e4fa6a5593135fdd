"""Read a Seamless Interaction corpus into the INTERACTIONS, SEGMENTS and SPEECH tables.

Modules: `files` (file ids, participant json), `tables` (metadata tables), `layouts` (the
corpus folder's layouts); this module ingests and handles tar shards.

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

import logging
import shutil
import tarfile
from collections import defaultdict
from pathlib import Path

import pandas as pd

from omnisocial.familiarity.contracts import INTERACTIONS, SEGMENTS, SPEECH
from omnisocial.familiarity.corpus.seamless.files import (
    INTERACTIONS_COLUMNS,
    PARTICIPANTS_COLUMNS,
    RELATIONSHIPS_COLUMNS,
    SLOTS,
    CorpusError,
    ParticipantFileError,
    ParticipantRecord,
    _Participant,
    parse_file_id,
    read_participant_json,
)
from omnisocial.familiarity.corpus.seamless.layouts import (
    _file_problems,
    _participant_order,
    _read_metadata_files,
    _relative,
    _walk,
)
from omnisocial.familiarity.corpus.seamless.tables import (
    _digits,
    _gender,
    _prompt_index,
    _relationship_index,
    participant_key,
    read_genders,
    read_table,
)
from omnisocial.tables import RELATIONSHIPS

log = logging.getLogger(__name__)


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

"""Seamless Interaction metadata tables (interactions, relationships, participants, genders):
read with their required columns, and indexed for the ingest."""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from pathlib import Path

import pandas as pd

from omnisocial.familiarity.corpus.seamless.files import GENDER_ALIASES, GENDER_COLUMNS, CorpusError, FileId
from omnisocial.io import read_csv_strings

log = logging.getLogger(__name__)


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

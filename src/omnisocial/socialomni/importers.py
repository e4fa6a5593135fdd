"""Importers for the released SocialOmni files (docs/input-formats.md#socialomni): who and when / how items.

Length (about 540 lines): the two released files share their tolerance rules (options,
times, consistency spellings), so both readers live together.

`load_who_items` reads `data/level_1/dataset.json`, `load_when_items`
`data/level_2/annotations.json`; `import_socialomni` reads both under a root, plus the
demo's optional `truth/` folder (speaker turns, the screen panel of each speaker, several
references per how item and every turn transition for the streaming when protocol).
Without it (released data): how items have one reference (question_2.answer), and the
streaming when items are the YES items, queried from the clip's start with the cut time as
the turn end. Relative media paths are resolved against the data set's root.

Every reader is tolerant of the variations the releases show (a list or a `{"data": [...]}`
wrapper, option prefixes "A." / "(A)" / "A)", full-width colons in times, numbers given
as strings) and strict about anything else (`omnisocial.importing.ImportErrorWithItem`);
with `collect_errors=True` a reader skips bad items and returns `(items, errors)`.
Timestamps: `omnisocial.importing.read_timestamp`, by default in its "excel" mode
(`social.timestamps`) for level 2's question_1.timestamp: the SocialOmni data builder
wrote those times through Excel, so "00:17:00" is 17 s, as the released pipeline reads it;
"clock" reads clock time. Times inside question texts are text typed by people and are
always read as clock time ("0:00:10" is 10 s). Every
excel reading of a three-field stamp is listed in the `timestamp_readings` table
(TIMESTAMP_READINGS), so a user sees each one.

Tolerated as the released code tolerates it: a missing `metadata.consistency` (split
"unknown", reported as its own row), other spellings of it mapped through
`consistency_map` (`social.consistency_map`), 2 to 4 who options (the letters present are
the item's choices), when options in any language ("SÍ" / "NO": the option letter decides,
A = YES and B = NO unless the texts are YES / NO in English the other way round).

SocialOmni level 1 keeps the query time in the question text; `extract_query_interval`
finds it (patterns of the released questions: "from 0:04 to 0:08", "between second 3 and
7", "at the 2th and 6th second", "at 0:05", "at 5 seconds", a bare range "00:04-00:08" or
"[0:04 - 0:08]", "around 0:04"). At most one distinct time or interval may be found; a
question without any time asks about the whole clip (query_start / query_time empty).
`query_time` is the interval's end (where the `causal` who protocol cuts the clip; the
released evaluator sends the whole clip, `socialomni.requests`), `query_start` its start.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

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
    read_timestamp,
    rows_of,
    text_field,
)
from omnisocial.socialomni.contracts import (
    HOW_REFERENCES,
    LETTERS,
    PANELS,
    TIMESTAMP_READINGS,
    TURNS,
    WHEN_ITEMS,
    WHEN_STREAM_ITEMS,
    WHO_COPIES,
    WHO_ITEMS,
    WRITTEN_ANSWERS,
)

log = logging.getLogger(__name__)


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
    re.compile(rf"\[?\s*{_CLK}\s*(?:-|–|~|to)\s*{_CLK}\s*\]?", re.I),
    re.compile(rf"\baround\s+(?:the\s+)?{_CLK}", re.I),
    re.compile(rf"\baround\s+(?:the\s+)?(?:second\s+)?{_NUM}{_ORD}(?:{_UNIT})?", re.I),
]


def extract_query_interval(question: str, timestamps: str = "clock") -> tuple[float | None, float | None]:
    """(start, end) in seconds of the time asked about in a level-1 question; a point gives start == end.

    Overlapping matches keep the longest; the question may hold at most one distinct time
    or interval, with end > 0 and start <= end (ValueError otherwise); (None, None) when it
    holds none (the whole clip). `timestamps`: the reading of three-field times.
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
        times = [parse_timestamp(g, timestamps) for g in groups]
        values.add((times[0], times[-1]))
    if not values:
        return None, None
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


_OPTION_PREFIX = re.compile(r"^\s*[\(\[]?\s*([A-Da-d])\s*[\)\]\.:：、]\s*(.*)$", re.S)


_SAID = re.compile(r"^(.*?)\s+said\s*[:,]?\s*(.*)$", re.S | re.I)


def split_said(option: str) -> tuple[str, str] | None:
    """("<speaker>", "<utterance>") of an option "<speaker> said <utterance>"; None without " said "."""
    match = _SAID.match(option.strip()) if isinstance(option, str) else None
    if not match or not match.group(1).strip():
        return None
    return match.group(1).strip(), match.group(2).strip()


def _parse_options(raw) -> dict[str, str]:
    """Map A-B .. A-D to option texts without their prefixes; ValueError when malformed."""
    if isinstance(raw, dict):
        upper = {str(k).strip().upper(): v for k, v in raw.items()}
        if not 2 <= len(upper) <= 4 or set(upper) != set(LETTERS[: len(upper)]):
            raise ValueError(f"option keys must be A-B, A-C or A-D, got {sorted(upper)}")
        texts = {}
        for letter in LETTERS[: len(upper)]:
            value = upper[letter]
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"option {letter} is empty or not text")
            match = _OPTION_PREFIX.match(value)
            texts[letter] = (
                match.group(2).strip() if match and match.group(1).upper() == letter else value.strip()
            )
        return texts
    if not isinstance(raw, list) or not 2 <= len(raw) <= 4:
        raise ValueError("expected a list of 2 to 4 options")
    if not all(isinstance(v, str) and v.strip() for v in raw):
        raise ValueError("every option must be non-empty text")
    matches = [_OPTION_PREFIX.match(v) for v in raw]
    if all(m is None for m in matches):
        return {letter: value.strip() for letter, value in zip(LETTERS, raw, strict=False)}
    if any(m is None for m in matches):
        raise ValueError("some options have a letter prefix and some do not")
    letters = [m.group(1).upper() for m in matches]
    if sorted(letters) != list(LETTERS[: len(raw)]):
        raise ValueError(f"option letters must be {', '.join(LETTERS[: len(raw)])} once each, got {letters}")
    return {m.group(1).upper(): m.group(2).strip() for m in matches}


def _letter(value, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a letter, got {value!r}")
    match = re.match(r"^\s*[\(\[]?\s*([A-Za-z])\s*(?:[\)\]\.:：]|$|\s)", value)
    letter = match.group(1).upper() if match else ""
    if letter not in allowed:
        raise ValueError(f"expected one of {', '.join(allowed)}, got {value!r}")
    return letter


def _check_time(value: float | None, max_time_s: float | None, source, item_id: str, field: str) -> None:
    if value is not None and max_time_s is not None and value > max_time_s:
        raise ImportErrorWithItem(source, item_id, field, f"{value:g} s is beyond max_time_s={max_time_s:g}")


DEFAULT_CONSISTENCY_MAP = {"consistent": "consistent", "inconsistent": "inconsistent", "unknown": "unknown"}


@dataclass
class ReadOptions:
    """How the readers interpret the released files (module doc); `readings` collects timestamp notes."""

    max_time_s: float | None = None
    timestamps: str = "excel"
    consistency_map: Mapping[str, str] | None = None
    readings: list = field(default_factory=list)
    # released: read what the released pipelines read (docs/released-mode.md); each such
    # reading is a `released_notes` row (item_id, reason, message), so it is counted.
    released: bool = False
    released_notes: list = field(default_factory=list)
    # item_id -> the correct answer as written (the released pipelines compare it raw)
    raw_answers: dict = field(default_factory=dict)
    # released who: the earlier copies of a duplicated id (item rows, each with its answer as
    # written under "written"): the released pipeline scores and counts every copy
    duplicate_copies: list = field(default_factory=list)

    def released_note(self, item_id: str, reason: str, message: str) -> None:
        self.released_notes.append({"item_id": item_id, "reason": reason, "message": message})

    def consistency(self, value, source, item_id: str) -> str:
        if is_missing(value) or (isinstance(value, str) and not value.strip()):
            return "unknown"
        mapping = {
            k.strip().lower(): v
            for k, v in {**DEFAULT_CONSISTENCY_MAP, **(self.consistency_map or {})}.items()
        }
        key = str(value).strip().lower()
        if self.released and value not in ("consistent", "inconsistent", "unknown"):
            # the released analysis groups by the value as written (scripts/analyze_level1_ablation.py)
            self.released_note(
                item_id, "metadata.consistency spelled otherwise (its own group, as released)", repr(value)
            )
            if not isinstance(value, str) or key not in mapping:
                return "unknown"
        if not isinstance(value, str) or key not in mapping:
            raise ImportErrorWithItem(
                source,
                item_id,
                "metadata.consistency",
                f"{value!r} is not one of {', '.join(sorted(mapping))} (add it to social.consistency_map)",
            )
        return mapping[key]

    def note(self, source, item_id: str, field_name: str, raw, seconds: float, note: str) -> None:
        if note:
            self.readings.append(
                {
                    "source": str(source),
                    "item_id": item_id,
                    "field": field_name,
                    "raw": str(raw).strip(),
                    "seconds": seconds,
                    "note": note,
                }
            )

    def table(self) -> pd.DataFrame:
        return TIMESTAMP_READINGS.validate(pd.DataFrame(self.readings, columns=TIMESTAMP_READINGS.names))


def _options(options) -> ReadOptions:
    return options if isinstance(options, ReadOptions) else ReadOptions(max_time_s=options)


def _metadata(raw: dict, source, item_id: str) -> dict:
    value = raw.get("metadata")
    if is_missing(value):
        return {}
    if not isinstance(value, dict):
        raise ImportErrorWithItem(
            source, item_id, "metadata", f"expected an object, got {type(value).__name__}"
        )
    return value


def _first_text(mapping: dict, keys: Iterable[str]) -> str:
    for key in keys:
        value = mapping.get(key)
        if not is_missing(value) and str(value).strip():
            return str(value).strip()
    return ""


def _who_item(raw, source, position: int, opts: ReadOptions) -> dict:
    item_id = item_id_of(raw, "id", source, position)
    video_path = text_field(raw, "video_path", source, item_id)
    question = text_field(raw, "question", source, item_id)
    try:
        query_start, query_time = extract_query_interval(question)
    except ValueError as error:
        raise ImportErrorWithItem(source, item_id, "question", f"timestamp: {error}") from None
    _check_time(query_time, opts.max_time_s, source, item_id, "question")
    try:
        options = _parse_options(raw.get("options"))
    except ValueError as error:
        raise ImportErrorWithItem(source, item_id, "options", str(error)) from None
    try:
        correct = _letter(raw.get("correct_answer"), tuple(options))
    except ValueError as error:
        raise ImportErrorWithItem(source, item_id, "correct_answer", str(error)) from None
    _raw_answer(opts, item_id, raw.get("correct_answer"), correct)
    metadata = _metadata(raw, source, item_id)
    consistency = opts.consistency(metadata.get("consistency"), source, item_id)
    said = split_said(options[correct])
    return {
        "item_id": item_id,
        "source": "socialomni",
        "video_path": video_path,
        "question": question,
        "query_start": query_start,
        "query_time": query_time,
        **{f"option_{letter.lower()}": options.get(letter, "") for letter in LETTERS},
        "correct_answer": correct,
        "speaker": said[0] if said else "",
        "consistency": consistency,
        "domain": _first_text(metadata, ("domain", "category")),
        "subcategory": _first_text(metadata, ("subcategory", "sub_category", "subcategory_name")),
        "asr_content": text_field(raw, "asr_content", source, item_id, required=False),
        **{f"kind_{letter.lower()}": "" for letter in LETTERS},
        "clip_start": None,
        "clip_end": None,
        "review_status": "released",
        "metadata_json": json.dumps(metadata, sort_keys=True, ensure_ascii=False),
    }


def _raw_answer(opts: ReadOptions, item_id: str, raw, letter: str) -> None:
    """Keep the answer as written; in released mode note one the released scorer never matches."""
    written = "" if is_missing(raw) else str(raw)
    opts.raw_answers[item_id] = written
    if opts.released and written.strip().upper() != letter:
        opts.released_note(
            item_id,
            "correct answer not a bare letter (the released scorer compares it as written)",
            repr(raw),
        )


def load_who_items(path: str | os.PathLike, collect_errors: bool = False, max_time_s=None):
    """Read SocialOmni `data/level_1/dataset.json` into a WHO_ITEMS table.

    Required per item: id, video_path, question (at most one time or interval), options
    (2 to 4, prefixed "A. " ... or unprefixed in order, or an object keyed A-B..A-D),
    correct_answer (one of the option letters). metadata.consistency is optional
    ("unknown" when absent). `max_time_s`: a number (asked times beyond it are errors) or
    a `ReadOptions`.
    """
    opts = _options(max_time_s)
    errors = ItemErrors(collect_errors)
    rows: dict[str, dict] = {}
    for position, raw in enumerate(rows_of(read_json(path), path)):
        try:
            row = _who_item(raw, path, position, opts)
            if opts.released and row["item_id"] in rows:
                # the released pipeline (level1_pipeline) scores every copy and counts each in
                # its accuracy; its analysis keys rows by id, so the consistency split holds
                # the last copy. Kept here: the last copy as the item, the earlier ones as
                # copies the overall accuracy counts too (who.score_who's `copies`)
                opts.released_note(
                    row["item_id"],
                    "duplicate id (every copy counted in the overall accuracy, as the released pipeline; "
                    "the consistency breakdown holds the last copy, as the released analysis)",
                    f"position {position}",
                )
                earlier = rows.pop(row["item_id"])
                opts.duplicate_copies.append({**earlier, "written": earlier.pop("_written")})
            else:
                check_unique(row["item_id"], set(rows), path, row["item_id"], "id")
        except ImportErrorWithItem as error:
            errors.add(error)
            continue
        row["_written"] = opts.raw_answers.get(row["item_id"])  # not a column: dropped by the contract
        rows[row["item_id"]] = row
    return finish_items(WHO_ITEMS, list(rows.values()), path, errors, collect_errors)


_TARGET = re.compile(r"^\s*what\s+should\s+(.+?)\s+say\s*\??\s*$", re.I)


def _when_item(raw, source, position: int, opts: ReadOptions) -> dict:
    item_id = item_id_of(raw, "video_id", source, position)
    video_path = text_field(raw, "video_file", source, item_id)
    q1 = raw.get("question_1")
    if not isinstance(q1, dict):
        raise ImportErrorWithItem(source, item_id, "question_1", "missing or not an object")
    question = text_field(q1, "question", source, item_id, label="question_1.question")
    stamp = q1.get("timestamp")
    try:
        if is_missing(stamp) or (isinstance(stamp, str) and not stamp.strip()):
            raise ValueError("missing or empty")
        cut_time, note = read_timestamp(stamp, opts.timestamps)
    except ValueError as error:
        if not opts.released:
            raise ImportErrorWithItem(source, item_id, "question_1.timestamp", str(error)) from None
        # level2_pipeline._parse_timestamp_to_seconds: what it cannot read is 0 s
        opts.released_note(
            item_id, "question_1.timestamp empty or unreadable (0 s, as released)", repr(stamp)
        )
        cut_time, note, stamp = 0.0, "", "" if is_missing(stamp) else stamp
    _check_time(cut_time, opts.max_time_s, source, item_id, "question_1.timestamp")
    opts.note(source, item_id, "question_1.timestamp", stamp, cut_time, note)
    # YES / NO in the release, in any language in its extended sets; a missing one takes the default
    option_a = (
        text_field(q1, "option_A", source, item_id, required=False, label="question_1.option_A") or "YES"
    )
    option_b = (
        text_field(q1, "option_B", source, item_id, required=False, label="question_1.option_B") or "NO"
    )
    meaning = when_option_meaning(option_a, option_b)
    answer = q1.get("correct_answer")
    text = answer.strip() if isinstance(answer, str) else ""
    by_text = {
        option_a.strip().upper(): "A",
        option_b.strip().upper(): "B",
        **{v: k for k, v in meaning.items()},
    }
    if text.upper() in by_text and len(text) > 1:
        correct = by_text[text.upper()]
    else:
        try:
            correct = _letter(answer, ("A", "B"))
        except ValueError as error:
            raise ImportErrorWithItem(source, item_id, "question_1.correct_answer", str(error)) from None
    gold = meaning[correct]
    _raw_answer(opts, item_id, answer, correct)
    q2 = raw.get("question_2")
    if is_missing(q2):
        q2 = {}
    if not isinstance(q2, dict):
        raise ImportErrorWithItem(source, item_id, "question_2", "not an object")
    how_question = text_field(q2, "question", source, item_id, required=False, label="question_2.question")
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
        "how_reference": text_field(q2, "answer", source, item_id, required=False, label="question_2.answer"),
        "full_asr": text_field(raw, "full_asr", source, item_id, required=False),
        "domain": _first_text(metadata, ("domain", "category")),
        "subcategory": _first_text(metadata, ("subcategory", "sub_category", "subcategory_name")),
        "metadata_json": json.dumps(metadata, sort_keys=True, ensure_ascii=False),
    }


def when_option_meaning(option_a: str, option_b: str) -> dict[str, str]:
    """{'A': 'YES'|'NO', 'B': ...}: English YES / NO texts say which is which, else A = YES (as released)."""
    a, b = option_a.strip().upper(), option_b.strip().upper()
    if {a, b} == {"YES", "NO"}:
        return {"A": a, "B": b}
    return {"A": "YES", "B": "NO"}


def load_when_items(path: str | os.PathLike, collect_errors: bool = False, max_time_s=None):
    """Read SocialOmni `data/level_2/annotations.json` (a list or {'data': [...]}) into WHEN_ITEMS.

    Required: video_id, video_file, question_1.question, question_1.timestamp (clock time),
    question_1.correct_answer ("A"/"B" or an option's text). option_A / option_B default to
    YES / NO and may be in any language; question_2 (the how part), full_asr and metadata
    are optional. `max_time_s`: a number or a `ReadOptions` (module doc).
    """
    opts = _options(max_time_s)
    errors = ItemErrors(collect_errors)
    rows, seen = [], set()
    for position, raw in enumerate(rows_of(read_json(path), path)):
        try:
            if opts.released and isinstance(raw, dict) and str(raw.get("video_id", "")).strip() in seen:
                # level2_pipeline.run skips a video_id it has already evaluated
                opts.released_note(
                    str(raw.get("video_id")).strip(), "duplicate video_id (first copy kept, as released)", ""
                )
                continue
            row = _when_item(raw, path, position, opts)
            check_unique(row["item_id"], seen, path, row["item_id"], "video_id")
        except ImportErrorWithItem as error:
            errors.add(error)
            continue
        rows.append(row)
    return finish_items(WHEN_ITEMS, rows, path, errors, collect_errors)


def _item_metadata(item) -> dict:
    try:
        value = json.loads(item.get("metadata_json") or "{}")
    except (TypeError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def clip_of(item) -> str:
    """The clip an item belongs to: metadata.clip_id, else the video file's stem."""
    meta = _item_metadata(item)
    path = item.get("video_path") or ""
    return str(meta.get("clip_id") or Path(str(path)).stem)


def written_answers_table(tasks: Mapping[str, tuple[pd.DataFrame, Mapping[str, str]]]) -> pd.DataFrame:
    """WRITTEN_ANSWERS of the imported items: {task: (items, item_id -> answer as written)}."""
    rows = [
        {"task": task, "item_id": item_id, "written": answers[item_id]}
        for task, (items, answers) in tasks.items()
        for item_id in items["item_id"]
        if item_id in answers
    ]
    return WRITTEN_ANSWERS.validate(pd.DataFrame(rows, columns=WRITTEN_ANSWERS.names))


def written_answers(table: pd.DataFrame, task: str) -> dict[str, str]:
    """item_id -> the answer as written, of one task's rows of a WRITTEN_ANSWERS table (the
    scorers' `raw_answers`)."""
    rows = table[table["task"] == task]
    return dict(zip(rows["item_id"].astype(str), rows["written"], strict=True))


def import_socialomni(
    root: str | os.PathLike,
    skip_bad: bool = False,
    max_time_s: float | None = None,
    timestamps: str = "excel",
    consistency_map: Mapping[str, str] | None = None,
    released: bool = False,
) -> dict[str, pd.DataFrame]:
    """Who / when items, how references, streaming when items, turns and panels from a SocialOmni root.

    Reads `data/level_1/dataset.json` (who) and `data/level_2/annotations.json` (when / how);
    at least one must exist. `skip_bad`: malformed items are left out and listed in
    `errors` instead of failing the import. `truth/*.csv` (the demo's) are read when present.
    `timestamps`, `consistency_map`: see the module doc; `timestamp_readings` lists every
    excel reading of a three-field time. `released`: items read as the released pipelines
    read them (`ReadOptions.released`); each such reading is a row of `released_notes`.
    What the released scorers read beyond the item tables: `written_answers`
    (WRITTEN_ANSWERS, every imported item's correct answer as written) and, released only,
    `who_copies` (WHO_COPIES, the earlier copies of a duplicated who id).
    """
    opts = ReadOptions(max_time_s, timestamps, consistency_map, released=released)
    root = Path(root)
    level1 = root / "data" / "level_1" / "dataset.json"
    level2 = root / "data" / "level_2" / "annotations.json"
    if not level1.is_file() and not level2.is_file():
        raise FileNotFoundError(
            f"{root}: neither data/level_1/dataset.json nor data/level_2/annotations.json"
        )
    errors = []

    def load(reader, path, contract):
        if not path.is_file():
            log.warning("%s not found: no items of this level", path)
            return contract.empty()
        if skip_bad:
            frame, bad = reader(path, collect_errors=True, max_time_s=opts)
            errors.append(bad)
            return frame
        return reader(path, max_time_s=opts)

    who = load(load_who_items, level1, WHO_ITEMS)
    who_written, opts.raw_answers = opts.raw_answers, {}  # who and when ids may coincide
    when = load(load_when_items, level2, WHEN_ITEMS)
    written = written_answers_table({"who": (who, who_written), "when": (when, opts.raw_answers)})
    truth = root / "truth"
    turns = TURNS.read(truth / "turns.csv") if (truth / "turns.csv").is_file() else TURNS.empty()
    panels = PANELS.read(truth / "panels.csv") if (truth / "panels.csv").is_file() else PANELS.empty()
    if (truth / "how_references.csv").is_file():
        references = HOW_REFERENCES.read(truth / "how_references.csv")
        references = references[references["item_id"].isin(set(when["item_id"]))]
    else:
        rows = [
            {"item_id": r.item_id, "ref_index": 0, "kind": "released", "text": r.how_reference}
            for r in when.itertuples()
            if str(r.how_reference).strip()
        ]
        references = HOW_REFERENCES.validate(pd.DataFrame(rows, columns=HOW_REFERENCES.names))
    if (truth / "when_stream.csv").is_file():
        stream = WHEN_STREAM_ITEMS.read(truth / "when_stream.csv")
    else:
        yes = when[when["gold"] == "YES"]
        stream = WHEN_STREAM_ITEMS.validate(
            pd.DataFrame(
                {
                    "item_id": yes["item_id"],
                    "clip_id": [clip_of(r) for r in yes.to_dict("records")],
                    "video_path": yes["video_path"],
                    "target": yes["target"],
                    "previous_speaker": "",
                    "stream_start": 0.0,
                    "turn_end": yes["cut_time"],
                    "next_start": None,
                    "stream_end": None,
                },
                columns=WHEN_STREAM_ITEMS.names,
            )
        )
    return {
        "who_items": who,
        "when_items": when,
        "how_references": HOW_REFERENCES.validate(references),
        "when_stream_items": stream,
        "turns": turns,
        "panels": panels,
        "who_copies": WHO_COPIES.validate(pd.DataFrame(opts.duplicate_copies, columns=WHO_COPIES.names)),
        "written_answers": written,
        "errors": concat_frames(errors, IMPORT_ERRORS),
        "timestamp_readings": opts.table(),
        "released_notes": pd.DataFrame(opts.released_notes, columns=["item_id", "reason", "message"]),
    }

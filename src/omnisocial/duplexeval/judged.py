"""Scoring streaming judge replies made elsewhere: the released parsers and scorers, no API calls.

A published Omni-DuplexEval evaluation holds the judge's raw reply for every response
sentence (temporal sensitivity), every response (content consistency) and every reminder
event. `score_rtd_replies` and `score_pr_replies` re-score such replies exactly as the
released scorers do, so no judge has to be asked again; `omnisocial duplexeval rtd|pr`
(`duplexeval.cli`) runs them on files.

Judge replies (`read_judge_replies`, JUDGE_REPLIES): CSV or JSONL with `item_id` (or `id`),
`reply` (the raw text), optional `split` (empty: any split), optional `kind` (`temporal`,
`content` or `reminder`; default from the command) and `index`: the 0-based
`sentence_index` of the response sentence (the sentences kept from the response file, in
file order) for `temporal`, the 0-based event index (reminder1 = 0, reminder2 = 1; the
whole-response judgement of an item without reminders = 0) for `reminder`; none for
`content`. `sentence_index` / `event_index` are read as `index`.

Parsing a reply (`parse_reply`), parser `released` (the default, as the released code):
- temporal / content (`real_time_description.parse_evaluation_response`): the first
  `{...}` object nested at most one level deep (a reply nesting deeper is read from an
  inner object, as released) that decodes as JSON (trailing commas dropped) and whose
  `temporal_score`, `is_relevant`, `content_score` values are numbers is read by key, in
  any key order; without one, the quoted keys are searched in the text
  (`"temporal_score": 2`). The temporal score and is_relevant are truncated to integers
  (2.6 -> 2), the content score keeps two decimals. A key not found is 0: an unparseable
  reply counts as judged, irrelevant, score 0 (`evaluate_temporal_sentence`), an
  unparseable content reply scores 0.00. Values are not range-checked.
- reminder (`proactive_reminder.parse_judge_response`): the first decodable object's
  `success_score` (truncated; missing = 0), else a quoted `"success_score": 0|1`, else 0.
  A reply that reasons first and ends with its JSON is read from the JSON, not from the
  first digit; one with only a free-text "Score: 1" is 0, as released.

Parser `strict` (`social.parser: strict`) changes what the release gets plainly wrong: an
object counts only when it holds the task's score key (`score` accepted as an alias);
without JSON the last labelled number is read ("... Score: 1" -> 1); a value outside the
scale (temporal 0-3, content 0-3, reminder 0/1) or a temporal reply without is_relevant
is no score; a reply with no score is a judging failure (the sentence is not judged, the
content score or the reminder sample is left out), never a fake 0. The temporal
truncation is kept. Both parsers read every reply; `n_parse_differ` counts the replies
they read differently.

Scoring (as released):
- rtd, per item (`real_time_description.evaluate_temporal_sentence` /
  `summarize_temporal_results`): each sentence's judge window
  (`description.judge_window`, with the item's video_duration); a sentence with no valid
  window, or without a reply (the released API failure), is not judged. Temporal score
  = the mean over judged relevant sentences (0 when none); irrelevant-duration ratio =
  duration of judged irrelevant sentences / duration of judged sentences (is_relevant 1 is
  relevant, 0 irrelevant, any other value neither: it counts only in the total, as
  released). Content = the item's content reply.
- pr, per item (`proactive_reminder.evaluate_sample`): each reminder time t gets the
  response text in [t, t + 10]; no text scores 0 without a judge; a missing reply is 0
  (the released API failure); the sample passes only if every event scores 1; released
  sums the event scores into n_passed (a success_score of 2 counts 2). An item without
  reminders, and any correction item (its task from the split name, as the released batch
  script's `task_type_from_split`), is judged once on the whole response; released takes
  that one judgement's success_score as the sample score (2 scores 2), strict has no 2.
- Per split and 'all' (`split_metrics`): counts, means and fractions (score / 3, passed /
  scored).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from omnisocial.duplexeval.contracts import (
    JUDGE_REPLIES,
    PR_REPLY_ITEMS,
    PR_REPLY_METRICS,
    RTD_REPLY_ITEMS,
    RTD_REPLY_METRICS,
    RTD_SPLITS,
)
from omnisocial.duplexeval.description import judge_window
from omnisocial.duplexeval.reminders import EPS, REMINDER_WINDOW_S
from omnisocial.importing import ImportErrorWithItem, nan_to_none
from omnisocial.io import read_csv_strings
from omnisocial.judges.replies import KIND

PARSERS = ("released", "strict")
KINDS = ("temporal", "content", "reminder")
SCALES = {"temporal": (0.0, 3.0), "content": (0.0, 3.0), "reminder": (0.0, 1.0)}
_KEYS = {"temporal": "temporal_score", "content": "content_score", "reminder": "success_score"}


@dataclass(frozen=True)
class ReplyScore:
    """A parsed reply: score None = no score (strict only); `found` = a score was read from the text."""

    score: float | None
    is_relevant: int | None = None
    found: bool = True


# --- parsing ------------------------------------------------------------------------------


def _objects(text: str):
    """Each balanced `{...}` span of the text that decodes to a JSON object, in order."""
    position = 0
    while (start := text.find("{", position)) >= 0:
        depth, end = 0, -1
        for index in range(start, len(text)):
            if text[index] == "{":
                depth += 1
            elif text[index] == "}":
                depth -= 1
                if depth == 0:
                    end = index
                    break
        if end < 0:
            return
        try:
            value = json.loads(re.sub(r",\s*([}\]])", r"\1", text[start : end + 1]))
        except ValueError:
            value = None
        if isinstance(value, dict):
            yield value
            position = end + 1
        else:
            position = start + 1


# An object with at most one level of nested objects: what the released parsers search for
# (`parse_evaluation_response`, `parse_judge_response`). A reply nesting deeper is read from
# its first such inner object, not the outer one.
_RELEASED_OBJECT = re.compile(r"\{(?:[^{}]|\{[^{}]*\})*\}")


def _released_objects(text: str):
    """Each span the released pattern finds that decodes (trailing commas dropped) to an object."""
    for span in _RELEASED_OBJECT.findall(text):
        try:
            value = json.loads(re.sub(r",\s*([}\]])", r"\1", span))
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def _truncate(value) -> int:
    return int(float(value))


def _two_decimals(value) -> float:
    return round(float(value), 2)


# What the released description parser casts in every object it reads (all three keys).
_RTD_CASTS = {"temporal_score": _truncate, "content_score": _two_decimals, "is_relevant": _truncate}


def _released(text: str, kind: str) -> ReplyScore:
    if kind == "reminder":
        for obj in _released_objects(text):
            try:
                return ReplyScore(float(_truncate(obj.get("success_score", 0))), found="success_score" in obj)
            except (TypeError, ValueError, OverflowError):
                continue
        match = re.search(r'"success_score"\s*:\s*([01])', text)
        return ReplyScore(float(match.group(1)) if match else 0.0, found=match is not None)
    parsed = None
    for obj in _released_objects(text):
        try:
            parsed = {key: cast(obj[key]) for key, cast in _RTD_CASTS.items() if key in obj}
            break
        except (TypeError, ValueError, OverflowError):
            continue
    if parsed is None:
        parsed = {}
        for key, pattern, cast in (
            ("temporal_score", r'"temporal_score"\s*:\s*(\d+)', int),
            ("is_relevant", r'"is_relevant"\s*:\s*(\d+)', int),
            ("content_score", r'"content_score"\s*:\s*(\d+(?:\.\d+)?)', _two_decimals),
        ):
            match = re.search(pattern, text)
            if match:
                parsed[key] = cast(match.group(1))
    key = _KEYS[kind]
    relevant = int(parsed.get("is_relevant", 0)) if kind == "temporal" else None
    return ReplyScore(float(parsed.get(key, 0)), relevant, found=key in parsed)


def _number(value) -> float | None:
    if isinstance(value, bool):
        return float(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _labelled(text: str, names: tuple[str, ...]) -> float | None:
    """The last number written after one of the labels ("temporal_score": 2, Score: 1, score = 0.5)."""
    for name in names:
        found = re.findall(rf'\b{name}\b["\'*]*\s*[:=]\s*\**\s*(-?\d+(?:\.\d+)?)', text, flags=re.IGNORECASE)
        if found:
            return float(found[-1])
    return None


def _strict(text: str, kind: str) -> ReplyScore:
    key = _KEYS[kind]
    low, high = SCALES[kind]
    value = relevant = None
    for obj in _objects(text):
        raw = obj.get(key, obj.get("score"))
        if raw is None:
            continue
        value = _number(raw)
        relevant = _number(obj.get("is_relevant")) if "is_relevant" in obj else None
        break
    else:
        value = _labelled(text, (key, "score"))
        relevant = _labelled(text, ("is_relevant", "relevant", "relevance"))
    if value is None or not low - EPS <= value <= high + EPS:
        return ReplyScore(None, found=value is not None)
    if kind == "content":
        return ReplyScore(round(value, 2))
    if kind == "reminder":
        return ReplyScore(float(value)) if value in (0.0, 1.0) else ReplyScore(None)
    if relevant not in (0.0, 1.0):
        return ReplyScore(None)
    return ReplyScore(float(int(value)), int(relevant))


def parse_reply(text: str | None, kind: str, parser: str = "released") -> ReplyScore:
    """One judge reply of `kind` (temporal, content, reminder) read by `parser` (module doc)."""
    if kind not in KINDS:
        raise ValueError(f"unknown reply kind {kind!r}; expected one of {', '.join(KINDS)}")
    if parser not in PARSERS:
        raise ValueError(f"unknown parser {parser!r}; expected released or strict")
    text = "" if text is None else str(text)
    return _released(text, kind) if parser == "released" else _strict(text, kind)


def parsers_differ(text: str | None, kind: str) -> bool:
    """Whether the released and strict parsers read this reply differently."""
    released, strict = parse_reply(text, kind, "released"), parse_reply(text, kind, "strict")
    return (released.score, released.is_relevant) != (strict.score, strict.is_relevant)


# --- judge reply files --------------------------------------------------------------------


def _json_records(source: Path, text: str) -> list[dict] | None:
    """The records of a `.json` judge file: a list of objects, or an object holding one under
    `replies`, `data` or `results`; None when the file is JSONL (one object a line)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        if error.msg == "Extra data":
            return None
        raise ImportErrorWithItem(
            source, "", "(file)", f"not valid JSON: {error.msg} (line {error.lineno})"
        ) from None
    if isinstance(data, dict):
        lists = [data[key] for key in ("replies", "data", "results") if isinstance(data.get(key), list)]
        data = lists[0] if lists else data
    if not isinstance(data, list):
        raise ImportErrorWithItem(
            source, "", "(file)", "expected a list of reply objects (or one under replies, data or results)"
        )
    for position, record in enumerate(data):
        if not isinstance(record, dict):
            raise ImportErrorWithItem(source, f"#{position}", "(record)", "expected a JSON object")
    return data


def _reply_records(source: Path) -> list[dict]:
    suffix = source.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        records = []
        try:
            text = source.read_text(encoding="utf-8")
        except OSError as error:
            raise ImportErrorWithItem(
                source, "", "(file)", f"cannot read: {error.strerror or error}"
            ) from None
        if suffix == ".json" and (found := _json_records(source, text)) is not None:
            return found
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ImportErrorWithItem(
                    source, f"#{number}", "(line)", f"not valid JSON: {error.msg}"
                ) from None
            if not isinstance(record, dict):
                raise ImportErrorWithItem(source, f"#{number}", "(line)", "expected a JSON object")
            records.append(record)
        return records
    try:
        return read_csv_strings(source).to_dict("records")
    except (OSError, ValueError) as error:
        raise ImportErrorWithItem(source, "", "(file)", f"cannot read CSV: {error}") from None


def _cell(record: dict, *keys: str):
    for key in keys:
        value = record.get(key)
        if value is not None and not (isinstance(value, float) and math.isnan(value)) and str(value).strip():
            return value
    return None


def read_judge_replies(path: str | os.PathLike, default_kind: str) -> pd.DataFrame:
    """Judge replies (CSV or JSONL, module doc) into JUDGE_REPLIES; bad rows name file, item and field."""
    source = Path(path)
    if not source.is_file():
        raise ImportErrorWithItem(source, "", "(file)", "judge replies file not found")
    if not source.read_bytes().strip():
        raise ImportErrorWithItem(source, "", "(file)", "empty file, no judge replies")
    records = _reply_records(source)
    if not records:
        raise ImportErrorWithItem(source, "", "(file)", "no judge replies in the file")
    rows, seen = [], set()
    for position, record in enumerate(records):
        item_id = _cell(record, "item_id", "id")
        if item_id is None:
            raise ImportErrorWithItem(source, f"#{position}", "item_id", "missing or empty")
        item_id = str(item_id).strip()
        kind = str(_cell(record, "kind") or default_kind).strip()
        if kind not in KINDS:
            raise ImportErrorWithItem(source, item_id, "kind", f"unknown kind {kind!r}")
        index = _cell(record, "index", "sentence_index", "event_index")
        if kind == "content":
            index = None
        elif index is None:
            raise ImportErrorWithItem(source, item_id, "index", f"a {kind} reply needs its index")
        else:
            try:
                index = int(float(index))
            except (TypeError, ValueError):
                raise ImportErrorWithItem(source, item_id, "index", f"not an integer: {index!r}") from None
            if index < 0:
                raise ImportErrorWithItem(source, item_id, "index", f"negative index {index}")
        reply = record.get("reply")
        if reply is None or (isinstance(reply, float) and math.isnan(reply)):
            reply = ""
        if not isinstance(reply, str):
            reply = json.dumps(reply) if isinstance(reply, (dict, list)) else str(reply)
        split = str(_cell(record, "split") or "").strip()
        key = (split, item_id, kind, index)
        if key in seen:
            raise ImportErrorWithItem(source, item_id, "index", f"two {kind} replies for index {index}")
        seen.add(key)
        rows.append({"split": split, "item_id": item_id, "kind": kind, "index": index, "reply": reply})
    return JUDGE_REPLIES.validate(pd.DataFrame(rows, columns=JUDGE_REPLIES.names), source=str(source))


class _Replies:
    """Look-up of a reply by (split, item, kind, index); a reply without a split serves any split."""

    def __init__(self, replies: pd.DataFrame):
        self.table = {}
        for row in replies.to_dict("records"):
            index = None if pd.isna(row["index"]) else int(row["index"])
            self.table[(row["split"], row["item_id"], row["kind"], index)] = row["reply"]

    def get(self, split: str, item_id: str, kind: str, index: int | None) -> str | None:
        reply = self.table.get((split, item_id, kind, index))
        return reply if reply is not None else self.table.get(("", item_id, kind, index))


# --- scoring ------------------------------------------------------------------------------


def _sentences_of(responses: pd.DataFrame, model: str, item: dict) -> pd.DataFrame:
    own = responses[
        (responses["model"] == model)
        & (responses["split"] == item["split"])
        & (responses["item_id"] == item["item_id"])
    ]
    return own.sort_values("start", kind="stable")


def score_rtd_replies(
    responses: pd.DataFrame,
    items: pd.DataFrame,
    replies: pd.DataFrame,
    parser: str = "released",
    models=None,
    failed=frozenset(),
) -> pd.DataFrame:
    """Real-time description from judge replies (module doc): one RTD_REPLY_ITEMS row per (model, item).

    `models`: the models to score (default: those with responses); an item a model has no
    sentence for scores as an empty response. `failed`: (split, item_id, kind, index) of the
    judge calls that failed (`judges.llm`): such a sentence is not judged and a failed
    content call leaves the content score empty, counted in n_judge_failed, never a score."""
    lookup = _Replies(replies)
    failed = set(failed)
    rows = []
    rtd_items = items[items["split"].isin(RTD_SPLITS)].to_dict("records")
    for model in models or sorted(responses["model"].unique()):
        for item in rtd_items:
            own = _sentences_of(responses, model, item)
            duration = nan_to_none(item["video_duration"])
            counts = dict.fromkeys(("no_window", "missing", "unparsed", "differ", "failed", "call"), 0)
            judged_time = irrelevant_time = 0.0
            relevant_scores, relevant_starts = [], []
            for sentence in own.to_dict("records"):
                # a negative time (kept as released) has the window of time 0, as released
                start, end = max(0.0, float(sentence["start"])), max(0.0, float(sentence["end"]))
                if judge_window(start, end, duration) is None:
                    counts["no_window"] += 1
                    continue
                index = int(sentence["sentence_index"])
                if (item["split"], item["item_id"], "temporal", index) in failed:
                    counts["call"] += 1
                    continue
                reply = lookup.get(item["split"], item["item_id"], "temporal", index)
                if reply is None:
                    counts["missing"] += 1
                    continue
                parsed = parse_reply(reply, "temporal", parser)
                counts["unparsed"] += int(not parsed.found)
                counts["differ"] += int(parsers_differ(reply, "temporal"))
                if parsed.score is None:  # strict: a judging failure, not judged
                    counts["failed"] += 1
                    continue
                length = max(0.0, float(sentence["end"]) - float(sentence["start"]))
                judged_time += length
                if parsed.is_relevant == 1:
                    relevant_scores.append(parsed.score)
                    relevant_starts.append(float(sentence["start"]))
                elif parsed.is_relevant == 0:  # any other value (2) is neither, as released
                    irrelevant_time += length
            n_judged = len(own) - counts["no_window"] - counts["missing"] - counts["failed"] - counts["call"]
            content_failed = (item["split"], item["item_id"], "content", None) in failed
            content_reply = (
                None if content_failed else lookup.get(item["split"], item["item_id"], "content", None)
            )
            content = math.nan
            counts["call"] += int(content_failed)
            if content_reply is not None:
                parsed = parse_reply(content_reply, "content", parser)
                counts["unparsed"] += int(not parsed.found)
                counts["differ"] += int(parsers_differ(content_reply, "content"))
                content = math.nan if parsed.score is None else parsed.score
            temporal = sum(relevant_scores) / len(relevant_scores) if relevant_scores else 0.0
            rows.append(
                {
                    "model": model,
                    "split": item["split"],
                    "item_id": item["item_id"],
                    "n_sentences": len(own),
                    "n_judged": n_judged,
                    "n_relevant": len(relevant_scores),
                    "n_no_window": counts["no_window"],
                    "n_missing_replies": counts["missing"]
                    + int(content_reply is None and not content_failed),
                    "n_unparsed": counts["unparsed"],
                    "n_parse_differ": counts["differ"],
                    "n_judge_failed": counts["call"],
                    "temporal_score": temporal,
                    "irrelevant_duration_ratio": irrelevant_time / judged_time if judged_time > 0 else 0.0,
                    "first_relevant_time": min(relevant_starts) if relevant_starts else math.nan,
                    "content_score": content,
                }
            )
    return RTD_REPLY_ITEMS.validate(pd.DataFrame(rows, columns=RTD_REPLY_ITEMS.names))


def reminder_times(item: dict) -> list[float]:
    """The item's reminder times (reminder1, reminder2 that are given), in order."""
    return [float(t) for t in (item["reminder1"], item["reminder2"]) if nan_to_none(t) is not None]


def reminder_texts(own: pd.DataFrame, item: dict, window_s: float = REMINDER_WINDOW_S):
    """(event index, window, text) per judgement of a pr item: the response text whose
    sentences start in [t, t + window_s] for each reminder time t; an item without reminders
    (the correction split) is one judgement of the whole response (window None)."""
    # the correction task is judged on the whole response, reminders or not (evaluate_sample)
    times = [] if "correction" in str(item.get("split", "")).lower() else reminder_times(item)
    windows = [(t, t + window_s) for t in times] or [None]
    out = []
    for index, window in enumerate(windows):
        if window is None:
            inside = own
        else:
            inside = own[(own["start"] >= window[0] - EPS) & (own["start"] <= window[1] + EPS)]
        text = " ".join(t.strip() for t in inside["text"] if str(t).strip()).strip()
        out.append((index, window, text))
    return out


def score_pr_replies(
    responses: pd.DataFrame,
    items: pd.DataFrame,
    replies: pd.DataFrame,
    parser: str = "released",
    window_s: float = REMINDER_WINDOW_S,
    models=None,
    failed=frozenset(),
) -> pd.DataFrame:
    """Proactive reminders from judge replies (module doc): one PR_REPLY_ITEMS row per (model, item).

    `failed`: (split, item_id, "reminder", index) of the judge calls that failed: that
    judgement has no score (the sample score is left empty), counted in n_judge_failed."""
    lookup = _Replies(replies)
    failed = set(failed)
    rows = []
    pr_items = items[~items["split"].isin(RTD_SPLITS)].to_dict("records")
    for model in models or sorted(responses["model"].unique()):
        for item in pr_items:
            own = _sentences_of(responses, model, item)
            times = reminder_times(item)
            counts = dict.fromkeys(("no_text", "missing", "unparsed", "differ", "call"), 0)
            scores: list[float | None] = []
            judgements = reminder_texts(own, item, window_s)
            for index, window, text in judgements:
                if window is not None and not text:
                    counts["no_text"] += 1
                    scores.append(0.0)
                    continue
                if (item["split"], item["item_id"], "reminder", index) in failed:
                    counts["call"] += 1
                    scores.append(None)
                    continue
                reply = lookup.get(item["split"], item["item_id"], "reminder", index)
                if reply is None:
                    counts["missing"] += int(bool(text))
                    counts["no_text"] += int(not text)
                    scores.append(0.0)
                    continue
                parsed = parse_reply(reply, "reminder", parser)
                counts["unparsed"] += int(not parsed.found)
                counts["differ"] += int(parsers_differ(reply, "reminder"))
                scores.append(parsed.score)
            scored = [s for s in scores if s is not None]
            complete = len(scored) == len(scores)
            sample = float(all(s == 1 for s in scored)) if complete else math.nan
            if complete and parser == "released" and judgements[0][1] is None:
                # one judgement of the whole response (a correction item, or no reminder):
                # released's total_score is that judgement's success_score as it is (a 2 scores 2)
                sample = float(scored[0])
            rows.append(
                {
                    "model": model,
                    "split": item["split"],
                    "item_id": item["item_id"],
                    "n_events": len(times),
                    "n_judgements": len(scores),
                    "n_scored": len(scored),
                    # released sums the event scores (a success_score of 2 counts 2); strict never has one
                    "n_passed": int(sum(scored))
                    if parser == "released"
                    else sum(1 for s in scored if s == 1),
                    "n_no_text": counts["no_text"],
                    "n_missing_replies": counts["missing"],
                    "n_unparsed": counts["unparsed"],
                    "n_parse_differ": counts["differ"],
                    "n_judge_failed": counts["call"],
                    "sample_score": sample,
                }
            )
    return PR_REPLY_ITEMS.validate(pd.DataFrame(rows, columns=PR_REPLY_ITEMS.names))


TASK_KINDS = {"rtd": ("temporal", "content"), "pr": ("reminder",)}


def unmatched_replies(
    replies: pd.DataFrame, items: pd.DataFrame, responses: pd.DataFrame, task: str, model: str, left_out=()
) -> list[dict]:
    """The judge replies no judgement of `task` reads, with why: {item_id, field, message} each.

    Reasons: the item is not among the task's `items`; it was `left_out` ((split, item_id):
    no readable response file); the reply's kind is not one the task reads; its index names
    no response sentence of the item (temporal) or no judgement of it (reminder: one per
    reminder time, one for an item without reminders). A reply for a sentence the scorers
    skip by rule (no judge window, no text in a reminder window) is read, not listed."""
    by_id: dict[str, list[dict]] = {}
    for item in items.to_dict("records"):
        by_id.setdefault(item["item_id"], []).append(item)
    left_out = set(left_out)
    judgements: dict[tuple[str, str], tuple[set[int], int]] = {}
    out = []
    for reply in replies.to_dict("records"):
        split, item_id, kind = reply["split"], reply["item_id"], reply["kind"]
        index = None if pd.isna(reply["index"]) else int(reply["index"])
        where = f" in {split}" if split else ""
        matches = [item for item in by_id.get(item_id, []) if not split or item["split"] == split]
        if not matches:
            out.append(
                {"item_id": item_id, "field": "item_id", "message": f"no {task} item {item_id}{where}"}
            )
            continue
        if all((item["split"], item_id) in left_out for item in matches):
            message = "its item was left out (no readable response file)"
            out.append({"item_id": item_id, "field": "item_id", "message": message})
            continue
        if kind not in TASK_KINDS[task]:
            message = f"a {kind} reply; {task} reads {' and '.join(TASK_KINDS[task])} replies"
            out.append({"item_id": item_id, "field": "kind", "message": message})
            continue
        if kind == "content":
            continue
        found = False
        for item in matches:
            key = (item["split"], item_id)
            if key not in judgements:  # once per item: the sentence indices and judgement count
                own = _sentences_of(responses, model, item)
                judgements[key] = (set(own["sentence_index"].astype(int)), len(reminder_texts(own, item)))
            indices, n_reminder = judgements[key]
            found |= index in indices if kind == "temporal" else index < n_reminder
        if not found:
            what = "response sentence" if kind == "temporal" else "reminder judgement"
            out.append({"item_id": item_id, "field": "index", "message": f"no {what} {index} in the item"})
    return out


def _mean(series: pd.Series) -> float:
    values = series.dropna()
    return float(values.mean()) if len(values) else math.nan


def split_metrics(per_item: pd.DataFrame, task: str) -> pd.DataFrame:
    """Per model and split, and 'all': counts, means and fractions of `score_*_replies` rows."""
    rows = []
    for model in sorted(per_item["model"].unique()):
        own = per_item[per_item["model"] == model]
        for split in sorted(own["split"].unique()) + ["all"]:
            part = own if split == "all" else own[own["split"] == split]
            counts = {c: int(part[c].sum()) for c in part.columns if c.startswith("n_")}
            row = {"model": model, "split": split, "n_items": len(part), **counts}
            if task == "rtd":
                temporal, content = _mean(part["temporal_score"]), _mean(part["content_score"])
                row |= {
                    "temporal_score": temporal,
                    "temporal_fraction": temporal / 3,
                    "irrelevant_duration_ratio": _mean(part["irrelevant_duration_ratio"]),
                    "n_first_relevant": int(part["first_relevant_time"].notna().sum()),
                    "first_relevant_time": _mean(part["first_relevant_time"]),
                    "n_content": int(part["content_score"].notna().sum()),
                    "content_score": content,
                    "content_fraction": content / 3,
                }
            else:
                samples = part["sample_score"].dropna()
                row |= {
                    "n_samples_scored": len(samples),
                    "n_samples_passed": int(samples.sum()),
                    "success_fraction": float(samples.mean()) if len(samples) else math.nan,
                    "event_success_fraction": counts["n_passed"] / counts["n_scored"]
                    if counts["n_scored"]
                    else math.nan,
                }
            rows.append(row)
    contract = RTD_REPLY_METRICS if task == "rtd" else PR_REPLY_METRICS
    return contract.validate(pd.DataFrame(rows, columns=contract.names))


# --- LLM judge runs (judges.llm) ----------------------------------------------------------


def _failed_calls(run: pd.DataFrame) -> set[tuple]:
    failed = run[~run["ok"].astype(bool)]
    return {
        (r["split"], r["item_id"], r["kind"], None if pd.isna(r["index"]) else int(r["index"]))
        for r in failed.to_dict("records")
    }


def _run_replies(run: pd.DataFrame) -> pd.DataFrame:
    ok = run[run["ok"].astype(bool)]
    return JUDGE_REPLIES.validate(ok[["split", "item_id", "kind", "index", "reply"]].reset_index(drop=True))


def _judge_mean(per_item: pd.DataFrame, scores: tuple[str, ...]) -> pd.DataFrame:
    """judge 'all': per (model, split, item) the mean of each score over the judges that gave one,
    counts summed (so a judge failure of any judge stays visible)."""
    keys = ["model", "split", "item_id"]
    counts = [c for c in per_item.columns if c.startswith("n_")]
    grouped = per_item.groupby(keys, sort=True)
    out = grouped[counts].sum().join(grouped[list(scores)].mean()).reset_index()
    return out.assign(judge="all")


def score_judge_runs(
    responses: pd.DataFrame,
    items: pd.DataFrame,
    runs: dict[str, pd.DataFrame],
    parser: str = "released",
    window_s: float = REMINDER_WINDOW_S,
    models=(),
    tasks: dict[str, list[str]] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rtd rows, pr rows) per judge, model and item from LLM judge runs (`judges.llm.run_judge`
    tables, judge -> rows), scored by `score_rtd_replies` / `score_pr_replies`: the same
    parsing and rules as judge replies read from files; failed calls are `failed`, never a
    score. With several judges, judge 'all' holds the per-item mean over judges.

    The models scored are those with response sentences plus `models` (the streamed ones): a
    model that never spoke, or whose every reply was unparsed, has nothing to judge and so no
    judge call, yet scores as the empty response does (temporal 0, reminders 0), as in the
    offline scores. `tasks` (judge -> "rtd_temporal" / "rtd_content" / "pr") says which scores
    each judge gives; without it, those whose calls appear in the judge's run."""
    rtd_parts, pr_parts = [], []
    speaking = set(responses["model"].astype(str))
    for judge, run in runs.items():
        serves = (tasks or {}).get(judge)
        for model in sorted(speaking | {str(m) for m in models}):
            mine = run[run["model"] == model]
            if mine.empty and model in speaking and serves is None:
                continue  # a run that does not cover this model (no task list to say otherwise)
            replies, failed = _run_replies(mine), _failed_calls(mine)
            kinds = set(mine["kind"]) if serves is None else {KIND[task] for task in serves}
            if kinds & {"temporal", "content"}:
                rtd = score_rtd_replies(responses, items, replies, parser, [model], failed)
                rtd_parts.append(rtd.assign(judge=judge))
            if "reminder" in kinds:
                pr = score_pr_replies(responses, items, replies, parser, window_s, [model], failed)
                pr_parts.append(pr.assign(judge=judge))
    rtd_columns = ["judge", *RTD_REPLY_ITEMS.names]
    pr_columns = ["judge", *PR_REPLY_ITEMS.names]
    rtd = pd.concat(rtd_parts, ignore_index=True) if rtd_parts else pd.DataFrame(columns=rtd_columns)
    pr = pd.concat(pr_parts, ignore_index=True) if pr_parts else pd.DataFrame(columns=pr_columns)
    if rtd["judge"].nunique() > 1:
        scores = ("temporal_score", "irrelevant_duration_ratio", "first_relevant_time", "content_score")
        rtd = pd.concat([rtd, _judge_mean(rtd, scores)])
    if pr["judge"].nunique() > 1:
        pr = pd.concat([pr, _judge_mean(pr, ("sample_score",))])
    return rtd[rtd_columns].reset_index(drop=True), pr[pr_columns].reset_index(drop=True)


def judge_split_metrics(per_item: pd.DataFrame, task: str) -> pd.DataFrame:
    """`split_metrics` per judge (a leading `judge` column)."""
    contract = RTD_REPLY_METRICS if task == "rtd" else PR_REPLY_METRICS
    parts = [
        split_metrics(group.drop(columns="judge").reset_index(drop=True), task).assign(judge=judge)
        for judge, group in per_item.groupby("judge", sort=True)
    ]
    columns = ["judge", *contract.names]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)

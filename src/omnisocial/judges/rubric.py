"""Rubric judges: one prompt per task, and the parsing of the judge's reply into a score.

Tasks and their allowed levels:

- ``how`` (SocialOmni generation): 0 / 25 / 50 / 75 / 100, candidate next utterance vs
  several reference utterances (released scorer: first number snapped to the nearest
  level; an empty candidate scores 0);
- ``temporal`` (Omni-DuplexEval real-time description): temporal score 0-3 plus
  ``is_relevant`` 0/1 for one sentence against the frames of its judge window;
- ``content`` (Omni-DuplexEval content consistency): 0-3, the whole response vs references;
- ``reminder`` (Omni-DuplexEval proactive reminder): 0/1 for the text inside one event's
  window.

Parsing rules, shared by every task (`parse_score`): the first number in the reply (an
optional minus sign, digits, an optional decimal part) is snapped to the nearest allowed
level, a tie going to the lower level. An empty candidate is the lowest level without
asking a judge (`empty_candidate_score`). A reply with no number is *not* a score: the
result carries ``score=None`` and a reason, so it is reported as a judging failure and never
averaged as a fake zero.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from omnisocial.models.base import Request

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Task:
    name: str
    levels: tuple[float, ...]
    scale_note: str


TASKS: dict[str, Task] = {
    "how": Task("how", (0, 25, 50, 75, 100), "one of 0, 25, 50, 75, 100"),
    "temporal": Task("temporal", (0, 1, 2, 3), "an integer from 0 to 3"),
    "content": Task("content", (0, 1, 2, 3), "an integer from 0 to 3"),
    "reminder": Task("reminder", (0, 1), "0 or 1"),
}


def task_spec(task: str | Task) -> Task:
    if isinstance(task, Task):
        return task
    try:
        return TASKS[task]
    except KeyError:
        raise ValueError(f"unknown judge task {task!r}; expected one of {', '.join(TASKS)}") from None


@dataclass(frozen=True)
class ParsedScore:
    score: float | None
    reason: str = ""
    is_relevant: int | None = None  # temporal task only

    @property
    def ok(self) -> bool:
        return self.score is not None


def snap(value: float, levels: Sequence[float]) -> float:
    """The allowed level nearest to `value`; a tie goes to the lower level."""
    ordered = sorted(levels)
    return min(ordered, key=lambda level: (abs(level - value), level))


def parse_score(text: str | None, levels: Sequence[float]) -> ParsedScore:
    """First number of the reply snapped to `levels`; no number = no score, with a reason."""
    if text is None or not str(text).strip():
        return ParsedScore(None, "empty judge reply")
    match = NUMBER.search(str(text))
    if match is None:
        return ParsedScore(None, f"no number in judge reply: {str(text).strip()[:120]!r}")
    value = float(match.group())
    snapped = snap(value, levels)
    reason = "" if value == snapped else f"{match.group()} snapped to {snapped:g}"
    return ParsedScore(float(snapped), reason)


def _json_object(text: str) -> dict | None:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        value = json.loads(text[start : end + 1])
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def parse_temporal(text: str | None) -> ParsedScore:
    """Temporal score (0-3) and is_relevant (0/1).

    The reply is asked for as ``{"score": s, "is_relevant": r}``; when it is valid JSON both
    keys are read from it, otherwise the first number is the score and a number after the
    word "relevant" is is_relevant. A missing is_relevant is a parse failure (no score).
    """
    if text is None or not str(text).strip():
        return ParsedScore(None, "empty judge reply")
    levels = TASKS["temporal"].levels
    obj = _json_object(str(text))
    if obj is not None and "score" in obj and "is_relevant" in obj:
        score = parse_score(str(obj["score"]), levels)
        relevant = parse_score(str(obj["is_relevant"]), (0, 1))
    else:
        score = parse_score(str(text), levels)
        after = re.search(r"relevan\w*\W*?(-?\d+(?:\.\d+)?)", str(text), flags=re.IGNORECASE)
        relevant = (
            parse_score(after.group(1), (0, 1)) if after else ParsedScore(None, "no is_relevant in reply")
        )
    if not score.ok:
        return score
    if not relevant.ok:
        return ParsedScore(None, f"is_relevant: {relevant.reason}")
    return ParsedScore(score.score, score.reason, int(relevant.score))


def empty_candidate_score(task: str | Task) -> ParsedScore:
    spec = task_spec(task)
    relevant = 0 if spec.name == "temporal" else None
    return ParsedScore(float(min(spec.levels)), "empty candidate", relevant)


# --- prompts -------------------------------------------------------------------------------

SYSTEM = (
    "You are a strict, consistent evaluator. Follow the rubric exactly and answer in the format asked, "
    "with no other text."
)


def _references(references: Sequence[str]) -> str:
    return "\n".join(f"{k}. {ref.strip()}" for k, ref in enumerate(references, start=1)) or "(none)"


def build_prompt(task: str | Task, **fields) -> tuple[str, str]:
    """(system, user prompt) for one judgement.

    Fields by task:
      how: context (dialogue so far), references (list), candidate;
      temporal: question, window_start, window_end, sentence (frames go in the request media);
      content: question, references (list), response;
      reminder: instruction (what to remind), event (what happened), window_start, window_end, text.
    """
    spec = task_spec(task)
    if spec.name == "how":
        prompt = (
            "You judge the next utterance a model produced for a multi-party conversation.\n\n"
            f"Conversation so far:\n{fields.get('context', '').strip() or '(not given)'}\n\n"
            "Reference next utterances (any of them is a good answer):\n"
            f"{_references(fields['references'])}\n\n"
            f"Candidate next utterance:\n{fields['candidate'].strip()}\n\n"
            "Rubric (how appropriate the candidate is as the next turn, compared with the references):\n"
            "100 = as appropriate as the references in content, intent and social fit;\n"
            "75 = appropriate, minor differences in content or tone;\n"
            "50 = partly appropriate: right topic but wrong intent, or generic;\n"
            "25 = barely related or socially off;\n"
            "0 = unrelated, incoherent, or inappropriate.\n"
            "Answer with a single number, one of 0, 25, 50, 75, 100."
        )
    elif spec.name == "temporal":
        prompt = (
            "You see the video frames of a time window and one sentence a model said while watching.\n\n"
            f"The user's request: {fields['question'].strip()}\n"
            f"Window: {float(fields['window_start']):.1f} s to {float(fields['window_end']):.1f} s\n"
            f"Sentence: {fields['sentence'].strip()}\n\n"
            "temporal score (does the sentence describe what is happening in this window?):\n"
            "3 = accurate and timely; 2 = mostly accurate, small errors or slightly late;\n"
            "1 = loosely related to the window or clearly late; 0 = wrong or about another moment.\n"
            "is_relevant: 1 if the sentence answers the user's request, 0 if it is filler "
            "(greetings, hedges, repetition).\n"
            'Answer with JSON only: {"score": <0-3>, "is_relevant": <0 or 1>}'
        )
    elif spec.name == "content":
        prompt = (
            "You compare a model's whole streamed description of a video with reference descriptions.\n\n"
            f"The user's request: {fields['question'].strip()}\n\n"
            f"References:\n{_references(fields['references'])}\n\n"
            f"Model response:\n{fields['response'].strip()}\n\n"
            "Content consistency: 3 = covers the key content of the references with no contradiction; "
            "2 = most key content, minor omissions or errors; 1 = little of the key content or some "
            "contradictions; 0 = unrelated or mostly wrong.\n"
            "Answer with a single integer from 0 to 3."
        )
    else:  # reminder
        prompt = (
            "A user asked a model to speak up when something happens in a video.\n\n"
            f"The user's request: {fields['instruction'].strip()}\n"
            f"The event: {fields.get('event', '').strip() or '(see the request)'}\n"
            f"What the model said between {float(fields['window_start']):.1f} s and "
            f"{float(fields['window_end']):.1f} s:\n{fields['text'].strip()}\n\n"
            "Score 1 if the model's words in this window fulfil the request for this event "
            "(a timely reminder or correction), 0 otherwise.\nAnswer with a single number, 0 or 1."
        )
    return SYSTEM, prompt


# --- a judge on top of any Backend ----------------------------------------------------------


@dataclass(frozen=True)
class Judgement:
    item_id: str
    judge: str
    task: str
    score: float | None
    is_relevant: int | None = None
    reason: str = ""
    raw: str | None = None  # the judge's reply as received
    error: str | None = None  # the call failed (not the same as an unparseable reply)


@dataclass
class RubricJudge:
    """Sends rubric prompts to a `Backend` (an LLM judge) and parses the replies.

    `settings` go into each request (temperature 0 and a short `max_new_tokens` suit a
    judge). Items whose candidate is empty are scored at the lowest level without a call.
    """

    backend: object  # omnisocial.models.base.Backend
    task: str
    settings: dict = field(default_factory=lambda: {"temperature": 0.0, "max_new_tokens": 32})

    @property
    def name(self) -> str:
        return getattr(self.backend, "name", type(self.backend).__name__)

    @staticmethod
    def _candidate(task: str, fields: Mapping) -> str:
        key = {"how": "candidate", "temporal": "sentence", "content": "response", "reminder": "text"}[task]
        return str(fields.get(key) or "")

    def judge(self, items: Sequence[Mapping]) -> list[Judgement]:
        """`items`: mappings with `item_id`, the task's fields and optional `media` (kind -> path)."""
        spec = task_spec(self.task)
        results: list[Judgement | None] = [None] * len(items)
        requests, positions = [], []
        for position, item in enumerate(items):
            fields = {k: v for k, v in item.items() if k not in ("item_id", "media")}
            if not self._candidate(spec.name, fields).strip():
                empty = empty_candidate_score(spec)
                results[position] = Judgement(
                    str(item["item_id"]), self.name, spec.name, empty.score, empty.is_relevant, empty.reason
                )
                continue
            system, prompt = build_prompt(spec, **fields)
            media = {kind: Path(path) for kind, path in dict(item.get("media") or {}).items()}
            requests.append(
                Request(
                    item_id=str(item["item_id"]),
                    prompt=prompt,
                    system=system,
                    media=media,
                    settings=self.settings,
                )
            )
            positions.append(position)
        replies = self.backend.generate(requests) if requests else []
        for position, request, reply in zip(positions, requests, replies, strict=True):
            if not reply.ok:
                results[position] = Judgement(
                    request.item_id, self.name, spec.name, None, reason="judge call failed", error=reply.error
                )
                continue
            parsed = (
                parse_temporal(reply.text)
                if spec.name == "temporal"
                else parse_score(reply.text, spec.levels)
            )
            results[position] = Judgement(
                request.item_id,
                self.name,
                spec.name,
                parsed.score,
                parsed.is_relevant,
                parsed.reason,
                reply.text,
            )
        return [r for r in results if r is not None]

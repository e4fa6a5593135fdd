"""Reading the option letter (who), the YES / NO decision (when) out of free-text replies.

Two parsers, chosen with `social.parser` / `--parser`:

released (default) -- the rule of the released SocialOmni code
(`models/pipeline/answer_extraction.py: extract_choice`, used by the level-1 and level-2
pipelines), re-implemented here:
1. the answer region: the text after the last closing `</think>`; else the last assistant
   turn of a chat transcript (`<|im_start|>assistant`, a line "assistant" or "assistant:",
   up to the next user / system / assistant marker or `<|im_end|>`); else the text from the
   last line starting with "answer"; else the last 1200 characters;
2. in that region, upper-cased (so case-insensitive): a letter at the very start followed by
   punctuation (". ) : ," and their full-width forms) or by the end ("d) ...", "B.", "A");
3. else the LAST "final answer / answer / correct choice / correct answer [is|:] X";
4. else the LAST "choice X" / "option X";
5. else the LAST standalone letter;
6. nothing in the region: steps 2-5 once more on the last 1200 characters of the whole reply.
   Letters are the item's option letters (A-D, or fewer for 2- and 3-option items).
   Its blind spot: the article "a" counts as option A (step 5, or "the answer is a man ...").

strict -- the same steps, except that a letter must stand for an option: it is upper-case
in steps 4-5 (outside "answer is x" and a leading letter), and a letter followed by a space
and a lower-case word ("A man said ...", "the answer is a man") is an article, not an
option. A reply where no step finds a letter is unparsed in both.

when (single cut): released = the letter rule above on A / B, then "yes" anywhere in the
lower-cased reply -> A, then "no" anywhere -> B (`level2_pipeline.py:
_normalize_q1_prediction`); substrings, so "I don't know" reads NO. strict = the same
letter rule (strict flavour), then a leading "yes" / "no", then the whole words yes / no:
exactly one present -> that one, else unparsed. The letter decides (A is option_A,
whatever language it is written in).

`disagreements` counts replies the two parsers read differently (reported with the metrics).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

PARSERS = ("released", "strict")
_TAIL = 1200
_ASSISTANT = (
    re.compile(r"<\|im_start\|>\s*assistant\s*\n", re.I),
    re.compile(r"(?:^|\n)assistant\s*\n", re.I),
    re.compile(r"(?:^|\n)assistant\s*:\s*", re.I),
)
_TURN_END = re.compile(r"\n(?:user|system|assistant)\s*:?\s*(?:\n|$)", re.I)
_IM = re.compile(r"<\|im_end\|>|<\|im_start\|>", re.I)


def check_parser(parser: str) -> str:
    if parser not in PARSERS:
        raise ValueError(f"unknown parser {parser!r}; expected one of {', '.join(PARSERS)}")
    return parser


def _assistant_turn(text: str) -> str:
    best = None
    for pattern in _ASSISTANT:
        found = list(pattern.finditer(text))
        if found and (best is None or found[-1].start() > best.start()):
            best = found[-1]
    if best is None:
        return ""
    region = _TURN_END.split(text[best.end() :].strip(), maxsplit=1)[0]
    return _IM.split(region, maxsplit=1)[0].strip()


def answer_region(text: str) -> str:
    """The part of a reply that holds the final answer (step 1 of the module doc)."""
    lower = text.lower()
    if "</think>" in lower:
        return text[lower.rfind("</think>") + len("</think>") :].strip()
    turn = _assistant_turn(text)
    if turn:
        return turn
    if "\nanswer" in lower:
        return text[lower.rfind("\nanswer") :].strip()
    return text[-_TAIL:].strip()


# strict: "A" / "a" followed by a lower-case word is the article, unless the word says the letter
# is the answer ("A is right", "A because ...")
_ARTICLE = re.compile(
    r"\s+(?!(?:is|was|would|seems|appears|fits|matches|because|since|and|or|as|then)\b)[a-z]"
)
_KEYWORD = r"(?:FINAL\s+ANSWER|ANSWER|CORRECT\s+CHOICE|CORRECT\s+ANSWER)\s*(?:IS|:)?\s*"


def _last(pattern: str, source: str, flags: int = 0, strict: bool = False) -> str:
    for match in reversed(list(re.finditer(pattern, source, flags))):
        letter = match.group(1).upper()
        if strict and letter == "A" and _ARTICLE.match(source, match.end(1)):
            continue
        return letter
    return ""


def _letter_in(region: str, letters: str, strict: bool) -> str:
    up = region.upper()
    cls = f"[{letters}]"
    lead = re.match(rf"^\s*({cls})\s*(?:[\.\):：,，。]|$)", up)
    if lead:
        return lead.group(1)
    if not strict:
        found = _last(rf"{_KEYWORD}({cls})\b", up) or _last(rf"(?:CHOICE|OPTION)\s*({cls})\b", up)
        return found or _last(rf"\b({cls})\b", up)
    # strict: keywords in any case, the letter in any case after "answer"; elsewhere upper-case only
    found = _last(rf"{_KEYWORD}\**({cls})\b", region, re.I, strict=True)
    found = found or _last(rf"(?i:CHOICE|OPTION)\s*({cls})\b", region, strict=True)
    return found or _last(rf"(?<![A-Za-z0-9_])({cls})(?![A-Za-z0-9_])", region, strict=True)


def parse_choice(text, letters: Iterable[str] = "ABCD", parser: str = "released") -> str | None:
    """The option letter of a reply, None when unparsed (module doc)."""
    check_parser(parser)
    if not isinstance(text, str) or not text.strip():
        return None
    letters = "".join(sorted({str(letter).upper() for letter in letters}))
    raw = text.strip()
    strict = parser == "strict"
    found = _letter_in(answer_region(raw), letters, strict) or _letter_in(raw[-_TAIL:], letters, strict)
    return found or None


_WORD_YES = re.compile(r"\byes\b", re.I)
_WORD_NO = re.compile(r"\bno\b", re.I)


def parse_yes_no_letter(text, parser: str = "released") -> str | None:
    """'A' (the first option, YES in the release) / 'B' / None from a single-cut reply (module doc)."""
    letter = parse_choice(text, "AB", parser)
    if letter or not isinstance(text, str):
        return letter
    if parser == "released":
        low = text.lower()
        return "A" if "yes" in low else "B" if "no" in low else None
    lead = re.match(r"^\W*(yes|no)\b", text, re.I)
    if lead:
        return "A" if lead.group(1).lower() == "yes" else "B"
    has_yes, has_no = bool(_WORD_YES.search(text)), bool(_WORD_NO.search(text))
    if has_yes != has_no:
        return "A" if has_yes else "B"
    return None


def disagreements(replies: Iterable, parse) -> int:
    """How many replies `parse(reply, parser)` reads differently under the two parsers."""
    return sum(parse(reply, "released") != parse(reply, "strict") for reply in replies)

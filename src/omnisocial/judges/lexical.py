"""The lexical-overlap judge: word (or character n-gram) F1 against references, no model.

A second offline judge beside the reference-similarity (embedding) judge, so judge
agreement can be measured without an LLM. Texts are normalised (case-folded, punctuation
removed, whitespace collapsed) and split into units:

- ``word`` (default): the words;
- ``char``: overlapping character trigrams of the normalised text (spaces included), which
  credits inflections and compounds that word matching misses.

F1 of a candidate against one reference is the SQuAD-style bag-of-units F1: common =
size of the multiset intersection, precision = common / candidate units, recall = common /
reference units, F1 = 2PR / (P + R) (0 when nothing is shared). The candidate's similarity
is its *highest* F1 over the references (several references are alternatives, so matching
one is enough). The similarity is mapped to the task's levels by the same cut points as
the embedding judge (`embedding.CUT_POINTS`), a documented convention, not fitted to human
scores: a similarity at or above cut point k earns level k+1. Word F1 runs lower than
embedding similarity for paraphrases, so this judge is the stricter of the two.

An empty candidate gets the lowest level without being scored.

`keyword_match` is the keyword rule for reminders: the share of the reference's content
words (3+ letters, not in a short stop list) that occur in the text.
"""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Mapping, Sequence

from omnisocial.judges.embedding import CUT_POINTS, SimilarityScore, level_for
from omnisocial.judges.rubric import empty_candidate_score, task_spec

LABEL = "lexical-overlap judge"
UNITS = ("word", "char")
_STOP = """the and for are but not you all any can had her was one our out has him his how its may new now
see who did get let say she too use that with have this will your from they been were what when then
than them into just also very some there their about would could should"""
STOP_WORDS = frozenset(_STOP.split())
_PUNCTUATION = str.maketrans({c: " " for c in string.punctuation + "“”‘’—–"})


def normalise(text: str) -> str:
    """Case-folded text without punctuation, whitespace collapsed."""
    return " ".join(str(text).casefold().translate(_PUNCTUATION).split())


def units(text: str, unit: str = "word") -> list[str]:
    """The words, or the overlapping character trigrams, of the normalised text."""
    norm = normalise(text)
    if unit == "word":
        return norm.split()
    if unit == "char":
        return [norm[i : i + 3] for i in range(len(norm) - 2)] if len(norm) >= 3 else ([norm] if norm else [])
    raise ValueError(f"unknown unit {unit!r}; expected one of {', '.join(UNITS)}")


def f1(candidate: str, reference: str, unit: str = "word") -> float:
    """Bag-of-units F1 of `candidate` against one `reference` (module doc)."""
    a, b = Counter(units(candidate, unit)), Counter(units(reference, unit))
    common = sum((a & b).values())
    if common == 0:
        return 0.0
    precision = common / sum(a.values())
    recall = common / sum(b.values())
    return 2 * precision * recall / (precision + recall)


def content_words(text: str) -> list[str]:
    return [w for w in normalise(text).split() if len(w) >= 3 and w not in STOP_WORDS]


def keyword_match(text: str, reference: str) -> float:
    """Share of the reference's distinct content words found in `text` (1.0 when it has none)."""
    wanted = set(content_words(reference))
    if not wanted:
        return 1.0
    present = set(normalise(text).split())
    return len(wanted & present) / len(wanted)


class LexicalJudge:
    """Scores (candidate, references) by the best lexical F1 (module doc); the API of EmbeddingJudge."""

    label = LABEL

    def __init__(self, unit: str = "word", cut_points: Mapping[str, Sequence[float]] | None = None):
        if unit not in UNITS:
            raise ValueError(f"unknown unit {unit!r}; expected one of {', '.join(UNITS)}")
        self.unit = unit
        self.cut_points = {**CUT_POINTS, **{k: tuple(v) for k, v in (cut_points or {}).items()}}
        self.name = f"lexical:{unit}-f1"

    def similarity(self, candidate: str, references: Sequence[str]) -> float:
        references = [r for r in references if r and str(r).strip()]
        if not references:
            raise ValueError("the lexical-overlap judge needs at least one non-empty reference")
        return max(f1(candidate, reference, self.unit) for reference in references)

    def score(self, candidate: str | None, references: Sequence[str], task: str) -> SimilarityScore:
        spec = task_spec(task)
        if not candidate or not str(candidate).strip():
            empty = empty_candidate_score(spec)
            return SimilarityScore(float(empty.score), None, empty.reason)
        similarity = self.similarity(str(candidate), references)
        return SimilarityScore(level_for(similarity, spec.levels, self.cut_points[spec.name]), similarity)

    def score_many(
        self, items: Sequence[tuple[str | None, Sequence[str]]], task: str
    ) -> list[SimilarityScore]:
        return [self.score(candidate, references, task) for candidate, references in items]


__all__ = ["LABEL", "LexicalJudge", "content_words", "f1", "keyword_match", "normalise", "units"]

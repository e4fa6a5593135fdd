"""Judges of free-text answers: rubric prompts for LLM judges, a reference-similarity
(embedding) judge, and agreement statistics between judges and with people."""

from omnisocial.judges.agreement import icc, krippendorff_alpha, spearman_with_humans
from omnisocial.judges.rubric import TASKS, Judgement, ParsedScore, RubricJudge, build_prompt, parse_score

__all__ = [
    "TASKS",
    "Judgement",
    "ParsedScore",
    "RubricJudge",
    "build_prompt",
    "icc",
    "krippendorff_alpha",
    "parse_score",
    "spearman_with_humans",
]

"""How to speak (benchmarks.md 2.3): judge-score parsing and aggregation.

`parse_judge_score` follows the released scorer: the first number in the judge's reply
(regex -?digits[.digits]) is clamped to [0, 100] and snapped to the nearest level of
{0, 25, 50, 75, 100}. Choices:
- a value exactly between two levels goes to the LOWER one ("62.5" -> 50, "12.5" -> 0),
  as the released `min(levels, key=distance)` does (it returns the first of equal ones);
- an empty candidate (the model said nothing) scores 0 without a judge reply; pass the
  candidate to get that rule;
- a judge reply with no number ("N/A") or an empty one: 0 as released (`parser="released"`,
  the default; the reason says so, so it is never silent), None (unparsed, counted in
  n_unparsed) with `parser="strict"` (a judge failure is not evidence that the candidate
  is bad);
- "first number" is taken literally, as released: "On a 0-100 scale: 75" reads 0.

`aggregate_how` reports, per model, per judge and aggregated over judges:
- mean_with_zeros: the mean over items of all valid scores;
- mean_without_zeros: the same leaving out scores of 0 (the released level-2 summary
  averaged only scores > 0; other released scripts kept them, hence both);
- aggregated ("all" judges): the mean over the judges' valid scores of each item first,
  then over items; without zeros it leaves out the items whose judge mean is 0 (every
  judge gave 0), not single zero scores;
- n_items (items with a valid score), n_nonzero, n_unparsed (rows with a missing score).

`released_averages` reports each average the released scripts compute, under its own name,
per model and judge (from per-item rows: gold, when_correct, has_reference, candidate,
score):
- mean_pipeline (`models/pipeline/level2_pipeline.py: _build_payload`): the how score is
  gated by the when outcome (`released_how_score`), then averaged over scores > 0 only;
- mean_rescoring (`scripts/score_level2_q2_with_omni.py: score_file`): items whose when
  answer is right and that have a reference; an empty candidate scores 0; zeros kept;
- mean_language_report (`scripts/report_level2_extended_by_language.py: build_report`):
  gold-YES items with a right when answer and a score; zeros kept.
And the paper's auxiliary how metrics, which neither the paper's text nor the released code
pins down; our definitions:
- response_coverage: among gold-YES items (those with a how question), the share with a
  non-empty candidate (a model that stays silent when it should speak covers nothing);
- large_gap_rate: among gold-YES items with a right when answer and a score, the share
  scored <= 25 (LARGE_GAP_MAX_SCORE): the model knew it should speak but said something
  far from the reference, the perception-generation gap the paper's joint profile is about.

`released_how_score` reproduces the released level-2 rule that ties the how score to the
when answer: gold YES and the model said YES -> the judged score; gold YES and the model
was wrong -> 0; gold NO and the model was wrong -> 0; gold NO and right -> not scored.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import pandas as pd

from omnisocial.importing import nan_to_none
from omnisocial.judges.agreement import rater_agreement
from omnisocial.socialomni.contracts import HOW_JUDGEMENTS, answered
from omnisocial.socialomni.parsing import check_parser

log = logging.getLogger(__name__)

LEVELS = (0.0, 25.0, 50.0, 75.0, 100.0)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


class JudgeScore(NamedTuple):
    score: float | None
    reason: str


def snap_score(value: float) -> float:
    """Clamp to [0, 100] and snap to the nearest of LEVELS; exact ties go to the lower level."""
    value = min(100.0, max(0.0, float(value)))
    return min(LEVELS, key=lambda level: abs(level - value))


def parse_judge_score(text, candidate: str | None = None, parser: str = "released") -> JudgeScore:
    """(score, reason) from a judge reply; no number: 0 as released, None when strict (module doc)."""
    check_parser(parser)
    if candidate is not None and not str(candidate).strip():
        return JudgeScore(0.0, "empty candidate")
    failed = 0.0 if parser == "released" else None
    suffix = " (released: scored 0)" if parser == "released" else ""
    if not isinstance(text, str) or not text.strip():
        return JudgeScore(failed, "empty judge reply" + suffix)
    match = _NUMBER.search(text)
    if not match:
        return JudgeScore(failed, "no number in judge reply" + suffix)
    return JudgeScore(snap_score(float(match.group(0))), "")


def released_how_score(gold: str, when_correct: bool, judged: float | None) -> float | None:
    """The released level-2 how score of one item given the when outcome (module doc)."""
    gold = gold.upper()
    if gold not in ("YES", "NO"):
        raise ValueError(f"gold must be YES or NO, got {gold!r}")
    if not when_correct:
        return 0.0
    return judged if gold == "YES" else None


LARGE_GAP_MAX_SCORE = 25.0


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else math.nan


def released_averages(rows: pd.DataFrame, parser: str = "released") -> pd.DataFrame:
    """The released scripts' averages and the auxiliary metrics per model and judge (module doc).

    `rows`: model, judge, item_id, gold (YES/NO), when_correct (bool), has_reference (bool),
    candidate (the how answer, "" when none), score (the judged score of the candidate, NaN
    when not judged or unparsed). Optional `domain`: an extra row per domain. Optional
    `parser_differs` (bool: the other parser reads the item's when or judge reply
    differently): counted in `n_parser_differs`. `parser` released: the language report
    leaves out items without a reference, as the released re-scoring leaves them unscored;
    strict keeps them (docs/released-mode.md).
    """
    needed = ("model", "judge", "item_id", "gold", "when_correct", "has_reference", "candidate", "score")
    missing = [c for c in needed if c not in rows.columns]
    if missing:
        raise ValueError(f"how rows lack column(s) {', '.join(missing)}")
    frame = rows.copy()
    if "domain" not in frame.columns:
        frame["domain"] = ""
    out = []
    groups = [("all", frame)] + [(d, sub) for d, sub in frame.groupby("domain", sort=True) if d != ""]
    for level, part in groups:
        for (model, judge), group in part.groupby(["model", "judge"], sort=True):
            pipeline, rescoring, language, gap = [], [], [], []
            yes = covered = 0
            for r in group.to_dict("records"):
                score = nan_to_none(r["score"])
                empty = not str(r["candidate"] or "").strip()
                correct, gold = bool(r["when_correct"]), str(r["gold"]).upper()
                judged = 0.0 if empty else score
                gated = released_how_score(gold, correct, judged)
                if gated is not None and gated > 0:
                    pipeline.append(gated)
                if correct and r["has_reference"] and judged is not None:
                    rescoring.append(judged)
                if gold == "YES":
                    yes += 1
                    covered += not empty
                    if correct and judged is not None and (r["has_reference"] or parser != "released"):
                        language.append(judged)
                        gap.append(judged <= LARGE_GAP_MAX_SCORE)
            out.append(
                {
                    "model": model,
                    "judge": judge,
                    "breakdown": "overall" if level == "all" else "domain",
                    "level": level,
                    "n_items": len(group),
                    "mean_pipeline": _mean(pipeline),
                    "n_pipeline": len(pipeline),
                    "mean_rescoring": _mean(rescoring),
                    "n_rescoring": len(rescoring),
                    "mean_language_report": _mean(language),
                    "n_language_report": len(language),
                    "response_coverage": covered / yes if yes else math.nan,
                    "n_yes": yes,
                    "n_covered": covered,
                    "large_gap_rate": _mean([float(g) for g in gap]),
                    "n_large_gap": int(sum(gap)),
                    "n_unparsed": int(group["score"].isna().sum()),
                }
            )
            if "parser_differs" in group.columns:
                out[-1]["n_parser_differs"] = int(group["parser_differs"].astype(bool).sum())
    return pd.DataFrame(out, columns=list(out[0]) if out else ["model", "judge", "breakdown", "level"])


def _means(values: pd.Series) -> dict:
    valid = values.dropna().astype(float)
    nonzero = valid[valid != 0]
    return {
        "n_items": int(len(valid)),
        "n_nonzero": int(len(nonzero)),
        "mean_with_zeros": float(valid.mean()) if len(valid) else math.nan,
        "mean_without_zeros": float(nonzero.mean()) if len(nonzero) else math.nan,
    }


def item_means(judgements: pd.DataFrame) -> pd.Series:
    """item_id -> the mean over the judges' valid scores of that item (NaN when none is valid).

    `judgements`: one model's item_id and numeric score (NaN = unparseable), any judges; the
    per-item score that the aggregate over judges ("all") averages (module doc)."""
    return judgements.groupby("item_id")["score"].mean()


def aggregate_how(judgements: pd.DataFrame) -> pd.DataFrame:
    """Per model: one row per judge and one with judge 'all' (module doc).

    `judgements`: item_id, model, judge, score (NaN / None = unparseable). One score per
    (item, model, judge).
    """
    for column in ("item_id", "model", "judge", "score"):
        if column not in judgements.columns:
            raise ValueError(f"judgements lack column {column}")
    frame = judgements[["item_id", "model", "judge", "score"]].copy()
    frame["score"] = pd.to_numeric(frame["score"], errors="raise").astype(float)
    if "judge_failed" in judgements.columns:
        frame["failed"] = judgements["judge_failed"].astype(bool).to_numpy()
    else:
        frame["failed"] = False
    if frame.duplicated(["item_id", "model", "judge"]).any():
        raise ValueError("several scores for one (item, model, judge)")
    valid = frame["score"].dropna()
    if ((valid < 0) | (valid > 100)).any():
        raise ValueError("scores must lie in [0, 100]")
    rows = []
    for model, group in frame.groupby("model", sort=True):
        for judge, sub in group.groupby("judge", sort=True):
            rows.append(
                {
                    "model": model,
                    "judge": str(judge),
                    **_means(sub["score"]),
                    "n_unparsed": int((sub["score"].isna() & ~sub["failed"]).sum()),
                    "n_judge_failed": int(sub["failed"].sum()),
                }
            )
        per_item = item_means(group)  # NaNs skipped; all-NaN items stay NaN
        rows.append(
            {
                "model": model,
                "judge": "all",
                **_means(per_item),
                "n_unparsed": int((group["score"].isna() & ~group["failed"]).sum()),
                "n_judge_failed": int(group["failed"].sum()),
            }
        )
    columns = [
        "model",
        "judge",
        "n_items",
        "n_nonzero",
        "mean_with_zeros",
        "mean_without_zeros",
        "n_unparsed",
        "n_judge_failed",
    ]
    return pd.DataFrame(rows, columns=columns).astype({"n_items": np.int64, "n_nonzero": np.int64})


def judge_how(
    candidates: pd.DataFrame, references: pd.DataFrame, judges: Mapping[str, object]
) -> pd.DataFrame:
    """Score every how candidate against its item's references with each judge (`score_many(pairs, 'how')`).

    An empty candidate scores 0, as the released scorer does; a failed call is not judged.
    Items without any reference are skipped with a warning.
    """
    how = answered(candidates, "how").reset_index(drop=True)
    refs = references.sort_values(["item_id", "ref_index"]).groupby("item_id")["text"].apply(list).to_dict()
    missing = sorted(set(how["item_id"]) - set(refs))
    if missing:
        log.warning("how items without references are not judged: %s", ", ".join(missing))
        how = how[how["item_id"].isin(set(refs))].reset_index(drop=True)
    rows = []
    for name, judge in judges.items():
        pairs = [(c, refs[i]) for c, i in zip(how["reply"], how["item_id"], strict=True)]
        scores = judge.score_many(pairs, "how") if pairs else []
        for record, result in zip(how.to_dict("records"), scores, strict=True):
            rows.append(
                {
                    "model": record["model"],
                    "modality": record["modality"],
                    "item_id": record["item_id"],
                    "judge": name,
                    "score": result.score,
                    "similarity": result.similarity,
                    "reason": result.reason,
                    "judge_failed": False,
                }
            )
    return HOW_JUDGEMENTS.validate(pd.DataFrame(rows, columns=HOW_JUDGEMENTS.names))


def _with_llm_aggregate(table_of, frame: pd.DataFrame, llm_judges) -> list[pd.DataFrame]:
    """`table_of(frame)`, plus judge 'llm' (aggregated over the LLM judges only) when there are any."""
    parts = [table_of(frame)]
    llm = [j for j in (llm_judges or ()) if j in set(frame["judge"])]
    if llm:
        sub = table_of(frame[frame["judge"].isin(llm)])
        parts.append(sub[sub["judge"] == "all"].assign(judge="llm"))
    return parts


def how_metrics(judgements: pd.DataFrame, when_scores: pd.DataFrame, llm_judges=()) -> pd.DataFrame:
    """`aggregate_how` per model, on the judged scores and with the released when-gated rule (module doc).

    With `llm_judges` (names), judge 'llm' aggregates those judges only ('all': every judge)."""
    columns = ["scoring", "model", "judge", "n_items", "n_nonzero", "mean_with_zeros", "mean_without_zeros"]
    if judgements.empty:
        return pd.DataFrame(columns=[*columns, "n_unparsed", "n_judge_failed"])
    keep = ["item_id", "model", "judge", "score"] + (["judge_failed"] if "judge_failed" in judgements else [])
    judged = pd.concat(_with_llm_aggregate(aggregate_how, judgements[keep], llm_judges), ignore_index=True)
    judged.insert(0, "scoring", "judged")
    correct = {(r.model, r.item_id): bool(r.correct) for r in when_scores.itertuples()}
    gated = judgements.copy()
    gated["score"] = [
        released_how_score("YES", correct[(m, i)], nan_to_none(s)) if (m, i) in correct else math.nan
        for m, i, s in zip(gated["model"], gated["item_id"], gated["score"], strict=True)
    ]
    gated = gated[[(m, i) in correct for m, i in zip(gated["model"], gated["item_id"], strict=True)]]
    parts = [judged]
    if len(gated):
        released = pd.concat(_with_llm_aggregate(aggregate_how, gated[keep], llm_judges), ignore_index=True)
        released.insert(0, "scoring", "released")
        parts.append(released)
    return pd.concat(parts, ignore_index=True)


def llm_how_judgements(
    candidates: pd.DataFrame,
    references: pd.DataFrame,
    runs: Mapping[str, pd.DataFrame],
    parser: str = "released",
) -> pd.DataFrame:
    """HOW_JUDGEMENTS rows from LLM judge runs (`judges.llm.run_judge` tables, judge -> rows).

    Per how candidate with references and per judge: an empty candidate scores 0 without a
    call (as released); a failed call has no score (`judge_failed`, never 0); a reply is read
    by `parse_judge_score` under `parser` (released: no number = 0; strict: no score)."""
    check_parser(parser)
    how = answered(candidates, "how").reset_index(drop=True)
    with_refs = set(references["item_id"])
    how = how[how["item_id"].isin(with_refs)]
    rows = []
    for judge, run in runs.items():
        lookup = {(r["model"], r["modality"], r["item_id"]): r for r in run.to_dict("records")}
        for record in how.to_dict("records"):
            key = (record["model"], record["modality"], record["item_id"])
            candidate = str(record["reply"] or "")
            row = {"model": key[0], "modality": key[1], "item_id": key[2], "judge": judge}
            row |= {"similarity": math.nan, "judge_failed": False}
            call = lookup.get(key)
            if not candidate.strip():
                row |= {"score": 0.0, "reason": "empty candidate"}
            elif call is None:
                row |= {"score": math.nan, "reason": "not judged (no judge call for this candidate)"}
            elif not bool(call["ok"]):
                row |= {
                    "score": math.nan,
                    "reason": f"judge call failed: {call['error']}",
                    "judge_failed": True,
                }
            else:
                parsed = parse_judge_score(call["reply"], candidate, parser)
                row |= {"score": math.nan if parsed.score is None else parsed.score, "reason": parsed.reason}
            rows.append(row)
    return HOW_JUDGEMENTS.validate(pd.DataFrame(rows, columns=HOW_JUDGEMENTS.names))


def how_released(
    judgements: pd.DataFrame,
    candidates: pd.DataFrame,
    when_scores: pd.DataFrame,
    when_items: pd.DataFrame,
    references: pd.DataFrame,
    llm_judges=(),
) -> pd.DataFrame:
    """`released_averages` of the workflow's judgements (per judge, 'all' judges, and 'llm'):
    one row per when-scored (model, item) and judge; the candidate is the model's how answer
    ("" when none), has_reference = the item has how references."""
    how = answered(candidates, "how")
    answers = {(r.model, r.modality, r.item_id): str(r.reply or "") for r in how.itertuples()}
    scores = {
        (r.model, r.modality, r.item_id, r.judge): nan_to_none(r.score) for r in judgements.itertuples()
    }
    with_refs = set(references["item_id"])
    domain = dict(zip(when_items["item_id"], when_items["domain"], strict=True))
    judges = sorted(set(judgements["judge"]))
    rows = []
    for r in when_scores.itertuples():
        key = (r.model, r.modality, r.item_id)
        per_judge = {}
        for judge in judges:
            score = scores.get((*key, judge))
            per_judge[judge] = score
            rows.append({"judge": judge, "score": math.nan if score is None else score})
            rows[-1] |= {
                "model": r.model,
                "item_id": r.item_id,
                "gold": r.gold,
                "when_correct": bool(r.correct),
            }
            rows[-1] |= {
                "has_reference": r.item_id in with_refs,
                "candidate": answers.get(key, ""),
                "domain": domain.get(r.item_id, ""),
            }
        for label, names in (("all", judges), ("llm", [j for j in judges if j in set(llm_judges or ())])):
            valid = [per_judge[j] for j in names if per_judge[j] is not None]
            if not names or (label == "all" and len(judges) < 2):
                continue
            base = dict(rows[-1])
            base |= {"judge": label, "score": float(np.mean(valid)) if valid else math.nan}
            rows.append(base)
    if not rows:
        return pd.DataFrame(columns=["model", "judge", "breakdown", "level"])
    return released_averages(pd.DataFrame(rows))


def how_agreement(judgements: pd.DataFrame) -> pd.DataFrame:
    """Per model: Krippendorff's alpha (ordinal, interval) and ICC(2,1) / ICC(2,k) between the judges."""
    columns = ["n_judges", "n_items", "alpha_ordinal", "alpha_interval", "icc_2_1", "icc_2_k"]
    columns.append("exact_agreement")
    rows = []
    for model, group in judgements.groupby("model", sort=True):
        row = rater_agreement(group, rater="judge", unit="item_id", value="score")
        rows.append({"model": model, **{c: row[c] for c in columns}})
    return pd.DataFrame(rows, columns=["model", *columns])

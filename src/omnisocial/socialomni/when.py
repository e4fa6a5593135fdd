"""When to speak: the released single-cut protocol and the streaming protocol.

The benchmark: docs/benchmarks/socialomni.md#when.

Single cut (released code). At the cut time the model is asked whether the target should
speak now. `extract_yes_no` reads its reply with `socialomni.parsing.parse_yes_no_letter`:
by default as released (the option-letter rule on A / B, then "yes" / "no" as substrings,
so "I don't know" reads NO), or strictly (`parser="strict"`: whole words only, exactly
one of them, else unparsed). The letter decides: A / B map to YES / NO through
`importers.when_option_meaning` (English YES / NO texts say which is which, any other
language: A = YES). An unparseable reply is scored wrong and counted in `n_unparsed`; the
breakdown names the parser and counts the replies the other parser reads differently.

Streaming (paper-described; the edge choices are ours and fixed here):
- The model is queried at times t_k (every 1 s along the clip in the paper); the response
  time is the t of the first query answered "speak now" (`response_time`), None when no
  query in the clip says so.
- Signed offset = response_time - turn_end. With thresholds (t1, t2, t3) = (1, 2, 5) s:
      offset < 0             Interrupted (spoke before the turn ended)
      0  <= offset <= t1     Perfect     (offset exactly 0 is not an interruption)
      t1 <  offset <= t2     Delayed
      t2 <  offset <= t3     TooLate
      offset > t3, or none   NoResponse
  Each threshold belongs to the earlier (better) label: offset exactly 1 is Perfect,
  exactly 2 Delayed, exactly 5 TooLate. Comparisons allow 1e-9 s of float noise
  (3.1 - 2.1 counts as 1.0). "No response within the clip" means no query up to the
  clip's end said "speak now"; a clip ending before turn_end + t3 cannot show a later
  response, which is then NoResponse too (censored, not a late answer).
- Rates are over all items, NoResponse included: on-time = Perfect / n, early
  E = Interrupted / n, late L = (Delayed + TooLate) / n, and no-response / n.
- Tolerance-window precision / recall / F1 (`tolerance_prf`): predicted and true times
  are matched one-to-one when |p - t| <= delta (inclusive, same 1e-9 s allowance), greedily
  by increasing distance (ties: earlier true time, then earlier prediction). Greedy
  matching can find fewer pairs than an optimal assignment in crowded cases; it is
  deterministic and needs no solver. precision = matches / predictions, recall = matches /
  true times, F1 = 2PR / (P + R); a ratio with a zero denominator is 0, so no predictions,
  no truths or both empty give 0 (the spec's rule, which also scores the "nothing to find,
  nothing found" case as 0).
- `silence_baseline`: the VAD end-of-turn baseline. At t = clip_start, clip_start + step, ...
  up to clip_end it says "speak now" once the other speakers have been silent for at least
  pause_s: silence(t) = t - (latest end of the other speakers' segments that started at
  or before t); a segment still running at t (start <= t < end) means silence 0. Before
  anyone has spoken there is no turn to end and it stays quiet. It only uses speech that
  started by t (causal).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import pandas as pd

from omnisocial.socialomni.contracts import (
    ACCURACY_BREAKDOWN,
    TIMING_LABELS,
    WHEN_SCORES,
    WHEN_STREAM_SCORES,
    answered,
)
from omnisocial.socialomni.importers import when_option_meaning, written_answers
from omnisocial.socialomni.parsing import check_parser, parse_yes_no_letter
from omnisocial.socialomni.who import accuracy_row
from omnisocial.stats.tolerance import tolerance_prf

EPS = 1e-9


def extract_yes_no(text, option_a: str = "YES", option_b: str = "NO", parser: str = "released") -> str | None:
    """'YES' / 'NO' from a reply to the single-cut question, None when unparseable (module doc)."""
    letter = parse_yes_no_letter(text, parser)
    return when_option_meaning(str(option_a), str(option_b))[letter] if letter else None


def released_asks_how(item: dict, written: str | None = None) -> bool:
    """Whether the released level-2 pipeline asks the how question of this item: when the
    correct answer is the letter A (`level2_pipeline._evaluate_one`), whatever option A says;
    `written` is the answer as written (gold "YES" is not the letter A)."""
    if written is not None:
        return written.strip().upper() == "A"
    return _gold_letter(item) == "A"


def _gold_letter(item: dict) -> str:
    """The item's correct option letter (a frame without correct_answer: A = YES)."""
    letter = item.get("correct_answer")
    return str(letter) if letter in ("A", "B") else ("A" if item["gold"] == "YES" else "B")


def score_when_single(
    items: pd.DataFrame, replies, parser: str = "released", how_replies=None, raw_answers=None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Accuracy of single-cut YES/NO replies: (WHEN_SCORES per reply, ACCURACY_BREAKDOWN).

    `items`: WHEN_ITEMS or any frame with item_id and gold (option_a / option_b used when
    present). `replies`: a frame with item_id, reply and optional model, modality, or a dict
    item_id -> reply. The breakdown holds overall accuracy (95% Wilson) and accuracy by
    gold answer (YES = recall of "speak", NO = recall of "wait"). `parser`: released or strict.
    `how_replies`: optional {(model, modality, item_id): how answer}. With the released
    parser an empty how answer to a gold-YES item makes its right when answer wrong (the
    released pipeline fails the whole item on an empty answer); strict leaves it alone.
    Released compares option letters, as the released pipeline does (a swapped item, option
    A = "NO", gates the how answer on the letter A); with `raw_answers` (item_id -> the
    answer as written) a gold written "YES" or "B." never matches (docs/released-mode.md).
    """
    check_parser(parser)
    if isinstance(replies, dict):
        replies = pd.DataFrame({"item_id": list(replies), "reply": list(replies.values())})
    frame = replies.copy()
    for column in ("model", "modality"):
        if column not in frame.columns:
            frame[column] = ""
    for column in ("item_id", "gold"):
        if column not in items.columns:
            raise ValueError(f"items lack column {column}")
    lookup = {str(r["item_id"]): r for r in items.to_dict("records")}
    rows = []
    for record in frame.to_dict("records"):
        item = lookup.get(str(record["item_id"]))
        if item is None:
            raise ValueError(f"reply for unknown item {record['item_id']!r}")
        options = (item.get("option_a", "YES"), item.get("option_b", "NO"))
        prediction = extract_yes_no(record["reply"], *options, parser=parser)
        other = extract_yes_no(
            record["reply"], *options, parser="strict" if parser == "released" else "released"
        )
        correct = prediction == item["gold"]
        key = (record["model"], record["modality"], str(record["item_id"]))
        written = (raw_answers or {}).get(str(record["item_id"])) if parser == "released" else None
        if parser == "released":
            letter = parse_yes_no_letter(record["reply"], parser)
            gold_letter = written.strip().upper() if written is not None else _gold_letter(item)
            correct = bool(letter) and letter == gold_letter
        if parser == "released" and how_replies and released_asks_how(item, written) and key in how_replies:
            correct = correct and bool(str(how_replies[key] or "").strip())
        rows.append(
            {
                "model": record["model"],
                "modality": record["modality"],
                "item_id": str(record["item_id"]),
                "gold": item["gold"],
                "prediction": prediction or "",
                "parsed": prediction is not None,
                "correct": correct,
                "other_prediction": other or "",
            }
        )
    scored = WHEN_SCORES.validate(pd.DataFrame(rows, columns=WHEN_SCORES.names))
    breakdown = []
    for (model, modality), group in scored.groupby(["model", "modality"], sort=True):
        key = {"model": model, "modality": modality}
        breakdown.append({**key, **accuracy_row(group, "overall", "all", parser)})
        for gold, sub in group.groupby("gold", sort=True):
            breakdown.append({**key, **accuracy_row(sub, "gold", gold, parser)})
    return scored, ACCURACY_BREAKDOWN.validate(pd.DataFrame(breakdown, columns=ACCURACY_BREAKDOWN.names))


# --- streaming -----------------------------------------------------------------------


def response_time(decisions: Iterable[tuple[float, bool]]) -> float | None:
    """Time of the first "speak now" among (t, speak_now) decisions (taken in time order); None if none."""
    pairs = sorted(((float(t), bool(speak)) for t, speak in decisions), key=lambda p: p[0])
    for t, speak in pairs:
        if not math.isfinite(t):
            raise ValueError(f"decision time must be finite, got {t}")
        if speak:
            return t
    return None


def _check_thresholds(thresholds: Sequence[float]) -> tuple[float, float, float]:
    if len(thresholds) != 3:
        raise ValueError("thresholds must be (t1, t2, t3)")
    t1, t2, t3 = (float(t) for t in thresholds)
    if not 0 <= t1 < t2 < t3:
        raise ValueError(f"need 0 <= t1 < t2 < t3, got {thresholds}")
    return t1, t2, t3


def label_offset(offset: float | None, thresholds: Sequence[float] = (1, 2, 5)) -> str:
    """Interrupted / Perfect / Delayed / TooLate / NoResponse for a signed offset (module doc for edges)."""
    t1, t2, t3 = _check_thresholds(thresholds)
    if offset is None or (isinstance(offset, float) and math.isnan(offset)):
        return "NoResponse"
    offset = float(offset)
    if offset < -EPS:
        return "Interrupted"
    if offset <= t1 + EPS:
        return "Perfect"
    if offset <= t2 + EPS:
        return "Delayed"
    if offset <= t3 + EPS:
        return "TooLate"
    return "NoResponse"


def timing_rates(labels: Iterable[str]) -> dict:
    """Rates over all items: on_time (Perfect), early (Interrupted), late (Delayed + TooLate), no_response."""
    labels = list(labels)
    unknown = set(labels) - set(TIMING_LABELS)
    if unknown:
        raise ValueError(f"unknown timing label(s) {sorted(unknown)}")
    n = len(labels)
    counts = {label: labels.count(label) for label in TIMING_LABELS}

    def rate(k: int) -> float:
        return k / n if n else math.nan

    return {
        "n": n,
        **{f"n_{label}": counts[label] for label in TIMING_LABELS},
        "on_time": rate(counts["Perfect"]),
        "early": rate(counts["Interrupted"]),
        "late": rate(counts["Delayed"] + counts["TooLate"]),
        "no_response": rate(counts["NoResponse"]),
    }


def score_when_streaming(
    responses: pd.DataFrame, thresholds: Sequence[float] = (1, 2, 5)
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Label every (model, item) and sum up per model.

    `responses`: model (optional), item_id, turn_end, response_time (NaN/None = no response).
    Returns (WHEN_STREAM_SCORES, one row of `timing_rates` per model).
    """
    frame = responses.copy()
    if "model" not in frame.columns:
        frame["model"] = ""
    rows = []
    for record in frame.to_dict("records"):
        rt = record["response_time"]
        rt = None if rt is None or (isinstance(rt, float) and math.isnan(rt)) else float(rt)
        offset = None if rt is None else rt - float(record["turn_end"])
        rows.append(
            {
                "model": record["model"],
                "item_id": str(record["item_id"]),
                "turn_end": float(record["turn_end"]),
                "response_time": rt,
                "offset": offset,
                "label": label_offset(offset, thresholds),
            }
        )
    scored = WHEN_STREAM_SCORES.validate(pd.DataFrame(rows, columns=WHEN_STREAM_SCORES.names))
    rates = [
        {"model": model, **timing_rates(group["label"])}
        for model, group in scored.groupby("model", sort=True)
    ]
    return scored, pd.DataFrame(rates)


def silence_baseline(
    speech_segments,
    pause_s: float,
    step_s: float,
    clip_end: float,
    clip_start: float = 0.0,
    exclude_speaker: str | None = None,
) -> list[tuple[float, bool]]:
    """(t, speak_now) decisions of the VAD end-of-turn baseline (module doc); feed them to `response_time`.

    `speech_segments`: the other speakers' speech as (start, end) pairs, or a frame with
    start, end and optionally speaker (rows of `exclude_speaker`, the target, are dropped).
    """
    if pause_s < 0 or step_s <= 0:
        raise ValueError("need pause_s >= 0 and step_s > 0")
    if isinstance(speech_segments, pd.DataFrame):
        frame = speech_segments
        if exclude_speaker is not None and "speaker" in frame.columns:
            frame = frame[frame["speaker"].astype(str) != str(exclude_speaker)]
        segments = list(zip(frame["start"].astype(float), frame["end"].astype(float), strict=True))
    else:
        segments = [(float(s), float(e)) for s, e in speech_segments]
    if any(e < s for s, e in segments):
        raise ValueError("a speech segment ends before it starts")
    decisions = []
    n_steps = int(math.floor((clip_end - clip_start) / step_s + EPS))
    for k in range(n_steps + 1):
        t = clip_start + k * step_s
        started = [(s, e) for s, e in segments if s <= t + EPS]
        if not started:
            decisions.append((t, False))
            continue
        if any(s <= t + EPS and t < e - EPS for s, e in started):
            silence = 0.0
        else:
            silence = t - max(e for _, e in started)
        decisions.append((t, silence >= pause_s - EPS))
    return decisions


def score_when_replies(
    items: pd.DataFrame, replies: pd.DataFrame, parser: str = "released", written: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Single-cut scores of the when replies; the how replies among `replies` feed the released rule.

    `written` (WRITTEN_ANSWERS, `importers.import_socialomni`): the answers as written, which
    released mode compares raw (`score_when_single`'s `raw_answers`).
    """
    when = answered(replies, "when")
    if when.empty:
        return WHEN_SCORES.empty(), ACCURACY_BREAKDOWN.empty()
    how = answered(replies, "how")
    how_replies = {(r.model, r.modality, str(r.item_id)): r.reply for r in how.itertuples()}
    frame = when[["model", "modality", "item_id", "reply"]].reset_index(drop=True)
    raw_answers = written_answers(written, "when") if written is not None else None
    return score_when_single(items, frame, parser, how_replies, raw_answers)


def score_when_stream(
    responses: pd.DataFrame, thresholds: Sequence[float], deltas: Sequence[float]
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(WHEN_STREAM_SCORES, rates per model, tolerance P/R/F1 per model and delta, micro over items)."""
    if responses.empty:
        return (
            WHEN_STREAM_SCORES.empty(),
            pd.DataFrame(columns=["model", "n"]),
            pd.DataFrame(columns=["model", "delta", "n_pred", "n_true", "tp", "precision", "recall", "f1"]),
        )
    scored, rates = score_when_streaming(responses, thresholds)
    prf = []
    for model, group in scored.groupby("model", sort=True):
        for delta in deltas:
            counts = {"n_pred": 0, "n_true": 0, "tp": 0}
            for row in group.itertuples():
                predicted = [] if pd.isna(row.response_time) else [float(row.response_time)]
                table = tolerance_prf(predicted, [float(row.turn_end)], [float(delta)])
                for key in counts:
                    counts[key] += int(table[key].iloc[0])
            precision = counts["tp"] / counts["n_pred"] if counts["n_pred"] else 0.0
            recall = counts["tp"] / counts["n_true"] if counts["n_true"] else 0.0
            f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
            prf.append(
                {
                    "model": model,
                    "delta": float(delta),
                    **counts,
                    "precision": precision,
                    "recall": recall,
                    "f1": f1,
                }
            )
    return scored, rates, pd.DataFrame(prf)

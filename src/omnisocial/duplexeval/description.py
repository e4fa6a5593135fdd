"""Real-time description ("rtd"): judge windows, temporal scores, text-judge scoring.

The benchmark: docs/benchmarks/duplexeval.md#rtd.

Real-time description (3.1), per response sentence [start, end]:
- Judge window (`judge_window`): ws = max(0, start - 2), we = max(ws + 0.5, end - 2). We
  read the spec's "max(ws + 0.5, end - 2)" with ws = the window's own start: the window
  trails the sentence by the 2 s latency tolerance and is at least 0.5 s wide. So at the
  video start (start < 2) the window starts at 0, and a short or point sentence gets
  [ws, ws + 0.5]. At the video end, as in the released scorer, a window whose end passes
  the video's duration is not judged (None; the sentence then counts as not successfully
  judged); `clip_to_duration=True` instead cuts the end to the duration when at least
  0.5 s remain.
- Frames (`frame_times`), as the released scorer: n = max(1, floor(width x fps)) frames;
  one frame sits at the window's middle, more are spread evenly from ws to we inclusive;
  every time is then capped at max(ws, we - 0.01) so the last frame is decodable. (The
  floor allows 1e-9 of float noise: 1.5 s x 2 fps is 3 frames even when stored as 2.99...)
- Temporal sensitivity (`temporal_sensitivity`): the mean temporal score (0-3) over the
  sentences that were judged successfully and are relevant; 0 when there is none (as
  released: a response of filler only scores 0). Irrelevant-duration ratio = summed
  duration (end - start) of the judged irrelevant sentences / summed duration of all
  judged sentences, 0 when that total is 0 (point sentences have duration 0, so a
  response of point sentences only has ratio 0). First relevant time = the earliest start
  of a judged relevant sentence, None without one.
- Best of 4 windows (paper-described; the released scorer uses one window): with
  `best_of_windows=True` the column `window_scores` holds each sentence's scores from its
  windows (None = that window failed); the sentence's score is the maximum of the valid
  ones and it counts as judged if any window was. Placing the windows is the caller's.
- Content consistency: one judge score 0-3 per response, passed through; `to_100` maps
  any 0-3 score to score / 3 x 100.

Real-time description with a text judge (`score_rtd`): a frame-seeing judge is replaced by
the reference-similarity judge against the ground-truth captions, with the judge window's
timing made explicit. For a sentence with judge window [ws, we] (`streaming.judge_window`)
and each ground-truth event at time t with caption c:
    cap(t) = 3 if ws <= t <= we (the window shows the event: timely),
             2 if ws - late_s[0] <= t < ws (slightly late), 1 if ws - late_s[1] <= t <
             ws - late_s[0] (clearly late), else 0 (another moment or not yet happened);
    temporal score = max over events of min(cap(t), level(sentence vs c)), level = the
    judge's 0-3 "temporal" level of the pair;
    is_relevant = 1 when the sentence's best similarity to any caption (or, without
    captions, to the item's answers) reaches `relevance_threshold` (filler is not);
    judged = the window lies inside the video (else not judged, as released).
Without timed captions (released data) the references are answer1/answer2 and the cap is
3. `n_frames` records how many frames a frame-seeing judge would get (2 fps). Content
consistency: the judge's 0-3 "content" level of the joined response against answer1 and
answer2. For the caption baseline with delay d (point sentences, window [t + d - 2, t + d -
1.5]) the expected temporal score is 3 for 1.5 <= d <= 2, 2 for 2 < d <= 4, 1 for 4 < d
<= 7, else 0; its first relevant time is the first event time + d.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from omnisocial.duplexeval.contracts import RTD_SCORES, RTD_SENTENCES, RTD_SPLITS
from omnisocial.duplexeval.metrics import responses_by_item
from omnisocial.importing import nan_to_none

TOLERANCE_S = 2.0


MIN_WIDTH_S = 0.5


EPS = 1e-9


def judge_window(
    start: float,
    end: float,
    video_duration: float | None = None,
    clip_to_duration: bool = False,
    tolerance_s: float = TOLERANCE_S,
    min_width_s: float = MIN_WIDTH_S,
) -> tuple[float, float] | None:
    """(ws, we) = (max(0, start - 2), max(ws + 0.5, end - 2)), or None past the video's end (module doc)."""
    start, end = float(start), float(end)
    if not (math.isfinite(start) and math.isfinite(end)) or start < 0 or end < start:
        raise ValueError(f"need 0 <= start <= end, got start={start}, end={end}")
    window_start = max(0.0, start - tolerance_s)
    window_end = max(window_start + min_width_s, end - tolerance_s)
    if video_duration is not None and window_end > float(video_duration) + EPS:
        if not clip_to_duration:
            return None
        window_end = float(video_duration)
        if window_end - window_start < min_width_s - EPS:
            return None
    return window_start, window_end


def judge_windows(sentences: pd.DataFrame, video_duration: float | None = None, **kwargs) -> pd.DataFrame:
    """`sentences` (start, end, ...) with window_start, window_end (NaN when not judgeable) and judgeable."""
    out = sentences.copy()
    windows = [
        judge_window(s, e, video_duration, **kwargs) for s, e in zip(out["start"], out["end"], strict=True)
    ]
    out["window_start"] = [w[0] if w else math.nan for w in windows]
    out["window_end"] = [w[1] if w else math.nan for w in windows]
    out["judgeable"] = [w is not None for w in windows]
    return out


def frame_times(window: tuple[float, float], fps: float = 2.0) -> np.ndarray:
    """Frame times inside a judge window, as the released scorer samples them (module doc)."""
    window_start, window_end = (float(v) for v in window)
    if fps <= 0:
        raise ValueError("fps must be > 0")
    width = window_end - window_start
    if width <= 0:
        return np.zeros(0)
    count = max(1, int(math.floor(width * fps + EPS)))
    if count == 1:
        times = np.array([window_start + width / 2])
    else:
        times = window_start + np.arange(count) * width / (count - 1)
    return np.minimum(times, max(window_start, window_end - 0.01))


def best_window_score(window_scores: Sequence[float | None]) -> float | None:
    """The best of a sentence's window scores (None = failed window); None when all failed."""
    valid = [
        float(s) for s in window_scores if s is not None and not (isinstance(s, float) and math.isnan(s))
    ]
    return max(valid) if valid else None


def to_100(score: float) -> float:
    """Map a 0-3 judge score to 0-100 (score / 3 x 100); NaN stays NaN."""
    score = float(score)
    if math.isnan(score):
        return math.nan
    if not 0 <= score <= 3:
        raise ValueError(f"score must lie in [0, 3], got {score}")
    return score / 3 * 100


def temporal_sensitivity(sentences: pd.DataFrame, best_of_windows: bool = False) -> dict:
    """Temporal sensitivity and relevance statistics of one response (module doc).

    `sentences`: start, end, is_relevant (0/1), judged_ok (bool) and temporal_score (0-3),
    or window_scores (sequences) with `best_of_windows=True`.
    """
    frame = sentences.copy()
    if best_of_windows:
        best = [best_window_score(scores) for scores in frame["window_scores"]]
        frame["temporal_score"] = [math.nan if b is None else b for b in best]
        frame["judged_ok"] = [b is not None for b in best]
    ok = frame["judged_ok"].astype(bool).to_numpy()
    relevant = ok & (frame["is_relevant"].fillna(0).astype(int).to_numpy() == 1)
    scores = frame["temporal_score"].astype(float).to_numpy()
    if np.any(relevant & ~((scores >= 0) & (scores <= 3))):
        raise ValueError("temporal scores of judged relevant sentences must lie in [0, 3]")
    duration = (frame["end"].astype(float) - frame["start"].astype(float)).clip(lower=0).to_numpy()
    total = float(duration[ok].sum())
    irrelevant = float(duration[ok & ~relevant].sum())
    mean = float(scores[relevant].mean()) if relevant.any() else 0.0
    return {
        "n_sentences": len(frame),
        "n_judged": int(ok.sum()),
        "n_relevant": int(relevant.sum()),
        "temporal_score": mean,
        "temporal_score_100": to_100(mean),
        "irrelevant_duration_ratio": irrelevant / total if total > 0 else 0.0,
        "first_relevant_time": float(frame["start"].astype(float).to_numpy()[relevant].min())
        if relevant.any()
        else None,
    }


def timing_cap(event_time: float, window: tuple[float, float], late_s: Sequence[float] = (2.0, 5.0)) -> int:
    """The highest temporal score an event allows for a window (module doc): 3 inside, 2 / 1 late, 0 else."""
    ws, we = window
    first, second = (float(v) for v in late_s)
    if ws - EPS <= event_time <= we + EPS:
        return 3
    if ws - first - EPS <= event_time < ws - EPS:
        return 2
    if ws - second - EPS <= event_time < ws - first - EPS:
        return 1
    return 0


def score_rtd(
    responses: pd.DataFrame,
    items: pd.DataFrame,
    events: pd.DataFrame,
    judge,
    late_s: Sequence[float] = (2.0, 5.0),
    relevance_threshold: float = 0.5,
    judge_fps: float = 2.0,
    models: Sequence[str] = (),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Real-time description: per sentence and per (model, item) scores with a text judge (module
    doc); `models` are scored on every item even without a sentence (an empty response: temporal
    0, ratio 0, no first relevant time, content the judge's empty-response score)."""
    rtd_items = items[items["split"].isin(RTD_SPLITS)]
    rtd = responses[responses["split"].isin(RTD_SPLITS)]
    sentence_rows, score_rows = [], []
    for model, item, own in responses_by_item(rtd, rtd_items, models):
        item_events = events[(events["split"] == item["split"]) & (events["item_id"] == item["item_id"])]
        captions = list(zip(item_events["t"].astype(float), item_events["text"], strict=True))
        answers = [a for a in (item["answer1"], item["answer2"]) if str(a).strip()]
        duration = nan_to_none(item["video_duration"])
        texts = own["text"].tolist()
        relevance_refs = [c for _, c in captions] or answers or [item["question_text"]]
        relevance = (
            [s.similarity for s in judge.score_many([(t, relevance_refs) for t in texts], "temporal")]
            if texts
            else []  # an empty response (a streamed model that never spoke): nothing to embed
        )
        windows, pairs, owners = _judged_pairs(own, captions, answers, duration, late_s)
        levels = judge.score_many(pairs, "temporal") if pairs else []
        best = _best_per_sentence(owners, levels)
        frame_rows = []
        for k, sentence in enumerate(own.to_dict("records")):
            window = windows[k]
            relevant = int(relevance[k] is not None and relevance[k] >= relevance_threshold - EPS)
            score, event = best.get(k, (0.0, None)) if window is not None else (math.nan, None)
            frame_rows.append(
                {
                    "model": model,
                    "split": item["split"],
                    "item_id": item["item_id"],
                    "sentence_index": int(sentence["sentence_index"]),
                    "text": sentence["text"],
                    "start": float(sentence["start"]),
                    "end": float(sentence["end"]),
                    "window_start": window[0] if window else None,
                    "window_end": window[1] if window else None,
                    "judged_ok": window is not None,
                    "n_frames": len(frame_times(window, judge_fps)) if window else 0,
                    "event_index": None if event is None else int(item_events["event_index"].iloc[event]),
                    "temporal_score": score,
                    "is_relevant": relevant,
                    "relevance": relevance[k],
                }
            )
        sentence_rows += frame_rows
        summary = temporal_sensitivity(
            pd.DataFrame(frame_rows, columns=["start", "end", "is_relevant", "judged_ok", "temporal_score"])
        )
        content = judge.score(" ".join(texts), answers, "content").score if answers else math.nan
        first_event = float(item_events["t"].min()) if len(item_events) else None
        score_rows.append(_rtd_score_row(model, item, summary, first_event, content))
    return (
        RTD_SENTENCES.validate(pd.DataFrame(sentence_rows, columns=RTD_SENTENCES.names)),
        RTD_SCORES.validate(pd.DataFrame(score_rows, columns=RTD_SCORES.names)),
    )


def _judged_pairs(own: pd.DataFrame, captions: list, answers: list, duration, late_s: Sequence[float]):
    """(each sentence's judge window or None, the (sentence, references) pairs to judge, and
    each pair's (sentence, event or None, timing cap)): with captions, every caption inside a
    sentence's timing cap (`timing_cap`); without, the item's answers at the full cap 3."""
    pairs, owners, windows = [], [], []
    for k, sentence in enumerate(own.to_dict("records")):
        window = judge_window(sentence["start"], sentence["end"], duration)
        windows.append(window)
        if window is None:
            continue
        if captions:
            for e, (t, caption) in enumerate(captions):
                cap = timing_cap(t, window, late_s)
                if cap:
                    pairs.append((sentence["text"], [caption]))
                    owners.append((k, e, cap))
        elif answers:
            pairs.append((sentence["text"], answers))
            owners.append((k, None, 3))
    return windows, pairs, owners


def _best_per_sentence(owners: list, levels: list) -> dict[int, tuple[float, int | None]]:
    """{sentence: (its best judged level capped by its timing, the event it matched)}."""
    best: dict[int, tuple[float, int | None]] = {}
    for (k, e, cap), result in zip(owners, levels, strict=True):
        value = min(float(cap), float(result.score))
        if k not in best or value > best[k][0]:
            best[k] = (value, e)
    return best


def _rtd_score_row(model: str, item, summary: Mapping, first_event: float | None, content: float) -> dict:
    """The RTD_SCORES row of one (model, item): the temporal summary, the first relevant time
    against the first event, and the content score."""
    first_relevant = summary["first_relevant_time"]
    return {
        "model": model,
        "split": item["split"],
        "item_id": item["item_id"],
        **{key: summary[key] for key in ("n_sentences", "n_judged", "n_relevant", "temporal_score")},
        "temporal_100": summary["temporal_score_100"],
        "irrelevant_duration_ratio": summary["irrelevant_duration_ratio"],
        "first_relevant_time": first_relevant,
        "first_event_time": first_event,
        "first_relevant_offset": None
        if first_relevant is None or first_event is None
        else first_relevant - first_event,
        "content_score": content,
        "content_100": to_100(content) if not math.isnan(content) else math.nan,
    }

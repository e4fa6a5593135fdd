"""Streaming real-time behaviour (benchmarks.md 3.1-3.3): windows, temporal scores, reminders.

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

Proactive reminders (3.2, `reminder_scores`): for each event time t, the sentences whose
time (start; a point sentence's time) lies in [t, t + 10] inclusive (1e-9 s allowance) are
joined in time order with spaces and judged 0/1 by the judge callable; no text in the
window scores 0 without calling the judge. The sample scores 1 only if every event
scores 1. A sample without events (the correction split) is judged once on the whole
response, as the released scorer does.

Judge calibration (3.3): Spearman correlation of automatic and human scores.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

TOLERANCE_S = 2.0
MIN_WIDTH_S = 0.5
REMINDER_WINDOW_S = 10.0
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


def reminder_scores(
    events: Sequence[float],
    response_sentences: pd.DataFrame,
    judge: Callable[[str, float | None], int],
    window_s: float = REMINDER_WINDOW_S,
) -> dict:
    """Per-event 0/1 scores and the all-events-must-pass sample score (module doc).

    `response_sentences`: text and start (STREAM_RESPONSES rows of one item). `judge(text,
    event_time)` returns 0/1 (event_time None for the whole-response judgement). Returns
    {"events": frame(event_index, time, text, judged, score), "sample_score": 0/1}.
    """
    frame = response_sentences[["text", "start"]].copy()
    frame["start"] = frame["start"].astype(float)
    frame = frame.sort_values("start", kind="stable")

    def call(text: str, time: float | None) -> int:
        score = judge(text, time)
        if isinstance(score, (bool, np.bool_)):
            score = int(score)
        if score not in (0, 1):
            raise ValueError(f"judge must return 0 or 1, got {score!r}")
        return int(score)

    rows = []
    if len(events) == 0:
        text = " ".join(t.strip() for t in frame["text"] if str(t).strip()).strip()
        score = call(text, None) if text else 0
        rows.append({"event_index": 0, "time": None, "text": text, "judged": bool(text), "score": score})
    for index, t in enumerate(events):
        t = float(t)
        inside = frame[(frame["start"] >= t - EPS) & (frame["start"] <= t + window_s + EPS)]
        text = " ".join(s.strip() for s in inside["text"] if str(s).strip()).strip()
        score = call(text, t) if text else 0
        rows.append({"event_index": index, "time": t, "text": text, "judged": bool(text), "score": score})
    table = pd.DataFrame(rows, columns=["event_index", "time", "text", "judged", "score"])
    return {"events": table, "sample_score": int(bool(len(table)) and bool((table["score"] == 1).all()))}


def judge_calibration(auto, human) -> dict:
    """Spearman rho (and p-value) between automatic and human scores, pairs with a missing value dropped.

    Series are aligned by index, other sequences by position. rho is NaN with fewer than
    3 pairs or when either side is constant.
    """
    if isinstance(auto, pd.Series) and isinstance(human, pd.Series):
        auto, human = auto.align(human, join="inner")
    a = np.asarray(auto, dtype=float)
    h = np.asarray(human, dtype=float)
    if a.shape != h.shape:
        raise ValueError("auto and human must have the same length")
    keep = ~(np.isnan(a) | np.isnan(h))
    a, h = a[keep], h[keep]
    n = int(len(a))
    if n < 3 or np.all(a == a[0]) or np.all(h == h[0]):
        return {"rho": math.nan, "p_value": math.nan, "n": n}
    result = stats.spearmanr(a, h)
    return {"rho": float(result.statistic), "p_value": float(result.pvalue), "n": n}

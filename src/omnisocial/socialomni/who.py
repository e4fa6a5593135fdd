"""Who is speaking and what are they saying: scoring, prompts, item building.

The benchmark: docs/benchmarks/socialomni.md#who.

Letter extraction (`extract_letter`): `socialomni.parsing.parse_choice` with the item's
option letters, by default the released rule (`parser="released"`), or the strict one
(`parser="strict"`, which does not read the article "a" as option A). Unparseable replies
are scored wrong and counted separately (`n_unparsed`); the summary names the parser and
counts the replies the two parsers read differently (`n_parser_differs`).

`score_who` scores the (item, reply) pairs it is given (items without a reply are not
scored; replies for unknown items are an error) per model and modality:
- accuracy with the 95% Wilson interval, unparseable replies counted wrong;
- accuracy on consistent and inconsistent items and the gap = consistent - inconsistent;
- per-option accuracy (grouped by the correct option), the 4 x 4 confusion matrix plus an
  "unparsed" column, and accuracy per domain and subcategory when the items carry them;
- `error_type` per wrong answer, from the options' "<speaker> said <utterance>" text:
  "speaker" (right utterance, wrong speaker), "content" (right speaker, wrong utterance),
  "both", "unparsed", "unknown" (options without " said " or identical to the truth).

`build_who_items` makes 4-way items for a new corpus from a timed transcript. The options
cross speaker and content in a 2 x 2 design: with the target segment (speaker S, words U),
one other speaker S' and one other utterance U', the options are S+U (the answer), S+U',
S'+U and S'+U'. Each speaker and each utterance appears in exactly two options, so neither
cue alone identifies the answer. See its docstring for the remaining choices.
"""

from __future__ import annotations

import itertools
import json
import math
import string
from dataclasses import dataclass

import numpy as np
import pandas as pd

from omnisocial.socialomni.contracts import ACCURACY_BREAKDOWN, LETTERS, WHO_ITEMS, WHO_SCORES, answered
from omnisocial.socialomni.importers import format_clock, split_said, written_answers
from omnisocial.socialomni.parsing import check_parser, parse_choice
from omnisocial.stats.sdt import wilson_interval
from omnisocial.stats.tests import mcnemar_exact


def extract_letter(text, letters=LETTERS, parser: str = "released") -> str | None:
    """The option letter of a free-text reply, or None when it has none (`parsing.parse_choice`)."""
    return parse_choice(text, letters, parser)


def item_letters(item) -> str:
    """The letters of an item's non-empty options (A-D when the item carries no option texts)."""
    texts = [item.get(f"option_{letter.lower()}") for letter in LETTERS]
    if all(text is None for text in texts):
        return "".join(LETTERS)
    return "".join(letter for letter, text in zip(LETTERS, texts, strict=True) if str(text or "").strip())


# --- scoring -------------------------------------------------------------------------


def _norm(text: str) -> str:
    text = text.casefold().translate(str.maketrans("", "", string.punctuation + "“”‘’"))
    return " ".join(text.split())


def _error_type(item: dict, prediction: str | None) -> str:
    truth = item["correct_answer"]
    if prediction is None:
        return "unparsed"
    if prediction == truth:
        return "none"
    chosen = split_said(str(item.get(f"option_{prediction.lower()}", "")))
    right = split_said(str(item.get(f"option_{truth.lower()}", "")))
    if chosen is None or right is None:
        return "unknown"
    same_speaker = _norm(chosen[0]) == _norm(right[0])
    same_content = _norm(chosen[1]) == _norm(right[1])
    if same_speaker and same_content:
        return "unknown"
    if same_content:
        return "speaker"
    if same_speaker:
        return "content"
    return "both"


def _replies_frame(replies) -> pd.DataFrame:
    if isinstance(replies, dict):
        replies = pd.DataFrame({"item_id": list(replies), "reply": list(replies.values())})
    frame = replies.copy()
    for column in ("item_id", "reply"):
        if column not in frame.columns:
            raise ValueError(f"replies lack column {column}")
    for column in ("model", "modality"):
        if column not in frame.columns:
            frame[column] = ""
    frame["item_id"] = frame["item_id"].astype(str)
    duplicated = frame.duplicated(["model", "modality", "item_id"])
    if duplicated.any():
        row = frame[duplicated].iloc[0]
        raise ValueError(f"several replies for model {row['model']!r} item {row['item_id']!r}")
    return frame


def _items_lookup(items: pd.DataFrame, needed: tuple[str, ...]) -> dict[str, dict]:
    missing = [c for c in needed if c not in items.columns]
    if missing:
        raise ValueError(f"items lack column(s) {', '.join(missing)}")
    records = items.assign(item_id=items["item_id"].astype(str)).to_dict("records")
    return {record["item_id"]: record for record in records}


def accuracy_row(frame: pd.DataFrame, breakdown: str, level: str, parser: str = "") -> dict:
    """n, n_correct, n_unparsed, accuracy, 95% Wilson interval and parser disagreements of a scored group."""
    n = len(frame)
    differs = (
        int((frame["prediction"] != frame["other_prediction"]).sum()) if "other_prediction" in frame else 0
    )
    k = int(frame["correct"].sum())
    low, high = wilson_interval(k, n)
    return {
        "breakdown": breakdown,
        "level": level,
        "n": n,
        "n_correct": k,
        "n_unparsed": int((~frame["parsed"]).sum()),
        "accuracy": k / n if n else math.nan,
        "ci_low": low,
        "ci_high": high,
        "parser": parser,
        "n_parser_differs": differs,
    }


@dataclass
class WhoScores:
    items: pd.DataFrame  # WHO_SCORES, one row per (model, modality, item)
    summary: pd.DataFrame  # one row per (model, modality)
    breakdown: pd.DataFrame  # ACCURACY_BREAKDOWN
    confusion: pd.DataFrame  # model, modality, truth, A, B, C, D, unparsed


def released_consistency(item) -> str:
    """The consistency split as the released analysis groups it: metadata.consistency as written
    ("Consistent" is its own group), "unknown" when absent (scripts/analyze_level1_ablation.py)."""
    try:
        meta = json.loads(item.get("metadata_json") or "{}")
    except (TypeError, json.JSONDecodeError):
        meta = {}
    if not isinstance(meta, dict) or "consistency" not in meta:  # e.g. built items: the column
        return str(item.get("consistency") or "unknown")
    return str(meta["consistency"] or "unknown")


def _is_correct(prediction: str | None, item: dict, written: str | None) -> bool:
    """Released with the answer as written: the raw text upper-cased must equal the letter
    (level1_pipeline._score: "B." never matches); otherwise the item's letter."""
    if written is None:
        return prediction == item["correct_answer"]
    gold = written.strip().upper()
    return bool(gold) and prediction == gold


def score_who(
    items: pd.DataFrame, replies, parser: str = "released", raw_answers=None, copies=()
) -> WhoScores:
    """Score who-replies against items (WHO_ITEMS or any frame with item_id, correct_answer).

    `replies`: a frame with item_id, reply and optional model, modality columns, or a dict
    item_id -> reply. Optional item columns used when present: consistency, domain,
    subcategory, option_a..option_d (for `error_type` and the item's letters).
    `parser`: released or strict (`socialomni.parsing`). Released reads letters A-D whatever
    the item's option count and groups the consistency breakdown by the spelling as written
    (`released_consistency`), as the released pipeline and analysis do; with `raw_answers`
    (item_id -> the correct answer as written, `importers.ReadOptions.raw_answers`) it also
    compares the answer as written (docs/released-mode.md).

    `copies` (released only; `importers.ReadOptions.duplicate_copies`): earlier copies of a
    duplicated item id, each scored with its id's reply against its own answer (as written,
    its "written") and counted in every breakdown but the consistency split, as the released
    pipeline counts every copy and its analysis keys by id (the last copy, the item); not in
    `items` of the result (one row per item).

    Released mode adds the breakdown row ("analysis", "all"): the accuracy the released
    analysis script reports (`all_acc` of scripts/analyze_level1_ablation.py), which reads the
    pipeline's results keyed by id, so one row per id, the last copy; "overall" stays the
    pipeline's own accuracy, every copy counted. The two differ only where an id repeats.
    """
    check_parser(parser)
    released = parser == "released"
    lookup = _items_lookup(items, ("item_id", "correct_answer"))
    frame = _replies_frame(replies)
    extra: dict[str, list[dict]] = {}
    for copy in copies if released else ():
        extra.setdefault(str(copy["item_id"]), []).append(copy)
    rows, groups, copy_rows = [], [], []
    for record in frame.to_dict("records"):
        item = lookup.get(record["item_id"])
        if item is None:
            raise ValueError(f"reply for unknown item {record['item_id']!r}")
        copy_rows += [_copy_row(record, copy, parser) for copy in extra.get(record["item_id"], [])]
        written = (raw_answers or {}).get(record["item_id"]) if released else None
        groups.append(released_consistency(item) if released else item.get("consistency") or "unknown")
        rows.append(_scored_row(record, item, parser, written))
    scored = WHO_SCORES.validate(pd.DataFrame(rows, columns=WHO_SCORES.names))
    grouped = scored.assign(consistency_group=pd.Series(groups, index=scored.index, dtype=object))
    if copy_rows:
        grouped = pd.concat([grouped, pd.DataFrame(copy_rows)], ignore_index=True)
    breakdown, summary, confusion = [], [], []
    for (model, modality), group in grouped.groupby(["model", "modality"], sort=True):
        key = {"model": model, "modality": modality}
        overall = accuracy_row(group, "overall", "all", parser)
        breakdown += _breakdown_rows(key, group, overall, parser)
        summary.append(_summary_row(key, group, overall, parser))
        for truth in LETTERS:
            sub = group[group["correct_answer"] == truth]
            counts = {letter: int((sub["prediction"] == letter).sum()) for letter in LETTERS}
            confusion.append({**key, "truth": truth, **counts, "unparsed": int((~sub["parsed"]).sum())})
    return WhoScores(
        items=scored,
        summary=pd.DataFrame(
            summary,
            columns=["model", "modality", "n", "n_correct", "n_unparsed", "accuracy", "ci_low", "ci_high"]
            + ["acc_consistent", "acc_inconsistent", "consistency_gap", "parser", "n_parser_differs"],
        ),
        breakdown=ACCURACY_BREAKDOWN.validate(pd.DataFrame(breakdown, columns=ACCURACY_BREAKDOWN.names)),
        confusion=pd.DataFrame(confusion, columns=["model", "modality", "truth", *LETTERS, "unparsed"]),
    )


def _scored_row(record: dict, item: dict, parser: str, written: str | None) -> dict:
    """The WHO_SCORES row of one reply: the letter read with `parser` (released: A-D whatever
    the item's options; strict: the item's letters) and, for comparison, with the other."""
    released = parser == "released"
    letters = "".join(LETTERS) if released else item_letters(item)
    prediction = extract_letter(record["reply"], letters, parser)
    other_letters = item_letters(item) if released else "".join(LETTERS)
    other = extract_letter(record["reply"], other_letters, "strict" if released else "released")
    return {
        "model": record["model"],
        "modality": record["modality"],
        "item_id": record["item_id"],
        "correct_answer": item["correct_answer"],
        "prediction": prediction or "",
        "parsed": prediction is not None,
        "correct": _is_correct(prediction, item, written),
        "error_type": _error_type(item, prediction),
        "consistency": item.get("consistency") or "unknown",
        "domain": item.get("domain") or "",
        "subcategory": item.get("subcategory") or "",
        "other_prediction": other or "",
    }


def _copy_row(record: dict, copy: dict, parser: str) -> dict:
    """An earlier copy of a duplicated item id scored with its id's reply against its own answer
    (released only), out of the consistency split (the released analysis keys by id)."""
    prediction = extract_letter(record["reply"], "".join(LETTERS), parser)
    return {
        "model": record["model"],
        "modality": record["modality"],
        "correct_answer": copy["correct_answer"],
        "prediction": prediction or "",
        "parsed": prediction is not None,
        "correct": _is_correct(prediction, copy, copy.get("written")),
        "domain": copy.get("domain") or "",
        "subcategory": copy.get("subcategory") or "",
        "other_prediction": extract_letter(record["reply"], item_letters(copy), "strict") or "",
        "consistency_group": "",  # the released analysis keys by id: not in its split
    }


def _breakdown_rows(key: dict, group: pd.DataFrame, overall: dict, parser: str) -> list[dict]:
    """ACCURACY_BREAKDOWN rows of one model and modality: overall, the released analysis's own
    accuracy (released only: one row per id, copies left out), then by consistency, correct
    option, domain and subcategory."""
    rows = [{**key, **overall}]
    if parser == "released":
        by_id = group[group["consistency_group"] != ""]
        rows.append({**key, **accuracy_row(by_id, "analysis", "all", parser)})
    for column, name in (
        ("consistency_group", "consistency"),
        ("correct_answer", "correct_option"),
        ("domain", "domain"),
        ("subcategory", "subcategory"),
    ):
        for level, sub in group.groupby(column, sort=True):
            if level != "":  # consistency "unknown" (released items without it) is its own row
                rows.append({**key, **accuracy_row(sub, name, level, parser)})
    return rows


def _summary_row(key: dict, group: pd.DataFrame, overall: dict, parser: str) -> dict:
    """One model and modality's summary: overall accuracy and the consistency gap."""
    by_consistency = {
        level: sub["correct"].mean() for level, sub in group.groupby("consistency_group") if len(sub)
    }
    consistent = by_consistency.get("consistent", math.nan)
    inconsistent = by_consistency.get("inconsistent", math.nan)
    return {
        **key,
        **{k: overall[k] for k in ("n", "n_correct", "n_unparsed", "accuracy", "ci_low", "ci_high")},
        "acc_consistent": consistent,
        "acc_inconsistent": inconsistent,
        "consistency_gap": consistent - inconsistent,
        "parser": parser,
        "n_parser_differs": overall["n_parser_differs"],
    }


def mcnemar_models(scores: pd.DataFrame, pairs: list[tuple[str, str]] | None = None) -> pd.DataFrame:
    """Exact McNemar tests between models on the same items, per modality.

    `scores`: a WHO_SCORES-like frame (model, modality, item_id, correct). `pairs`: the
    (model_a, model_b) pairs to test; default every pair of models present in a modality.
    b counts items model_a got right and model_b wrong (see `omnisocial.stats.tests`).
    """
    rows = []
    for modality, group in scores.groupby("modality", sort=True):
        correct = {
            model: sub.set_index(sub["item_id"].astype(str))["correct"].astype(bool)
            for model, sub in group.groupby("model", sort=True)
        }
        wanted = pairs if pairs is not None else list(itertools.combinations(sorted(correct), 2))
        for model_a, model_b in wanted:
            if model_a not in correct or model_b not in correct:
                continue
            result = mcnemar_exact(correct[model_a], correct[model_b])
            common = correct[model_a].index.intersection(correct[model_b].index)
            rows.append(
                {
                    "modality": modality,
                    "model_a": model_a,
                    "model_b": model_b,
                    "acc_a": float(correct[model_a][common].mean()) if len(common) else math.nan,
                    "acc_b": float(correct[model_b][common].mean()) if len(common) else math.nan,
                    **result,
                }
            )
    columns = ["modality", "model_a", "model_b", "acc_a", "acc_b", "b", "c", "n_discordant", "n_items"]
    return pd.DataFrame(rows, columns=columns + ["statistic", "p_value"])


# --- prompts -------------------------------------------------------------------------

MODALITY_INPUTS = {
    "audio_video": "You are given a short video clip of a conversation with its audio track.",
    "audio": (
        "You are given only the audio track of a short clip of a conversation. "
        "There is no video: answer from what you hear."
    ),
    "video": (
        "You are given only the video frames of a short clip of a conversation, without any audio. "
        "Answer from what you see (lip movements, gestures, on-screen text)."
    ),
    "audio_masked_video": (
        "You are given the audio track of a short clip of a conversation together with its video, "
        "but the video frames are masked (blacked out), so the people cannot be seen. "
        "Answer from what you hear."
    ),
    "transcript": (
        "You are given only the automatic transcript of a short clip of a conversation (it may "
        "contain errors), without the video or the audio. Answer from the transcript."
    ),
}
_HAS_AUDIO = {"audio_video", "audio", "audio_masked_video"}


def who_prompt(item, modality: str, include_asr: bool = False) -> str:
    """The text prompt of a who item for one input modality.

    `item`: a WHO_ITEMS row (dict or Series). `modality`: audio_video, audio, video or
    audio_masked_video; the first sentence tells the model which inputs it gets. With
    `include_asr` the item's transcript is added, but only for modalities with audio (a
    transcript would hand the audio to a video-only model). `transcript` (the transcript-only
    ablation, socialomni.requests): the transcript is always added, "(no transcript)" when
    the item has none.
    """
    if modality not in MODALITY_INPUTS:
        raise ValueError(f"unknown modality {modality!r}; expected one of {', '.join(MODALITY_INPUTS)}")
    get = item.get if hasattr(item, "get") else item.__getitem__
    parts = [MODALITY_INPUTS[modality], str(get("question")).strip()]
    asr = str(get("asr_content") or "").strip() if include_asr or modality == "transcript" else ""
    if modality == "transcript":
        parts.append(f"Automatic transcript of the clip (may contain errors):\n{asr or '(no transcript)'}")
    elif asr and modality in _HAS_AUDIO:
        parts.append(f"Automatic transcript of the clip (may contain errors):\n{asr}")
    letters = [letter for letter in LETTERS if str(get(f"option_{letter.lower()}") or "").strip()]
    parts.append(
        "Options:\n" + "\n".join(f"{letter}. {get(f'option_{letter.lower()}')}" for letter in letters)
    )
    listed = ", ".join(letters[:-1]) + f" or {letters[-1]}"
    parts.append(f"Answer with the letter of the correct option ({listed}) only.")
    return "\n\n".join(parts)


# --- building items for new corpora --------------------------------------------------


def _window(clip_window) -> tuple[float, float]:
    if isinstance(clip_window, (int, float)):
        before, after = float(clip_window), 0.0
    else:
        before, after = (float(v) for v in clip_window)
    if before < 0 or after < 0 or not math.isfinite(before + after):
        raise ValueError(f"clip_window must be >= 0, got {clip_window!r}")
    return before, after


def build_who_items(
    transcript: pd.DataFrame,
    n_items: int,
    seed: int,
    clip_window: float | tuple[float, float] = 10.0,
    corpus_id: str = "built",
    video_path: str = "",
) -> pd.DataFrame:
    """Sample `n_items` 4-way who items (WHO_ITEMS rows, review_status 'unreviewed').

    `transcript`: speaker, start, end, text (seconds, one conversation). A target is a
    segment with text and positive duration that no other speaker's segment overlaps
    (overlapping speech makes "who is speaking" ambiguous). `clip_window`: seconds of
    context before the target (or (before, after)): the clip is
    [max(0, start - before), end + after] and the question's times are relative to its
    start. The wrong speaker S' is drawn among the other speakers who talk inside the clip
    (any other speaker when none does); the wrong utterance U' among other segments whose
    normalised text differs from U and that do not overlap the target, preferring those
    inside the clip. Targets, S', U' and the option order come from one seeded generator.
    Raises ValueError when fewer than `n_items` targets qualify.
    """
    for column in ("speaker", "start", "end", "text"):
        if column not in transcript.columns:
            raise ValueError(f"transcript lacks column {column}")
    if n_items < 1:
        raise ValueError("n_items must be >= 1")
    before, after = _window(clip_window)
    segments = _spoken_segments(transcript)
    speakers = sorted(segments["speaker"].unique())
    candidates = _who_targets(segments, speakers)
    if len(candidates) < n_items:
        raise ValueError(
            f"only {len(candidates)} transcript segments can be who targets (need {n_items}): each needs a "
            "non-overlapped utterance, another speaker and a different utterance in the transcript"
        )
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(len(candidates), size=n_items, replace=False).tolist())
    rows = []
    for number, index in enumerate(chosen):
        i, contents = candidates[index]
        clip = (max(0.0, segments.loc[i, "start"] - before), segments.loc[i, "end"] + after)
        options = _who_options(segments, i, contents, speakers, clip, rng)
        rows.append(_who_item(f"{corpus_id}_{number:04d}", segments.loc[i], clip, options, video_path))
    return WHO_ITEMS.validate(pd.DataFrame(rows, columns=WHO_ITEMS.names))


WHO_KINDS = (  # the four options of a who item, as built: the target first
    "target",
    "right_speaker_wrong_content",
    "wrong_speaker_right_content",
    "wrong_speaker_wrong_content",
)


def _spoken_segments(transcript: pd.DataFrame) -> pd.DataFrame:
    """The transcript's segments with text and positive duration, in time order, each with its
    normalised text (`norm`)."""
    segments = transcript[["speaker", "start", "end", "text"]].copy()
    segments["speaker"] = segments["speaker"].astype(str).str.strip()
    segments["text"] = segments["text"].fillna("").astype(str).str.strip()
    segments["start"] = segments["start"].astype(float)
    segments["end"] = segments["end"].astype(float)
    segments = segments[(segments["text"] != "") & (segments["end"] > segments["start"])]
    segments = segments.sort_values(["start", "end", "speaker"], kind="stable").reset_index(drop=True)
    segments["norm"] = segments["text"].map(_norm)
    return segments


def _who_targets(segments: pd.DataFrame, speakers: list[str]) -> list[tuple[int, pd.DataFrame]]:
    """(segment index, the other utterances that may stand as its wrong content) of every
    segment no other speaker overlaps, with another speaker and a different utterance."""
    starts, ends = segments["start"].to_numpy(), segments["end"].to_numpy()
    candidates = []
    for i, seg in segments.iterrows():
        overlapping = (starts < seg["end"]) & (ends > seg["start"])
        overlapping[i] = False
        if (overlapping & (segments["speaker"] != seg["speaker"]).to_numpy()).any():
            continue
        others = [s for s in speakers if s != seg["speaker"]]
        contents = segments[(segments["norm"] != seg["norm"]) & ~overlapping]
        contents = contents.drop(index=i, errors="ignore")
        if not others or contents.empty or seg["norm"] == "":
            continue
        candidates.append((i, contents))
    return candidates


def _who_options(segments, i: int, contents, speakers: list[str], clip: tuple[float, float], rng):
    """(the four option texts in WHO_KINDS order, the seeded option order): the wrong speaker
    among those talking inside the clip (else any other), the wrong utterance preferably
    inside it."""
    seg = segments.loc[i]
    clip_start, clip_end = clip
    in_clip = (segments["start"] < clip_end) & (segments["end"] > clip_start)
    near_speakers = sorted(set(segments.loc[in_clip, "speaker"]) - {seg["speaker"]})
    pool = near_speakers or [s for s in speakers if s != seg["speaker"]]
    wrong_speaker = pool[int(rng.integers(len(pool)))]
    near_contents = contents[(contents["start"] < clip_end) & (contents["end"] > clip_start)]
    content_pool = near_contents if len(near_contents) else contents
    wrong_text = content_pool.iloc[int(rng.integers(len(content_pool)))]["text"]
    texts = [
        f"{seg['speaker']} said {seg['text']}",
        f"{seg['speaker']} said {wrong_text}",
        f"{wrong_speaker} said {seg['text']}",
        f"{wrong_speaker} said {wrong_text}",
    ]
    return texts, rng.permutation(4)


def _who_item(item_id: str, seg, clip: tuple[float, float], options, video_path: str) -> dict:
    """The WHO_ITEMS row of one target segment, its clip and its options (`_who_options`)."""
    texts, order = options
    clip_start, clip_end = clip
    query_start, query_time = seg["start"] - clip_start, seg["end"] - clip_start
    return {
        "item_id": item_id,
        "source": "built",
        "video_path": video_path,
        "question": (
            f"Between {format_clock(query_start)} and {format_clock(query_time)} of the clip, "
            "who is speaking and what do they say?"
        ),
        "query_start": round(query_start, 1),
        "query_time": round(query_time, 1),
        **{f"option_{letter.lower()}": texts[k] for letter, k in zip(LETTERS, order, strict=True)},
        "correct_answer": LETTERS[int(np.flatnonzero(order == 0)[0])],
        "speaker": seg["speaker"],
        "consistency": "unknown",
        "domain": "",
        "subcategory": "",
        "asr_content": "",
        **{f"kind_{letter.lower()}": WHO_KINDS[k] for letter, k in zip(LETTERS, order, strict=True)},
        "clip_start": clip_start,
        "clip_end": clip_end,
        "review_status": "unreviewed",
        "metadata_json": json.dumps(
            {"target_start": float(seg["start"]), "target_end": float(seg["end"])}, sort_keys=True
        ),
    }


def score_who_replies(
    items: pd.DataFrame,
    replies: pd.DataFrame,
    parser: str = "released",
    written: pd.DataFrame | None = None,
    copies: pd.DataFrame | None = None,
):
    """`who.score_who` on the who replies (failed calls are left out).

    `written` (WRITTEN_ANSWERS) and `copies` (WHO_COPIES), as `importers.import_socialomni`
    writes them: the answers as written and a duplicated id's earlier copies, which released
    mode scores as the released scripts do (`score_who`'s `raw_answers` and `copies`).
    """
    who = answered(replies, "who")
    return score_who(
        items,
        who[["model", "modality", "item_id", "reply"]].reset_index(drop=True),
        parser,
        written_answers(written, "who") if written is not None else None,
        copies.to_dict("records") if copies is not None else (),
    )

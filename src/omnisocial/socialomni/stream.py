"""Registry models under SocialOmni's streaming when protocol (paper appendix A.6), via streaming.

Each when stream item (WHEN_STREAM_ITEMS) is asked every `stream_step_s` seconds (1 s in the
paper) from its `stream_start` to its `stream_end` (empty: the clip's duration, probed)
whether its target should speak now; the model sees the clip from its start up to t (or the
last `stream_window_s` seconds) and the single-cut question with t in it (`when_prompt`). The
reply is read by `when.extract_yes_no` under `social.parser`: YES is an utterance ("speak
now"), NO silence, anything else unparsed (counted, never read as NO; the stream goes on).
The first YES is the item's response time and ends its stream; none up to the end is no
response. A query at t = 0 would show no media at all, so such an item's first query is one
step later (the silence baseline is quiet before anyone has spoken, so nothing is lost).

`when_stream_responses` turns the driver's steps into WHEN_STREAM_RESPONSES rows scored by
`when.score_when_stream` beside the silence baseline; an item whose stream ended on a failed
call has no response time and is left out of the model's rates, with its count in the
stream summary (`n_failed_items`). `timing_table` is the paper's timing table per model.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

import pandas as pd

from omnisocial.importing import resolve
from omnisocial.media.audio import probe
from omnisocial.socialomni.contracts import WHEN_STREAM_RESPONSES
from omnisocial.socialomni.profile import mean_t_interval
from omnisocial.socialomni.requests import WHEN_INSTRUCTION
from omnisocial.socialomni.runs import first_query
from omnisocial.socialomni.when import extract_yes_no
from omnisocial.socialomni.who import MODALITY_INPUTS
from omnisocial.streaming import (
    SILENCE,
    UNPARSED,
    UTTERANCE,
    Parsed,
    Schedule,
    StreamItem,
    StreamProtocol,
    first_utterances,
    format_time,
)

BENCHMARK = "socialomni"
PROTOCOL = "when_stream"


def clip_end(item: Mapping, root: str | os.PathLike) -> float:
    """The item's last query time bound: its stream_end, else the clip's probed duration."""
    end = item.get("stream_end")
    if end is not None and not (isinstance(end, float) and math.isnan(end)):
        return float(end)
    info = probe(resolve(root, item["video_path"]))
    duration = info["audio_duration"] or info["video_duration"] or info["format_duration"]
    if not duration:
        raise ValueError(f"when stream item {item['item_id']}: no stream_end and no duration in its clip")
    return float(duration)


def stream_items(items: pd.DataFrame, root: str | os.PathLike, step_s: float) -> list[StreamItem]:
    """StreamItems of WHEN_STREAM_ITEMS rows.

    An item whose clip ends before its first query could never be asked: left out, it would
    drop from the model's rates but not the baseline's, so every such item is named in one
    error instead (as Omni-DuplexEval's `stream_items` does).
    """
    out, bad = [], []
    for item in items.to_dict("records"):
        start, end = first_query(float(item["stream_start"]), step_s), clip_end(item, root)
        if end < start:
            bad.append(
                f"{item['item_id']}: clip ends at {end:.3f} s, before its first query at {start:.3f} s"
            )
            continue
        context = {"target": str(item["target"] or "").strip()}
        out.append(
            StreamItem(
                str(item["item_id"]),
                resolve(root, item["video_path"]),
                Schedule(start, end, step_s),
                0.0,
                context,
            )
        )
    if bad:
        named = "; ".join(bad)
        raise ValueError(f"cannot stream {len(bad)} when stream item(s) at a {step_s:g} s step: {named}")
    return out


def when_prompt(modality: str):
    """The prompt builder: the clip so far (up to t, said in the prompt) and the when question."""

    def build(item: StreamItem, t: float, history) -> tuple[str, str]:
        target = item.context.get("target") or "the listener"
        prompt = (
            f"{MODALITY_INPUTS[modality]}\n\nThe clip is streamed to you live; you have seen it up to "
            f"t = {format_time(t)} s.\nBased on the conversation so far, should {target} speak now?"
            f"\n\n{WHEN_INSTRUCTION}"
        )
        return "", prompt

    return build


def when_parser(parser: str):
    def parse(text: str) -> Parsed:
        answer = extract_yes_no(text, parser=parser)
        if answer == "YES":
            return Parsed(UTTERANCE, "YES")
        if answer == "NO":
            return Parsed(SILENCE)
        return Parsed(UNPARSED)

    return parse


def when_protocol(modality: str, parser: str = "released", window_s: float | None = None) -> StreamProtocol:
    return StreamProtocol(
        PROTOCOL, when_prompt(modality), when_parser(parser), stop_at_first=True, window_s=window_s
    )


def when_stream_responses(model: str, steps: pd.DataFrame, items: pd.DataFrame) -> pd.DataFrame:
    """WHEN_STREAM_RESPONSES of a model's streamed items (failed streams left out, module doc)."""
    times = first_utterances(steps)
    turn_end = dict(zip(items["item_id"].astype(str), items["turn_end"].astype(float), strict=True))
    rows = [
        {"model": model, "item_id": item_id, "turn_end": turn_end[item_id], "response_time": rt}
        for item_id, rt in sorted(times.items())
    ]
    return WHEN_STREAM_RESPONSES.validate(pd.DataFrame(rows, columns=WHEN_STREAM_RESPONSES.names))


def timing_table(
    scored: pd.DataFrame, tolerance: pd.DataFrame, summaries: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per model: on-time, early, late, no response, mean signed offset (95% t interval over the
    items with a response), P/R/F1 per delta and, for streamed models, steps, calls made and
    answered from the cache, unparsed replies, failed streams (`with_stream_counts`)."""
    rows = []
    for model, group in scored.groupby("model", sort=True):
        labels = group["label"]
        n = len(group)
        offsets = group["offset"].dropna().astype(float)
        low, high = mean_t_interval(offsets, bounds=(-math.inf, math.inf))
        row = {
            "model": model,
            "n": n,
            "on_time": float((labels == "Perfect").mean()),
            "early": float((labels == "Interrupted").mean()),
            "late": float(labels.isin(["Delayed", "TooLate"]).mean()),
            "no_response": float((labels == "NoResponse").mean()),
            "n_responses": len(offsets),
            "mean_offset": float(offsets.mean()) if len(offsets) else math.nan,
            "mean_offset_low": low,
            "mean_offset_high": high,
        }
        for prf in tolerance[tolerance["model"] == model].sort_values("delta").to_dict("records"):
            for measure in ("precision", "recall", "f1"):
                row[f"{measure}_{float(prf['delta']):g}"] = float(prf[measure])
        rows.append(row)
    return with_stream_counts(pd.DataFrame(rows), summaries, TIMING_COUNTS)


# a streamed model's counts beside its rates: steps asked, calls made in the job's last run and
# steps answered from the cache (earlier runs: n_calls + n_cached is the same however often the
# job was interrupted), unparsed replies, failed item streams
TIMING_COUNTS = ("n_steps", "n_calls", "n_cached", "n_unparsed", "n_failed_items")
RATE_COUNTS = ("n_steps", "n_unparsed")


def with_stream_counts(
    table: pd.DataFrame, summaries: pd.DataFrame | None, counts=TIMING_COUNTS
) -> pd.DataFrame:
    """`table` (one row per model) with the streamed models' `counts` from their STREAM_SUMMARY
    rows; empty for models not streamed (the silence baseline). A model whose every reply was
    unparsed has no response, like one that said NO throughout: n_unparsed tells them apart."""
    counts = list(counts)
    if summaries is None or not len(summaries) or not len(table):
        return table.assign(**{c: pd.Series(pd.NA, index=table.index, dtype="Int64") for c in counts})
    own = summaries[summaries["protocol"] == PROTOCOL].set_index("model")[counts]
    table = table.join(own, on="model")
    return table.astype({c: "Int64" for c in counts})

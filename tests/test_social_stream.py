"""SocialOmni's streaming when protocol for registry models (socialomni.stream)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from omnisocial.socialomni.runs import first_query, planned_steps
from omnisocial.socialomni.stream import (
    RATE_COUNTS,
    stream_items,
    timing_table,
    when_parser,
    when_prompt,
    when_protocol,
    when_stream_responses,
    with_stream_counts,
)
from omnisocial.socialomni.when import score_when_stream
from omnisocial.streaming import SILENCE, STREAM_STEPS, UNPARSED, UTTERANCE, Schedule, StreamItem


def test_the_parser_reads_yes_as_speaking_no_as_silence_and_never_gibberish_as_silence():
    released, strict = when_parser("released"), when_parser("strict")
    assert released("YES").kind == UTTERANCE and released("A").kind == UTTERANCE
    assert released("No, not yet.").kind == SILENCE
    assert released("The weather is sunny").kind == UNPARSED
    assert released("I cannot tell").kind == SILENCE  # the released substring rule reads "no"
    assert strict("I cannot tell").kind == UNPARSED  # strict does not


def test_the_prompt_says_the_time_and_the_target():
    item = StreamItem("i", "clip.mp4", Schedule(2.5, 4.0), context={"target": "Ben"})
    system, prompt = when_prompt("audio")(item, 3.25, ())
    assert system == "" and "up to t = 3.25 s." in prompt and "should Ben speak now?" in prompt
    assert "Answer with YES or NO only." in prompt and prompt.startswith("You are given only the audio")
    assert when_protocol("video", window_s=4.0).stop_at_first and when_protocol("video").window_s is None


def _items():
    return pd.DataFrame(
        {
            "item_id": ["a", "b"], "clip_id": ["c", "c"], "video_path": ["v.mp4", "v.mp4"],
            "target": ["Ben", ""], "previous_speaker": ["", ""], "stream_start": [0.0, 2.5],
            "turn_end": [3.2, 4.0], "next_start": [None, None], "stream_end": [6.0, 5.4],
        }
    )  # fmt: skip


def test_items_start_one_step_after_a_query_at_zero_and_end_at_the_stream_end(tmp_path):
    a, b = stream_items(_items(), tmp_path, 1.0)
    assert a.schedule.times() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]  # no query at t = 0: nothing to show
    assert b.schedule.times() == [2.5, 3.5, 4.5] and b.context["target"] == ""
    assert first_query(0.0, 0.5) == 0.5 and first_query(1.2, 0.5) == 1.2
    path = tmp_path / "items.csv"
    _items().to_csv(path, index=False)
    assert planned_steps(path, 1.0) == 6 + 3


def test_an_item_whose_clip_ends_before_its_first_query_is_named_not_dropped(tmp_path):
    # left out, it would leave the model's rates but not the silence baseline's
    items = _items().assign(stream_start=[0.0, 2.5], stream_end=[0.6, 2.0])
    with pytest.raises(ValueError, match="cannot stream 2 when stream item") as error:
        stream_items(items, tmp_path, 1.0)
    assert "a: clip ends at 0.600 s, before its first query at 1.000 s" in str(error.value)
    assert "b: clip ends at 2.000 s, before its first query at 2.500 s" in str(error.value)


def _steps(rows):
    frame = pd.DataFrame(rows, columns=["item_id", "step", "t", "kind"])
    frame = frame.assign(
        model="m", window_start=0.0, text="", reply="", error="", cached=False, latency_s=0.1
    )
    return STREAM_STEPS.validate(frame)


def test_responses_and_the_timing_table_beside_the_baseline():
    steps = _steps(
        [("a", 0, 1.0, SILENCE), ("a", 1, 2.0, UNPARSED), ("a", 2, 3.0, UTTERANCE),
         ("b", 0, 2.5, SILENCE), ("b", 1, 3.5, SILENCE), ("b", 2, 4.5, "failed")]
    )  # fmt: skip
    responses = when_stream_responses("m", steps, _items())
    assert responses.to_dict("records") == [
        {"model": "m", "item_id": "a", "turn_end": 3.2, "response_time": 3.0}
    ]
    baseline = pd.DataFrame(
        {
            "model": ["base", "base"],
            "item_id": ["a", "b"],
            "turn_end": [3.2, 4.0],
            "response_time": [4.0, 5.5],
        }
    )
    both = pd.concat([baseline, responses], ignore_index=True)
    scored, _, tolerance = score_when_stream(both, (1, 2, 5), (0.2, 0.5, 1.0))
    summaries = pd.DataFrame(
        [
            {
                "model": "m",
                "protocol": "when_stream",
                "n_steps": 6,
                "n_calls": 4,
                "n_cached": 2,
                "n_unparsed": 1,
                "n_failed_items": 1,
            }
        ]
    )
    table = timing_table(scored, tolerance, summaries).set_index("model")
    # base: offsets 0.8 (Perfect) and 1.5 (Delayed); m: -0.2 (Interrupted), b failed (left out)
    assert table.loc["base", "on_time"] == 0.5 and table.loc["base", "late"] == 0.5
    assert table.loc["base", "mean_offset"] == pytest.approx(1.15)
    half = 12.706204736174698 * math.sqrt(((0.8 - 1.15) ** 2 + (1.5 - 1.15) ** 2) / 1) / math.sqrt(2)
    assert table.loc["base", "mean_offset_low"] == pytest.approx(1.15 - half)
    assert table.loc["base", "mean_offset_high"] == pytest.approx(1.15 + half)
    assert table.loc["m", "n"] == 1 and table.loc["m", "early"] == 1.0
    assert math.isnan(table.loc["m", "mean_offset_low"])  # one offset: no interval
    assert table.loc["m", "f1_0.2"] == 1.0 and table.loc["m", "f1_1"] == 1.0  # |-0.2| <= 0.2
    assert table.loc["base", "f1_0.2"] == 0.0 and table.loc["base", "recall_1"] == 0.5
    assert table.loc["m", "n_unparsed"] == 1 and pd.isna(table.loc["base", "n_unparsed"])
    # calls made in the last run and steps answered from the cache, each shown
    assert (table.loc["m", "n_calls"], table.loc["m", "n_cached"]) == (4, 2)


def test_an_always_unparsed_model_is_told_apart_from_one_that_said_no_throughout():
    """Both have no response on every item (the same rates); the rates table counts the
    unparsed replies beside them, empty for the silence baseline (not streamed)."""
    responses = pd.DataFrame(
        {
            "model": ["base", "base", "no", "no", "garbled", "garbled"],
            "item_id": ["a", "b"] * 3,
            "turn_end": [3.2, 4.0] * 3,
            "response_time": [4.0, 5.5, None, None, None, None],
        }
    )
    _, rates, _ = score_when_stream(responses, (1, 2, 5), (0.5,))
    summaries = pd.DataFrame(
        {
            "model": ["no", "garbled"],
            "protocol": ["when_stream"] * 2,
            "n_steps": [6, 6],
            "n_unparsed": [0, 6],
        }
    )
    table = with_stream_counts(rates, summaries, RATE_COUNTS).set_index("model")
    assert table.loc["no", "no_response"] == table.loc["garbled", "no_response"] == 1.0
    assert table.loc["no", "n_unparsed"] == 0 and table.loc["garbled", "n_unparsed"] == 6
    assert table.loc["garbled", "n_steps"] == 6 and pd.isna(table.loc["base", "n_unparsed"])

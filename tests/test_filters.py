"""F1-F5 and the prompt audit on hand-built tables: threshold edges, reasons, cascades."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from omnisocial.familiarity.contracts import CLIP_CANDIDATES, FILTER_REPORT, INTERACTIONS, SEGMENTS, SIGNALS
from omnisocial.familiarity.filters import apply_filters, keyword_hits
from omnisocial.settings import Filters

PARAMS = {
    "turn_gap_s": 0.3,
    "min_turns": 4,
    "min_speech_per_speaker_s": 3.0,
    "min_total_speech_s": 90.0,
    "duplicate_similarity": 0.98,
    "max_track_lag_s": 0.25,
    "fail_unmeasurable_track_lag": False,
    "max_shared_speech_share": 0.4,
    "max_av_lag_s": 0.3,
    "max_duration_mismatch_s": 1.0,
    "measure_av_sync": True,
    "either_or_marker": "_EO_",
    "placeholder_prompts": ["", "placeholder", "n/a", "na", "none", "tbd", "todo", "prompt"],
    "audit_keywords": ["would you rather", "rather", " or "],
    "audit_min_hits": 1,
}
ID = "V00_S0001_I00000001"


def interaction(interaction_id: str = ID, **changes) -> dict:
    row = {name: "" for name in INTERACTIONS.names}
    row.update(
        interaction_id=interaction_id,
        vendor_id="V00",
        session_id="0001",
        prompt_hash="00000001",
        site="V00",
        relationship="familiar",
        prompt_id="S_EO_3",
        prompt_text="Would you rather live by the sea or in the mountains?",
        n_participants=2,
        participant_a="0001",
        participant_b="0002",
        gender_mix="female-male",
        has_transcript=True,
        ingest_ok=True,
    )
    row.update(changes)
    return row


def signal(interaction_id: str = ID, **changes) -> dict:
    row = {
        "interaction_id": interaction_id,
        "measure_ok": True,
        "measure_reason": "",
        "duration_audio_a": 110.0,
        "duration_audio_b": 110.0,
        "duration_video_a": 110.0,
        "duration_video_b": 110.0,
        "speech_s_a": 55.0,
        "speech_s_b": 50.0,
        "speech_total_s": 100.0,
        "vad_source": "corpus_vad",
        "track_similarity": 0.3,
        "track_lag_s": 0.0,
        "av_lag_a_s": 0.0,
        "av_lag_b_s": 0.1,
        "transcript_words": 400,
    }
    row.update(changes)
    return row


def candidates(
    interaction_id: str = ID, early: tuple = (6, 8.0, 9.0), late: tuple = (5, 7.5, 6.0)
) -> list[dict]:
    rows = []
    for position, (turns, a, b), start in (("early", early, 5.0), ("late", late, 85.0)):
        rows.append(
            {
                "interaction_id": interaction_id,
                "position": position,
                "clip_start": start,
                "clip_end": start + 20.0,
                "n_turns": turns,
                "speech_s_a": a,
                "speech_s_b": b,
            }
        )
    return rows


def segments(
    interaction_id: str = ID, texts=("So, would you rather live by the sea", "The sea, or maybe not.")
):
    return [
        {"interaction_id": interaction_id, "speaker": "ab"[i % 2], "start": 2.0 * i, "end": 2.0 * i + 1.5,
         "text": text, "source": "transcript"}
        for i, text in enumerate(texts)
    ]  # fmt: skip


def run(inter=None, sig=None, cand=None, seg=None, params=None) -> pd.DataFrame:
    inter = [interaction()] if inter is None else inter
    sig = [signal()] if sig is None else sig
    cand = candidates() if cand is None else cand
    seg = segments() if seg is None else seg
    return apply_filters(
        INTERACTIONS.validate(pd.DataFrame(inter)),
        SIGNALS.validate(pd.DataFrame(sig, columns=SIGNALS.names)),
        CLIP_CANDIDATES.validate(pd.DataFrame(cand, columns=CLIP_CANDIDATES.names)),
        SEGMENTS.validate(pd.DataFrame(seg, columns=SEGMENTS.names)),
        Filters.of({**PARAMS, **(params or {})}),
    )


def one(**kwargs) -> dict:
    report = run(**kwargs)
    assert len(report) == 1
    return report.iloc[0].to_dict()


def test_a_clean_interaction_passes_everything():
    row = one()
    for name in ("ingest", "f1_prompt", "f2_turns", "f3_speech", "f4_tracks", "f5_amount", "audit"):
        assert row[f"{name}_pass"], name
    assert row["passed"] and row["reasons"] == ""
    assert row["f2_turns_value"] == 5
    assert row["f3_speech_value"] == 6.0
    assert row["f5_amount_value"] == 100.0
    assert row["f1_prompt_value"] == "S_EO_3: either-or"
    assert "similarity=0.300" in row["f4_tracks_value"] and "av_b=+0.10s" in row["f4_tracks_value"]
    assert row["audit_value"] == "3 hits ('would you rather': 1, 'rather': 1, ' or ': 1)"


def test_config_filters_block_holds_every_parameter():
    config = yaml.safe_load((Path(__file__).parents[1] / "config" / "demo.yaml").read_text())
    assert set(config["filters"]) == {field.name for field in dataclasses.fields(Filters)} == set(PARAMS)


def test_unknown_parameters_are_named():
    with pytest.raises(ValueError, match="filters.min_turn "):
        Filters.of({**PARAMS, "min_turn": 4})


# ------------------------------------------------------------------ F1


@pytest.mark.parametrize("text", ["", "  TBD ", "Placeholder", "n/a", "PROMPT"])
def test_f1_rejects_placeholder_text(text):
    row = one(inter=[interaction(prompt_text=text)])
    assert not row["f1_prompt_pass"] and not row["passed"]
    assert f"F1 prompt: placeholder prompt text {text.strip()!r}" in row["reasons"]
    assert row["f1_prompt_value"] == "S_EO_3: either-or, placeholder text"


def test_f1_requires_the_either_or_marker():
    row = one(inter=[interaction(prompt_id="S_OPEN_2")])
    assert not row["f1_prompt_pass"]
    assert row["reasons"] == "F1 prompt: prompt_id 'S_OPEN_2' lacks the either-or marker '_EO_'"
    assert row["f1_prompt_value"] == "S_OPEN_2: not either-or"
    assert one(inter=[interaction(prompt_text="Placeholder-free but real text")])["f1_prompt_pass"]


@pytest.mark.parametrize(
    ("prompt_id", "marker", "passes"),
    [
        ("S_EO_3", "_EO_", True),
        ("EO_0042", "_EO_", True),  # a real corpus spelled EO_...: the marker leads the id
        ("NAT_EO", "_EO_", True),
        ("EO", "_EO_", True),
        ("EO_0042", "EO", True),
        ("P_EO_001", "EO_", True),
        ("GEO_1", "_EO_", False),
        ("P_EOX_1", "_EO_", False),
        ("eo_1", "_EO_", False),
        ("P_EITHER_OR_7", "_EITHER_OR_", True),
        ("P_EITHER_7", "_EITHER_OR_", False),
    ],
)
def test_f1_marker_is_an_underscore_delimited_token(prompt_id, marker, passes):
    row = one(inter=[interaction(prompt_id=prompt_id)], params={**PARAMS, "either_or_marker": marker})
    assert bool(row["f1_prompt_pass"]) is passes
    assert row["f1_prompt_value"] == f"{prompt_id}: {'either-or' if passes else 'not either-or'}"


def test_f1_empty_marker_matches_nothing():
    row = one(params={**PARAMS, "either_or_marker": ""})
    assert not row["f1_prompt_pass"]


# ------------------------------------------------------------------ F2, F3


def test_f2_exactly_min_turns_passes_one_fewer_fails():
    assert one(cand=candidates(early=(4, 8.0, 9.0)))["f2_turns_pass"]
    row = one(cand=candidates(late=(3, 8.0, 9.0)))
    assert not row["f2_turns_pass"] and row["f2_turns_value"] == 3
    assert row["reasons"] == "F2 turns: 3 merged turns < 4 in the late clip"


def test_f3_exactly_min_speech_passes_just_below_fails():
    assert one(cand=candidates(early=(6, 3.0, 9.0)))["f3_speech_pass"]
    row = one(cand=candidates(late=(6, 8.0, 2.96)))
    assert not row["f3_speech_pass"] and row["f3_speech_value"] == pytest.approx(2.96)
    assert row["reasons"] == "F3 speech: speaker b speaks 3.0 s in the late clip < 3 s"


def test_f2_f3_fail_without_a_clip_window():
    row = one(cand=[])
    assert not row["f2_turns_pass"] and not row["f3_speech_pass"]
    assert row["f2_turns_value"] is pd.NA or row["f2_turns_value"] is None
    assert math.isnan(row["f3_speech_value"])
    assert "F2 turns: no clip window" in row["reasons"] and "F3 speech: no clip window" in row["reasons"]


# ------------------------------------------------------------------ F4


@pytest.mark.parametrize(
    ("changes", "passes", "reason"),
    [
        ({"track_similarity": 0.9799}, True, ""),
        ({"track_similarity": 0.98}, False, "F4 tracks: duplicated tracks (similarity 0.980 >= 0.98)"),
        ({"track_similarity": 1.0}, False, "F4 tracks: duplicated tracks (similarity 1.000 >= 0.98)"),
        ({"track_lag_s": 0.25}, True, ""),
        ({"track_lag_s": -0.25}, True, ""),
        ({"track_lag_s": 0.26}, False, "F4 tracks: desynced tracks (b lags a by +0.26 s, |lag| > 0.25 s)"),
        ({"track_lag_s": -1.5}, False, "F4 tracks: desynced tracks (b lags a by -1.50 s, |lag| > 0.25 s)"),
        ({"av_lag_a_s": 0.3}, True, ""),
        ({"av_lag_b_s": -0.3}, True, ""),
        ({"av_lag_b_s": -0.4}, False, "F4 tracks: audio-video lag of b -0.40 s, |lag| > 0.3 s"),
        ({"av_lag_a_s": None}, True, ""),  # not measurable is no evidence of desync
        ({"track_lag_s": None}, True, ""),  # tracks that share no signal: no evidence of desync either
        ({"shared_speech_s": 40.0}, True, ""),
        (
            {"shared_speech_s": 40.1},
            False,
            "F4 tracks: cross-talk dominated (40% of the speech is on both microphones at a similar level",
        ),
        ({"shared_speech_s": 100.0, "track_similarity": 0.99}, False, "F4 tracks: duplicated tracks"),
        ({"duration_video_a": 109.0}, True, ""),
        ({"duration_audio_b": 111.0}, True, ""),
        (
            {"duration_video_a": 44.0},
            False,
            "F4 tracks: truncated video of a (audio 110.00 s vs video 44.00 s, mismatch 66.00 s > 1 s)",
        ),
        (
            {"duration_audio_b": 108.9},
            False,
            "F4 tracks: truncated audio of b (audio 108.90 s vs video 110.00 s, mismatch 1.10 s > 1 s)",
        ),
        (
            {"track_similarity": None, "track_lag_s": None},
            False,
            "F4 tracks: track similarity not measurable",
        ),
    ],
)
def test_f4_edges(changes, passes, reason):
    row = one(sig=[signal(**changes)])
    assert row["f4_tracks_pass"] is passes
    assert row["passed"] is passes
    if passes:
        assert row["reasons"] == ""
    else:
        assert row["reasons"].startswith(reason)


def test_f4_collects_every_track_problem_and_skips_av_when_not_measured():
    row = one(sig=[signal(track_similarity=0.999, track_lag_s=0.0, av_lag_b_s=2.0, duration_video_a=40.0)])
    parts = row["reasons"].split("; ")
    assert [p.split(" (")[0].split(" -")[0].split(" +")[0] for p in parts] == [
        "F4 tracks: duplicated tracks",
        "F4 tracks: audio-video lag of b",
        "F4 tracks: truncated video of a",
    ]
    row = one(sig=[signal(av_lag_a_s=None, av_lag_b_s=5.0)], params={"measure_av_sync": False})
    assert row["f4_tracks_pass"] and "av_" not in row["f4_tracks_value"]


def test_f4_reports_an_unmeasurable_lag_and_fails_it_only_when_asked():
    weak = signal(track_lag_s=None, track_lag_peak=0.16, track_lag_prominence=0.03)
    row = one(sig=[weak])
    assert row["f4_tracks_pass"] and row["passed"] and row["f4_lag_measured"] is False
    assert "lag=not measurable (peak 0.16, prominence 0.03)" in row["f4_tracks_value"]
    assert one(sig=[signal()])["f4_lag_measured"] is True
    strict = one(sig=[weak], params={"fail_unmeasurable_track_lag": True})
    assert not strict["f4_tracks_pass"]
    assert strict["reasons"] == "F4 tracks: lag between tracks not measurable (the tracks share no signal)"


def test_f4_cross_talk_reason_is_not_added_to_duplicates():
    row = one(sig=[signal(track_similarity=0.99, shared_speech_s=100.0)])
    assert row["reasons"] == "F4 tracks: duplicated tracks (similarity 0.990 >= 0.98)"
    assert "shared=100%" in row["f4_tracks_value"]


def test_funnel_counts_unmeasured_lags_in_the_f4_stage():
    from omnisocial.summary import funnel_section

    ids = [f"V00_S000{i}_I00000001" for i in (1, 2, 3)]
    report = run(
        inter=[interaction(i) for i in ids],
        sig=[
            signal(ids[0], track_lag_s=None),
            signal(ids[1]),
            signal(ids[2], track_lag_s=None, track_similarity=0.99),
        ],
        cand=[c for i in ids for c in candidates(i)],
        seg=[s for i in ids for s in segments(i)],
    )
    funnel = funnel_section(report).set_index("stage")
    # the duplicate without a lag is excluded; the one kept without a lag is counted
    assert funnel.loc["F4 tracks distinct and in sync (1 with the track lag not measurable)", "n"] == 2


def test_f4_duration_edge_survives_float_rounding():
    # 2.04 - 1.04 is 1.0000000000000002 in floating point: still "exactly at" the threshold.
    assert one(sig=[signal(duration_audio_a=2.04, duration_video_a=1.04)])["f4_tracks_pass"]


# ------------------------------------------------------------------ F5, audit


def test_f5_edge_and_reason_text():
    assert one(sig=[signal(speech_total_s=90.0)])["f5_amount_pass"]
    row = one(sig=[signal(speech_total_s=52.3)])
    assert not row["f5_amount_pass"] and row["f5_amount_value"] == 52.3
    assert row["reasons"] == "F5 amount: 52.3 s voiced < 90 s"


def test_audit_counts_keywords_case_insensitively_across_punctuation():
    assert keyword_hits("Tea, OR coffee? I'd RATHER tea.", [" or ", "rather", "would you rather"]) == {
        " or ": 1,
        "rather": 1,
        "would you rather": 0,
    }
    assert keyword_hits("or else", [" or "]) == {" or ": 1}  # the text's start counts as a word edge
    assert keyword_hits("for sure", [" or "]) == {" or ": 0}


def test_audit_threshold_edge_and_failures():
    seg = segments(texts=("I would rather not.", "Me neither."))  # "rather" only: 1 hit
    assert one(seg=seg, params={"audit_keywords": ["rather"], "audit_min_hits": 1})["audit_pass"]
    row = one(seg=seg, params={"audit_keywords": ["rather"], "audit_min_hits": 2})
    assert not row["audit_pass"] and row["audit_value"] == "1 hits ('rather': 1)"
    assert row["reasons"] == "prompt audit: 1 prompt keyword hits < 2 in the transcript"
    row = one(seg=segments(texts=("We talked about the weather.",)))
    assert not row["audit_pass"] and row["audit_value"].startswith("0 hits")
    row = one(seg=[])
    assert not row["audit_pass"] and row["audit_value"] == "no transcript"
    assert row["reasons"] == "prompt audit: no transcript text to audit"


def test_without_a_transcript_the_audit_follows_its_threshold():
    """No transcript: with audit_min_hits 0 the interaction is "not audited" (and passes), else it fails."""
    row = one(seg=[], params={"audit_min_hits": 0})
    assert row["audit_pass"] and row["passed"] and row["reasons"] == ""
    assert row["audit_value"] == "not audited (no transcript)"
    # a transcript is audited as before, also at 0 (every count passes)
    row = one(seg=segments(texts=("We talked about the weather.",)), params={"audit_min_hits": 0})
    assert row["audit_pass"] and row["audit_value"].startswith("0 hits")
    # the funnel counts the interactions kept unaudited
    from omnisocial import summary

    report = run(
        inter=[interaction(), interaction(interaction_id="V00_S0002_I00000001")],
        sig=[signal(), signal(interaction_id="V00_S0002_I00000001")],
        cand=[*candidates(), *candidates(interaction_id="V00_S0002_I00000001")],
        seg=segments(),
        params={"audit_min_hits": 0},
    )
    funnel = summary.funnel_section(report)
    assert "prompt audit (1 not audited: no transcript)" in set(funnel["stage"])


# ------------------------------------------------------------------ cascades and the table


def test_not_ingested_cascades_to_every_filter():
    row = one(
        inter=[interaction(ingest_ok=False, ingest_reason="one participant (V00_S0001_I00000001_P0001)")]
    )
    for name in ("ingest", "f1_prompt", "f2_turns", "f3_speech", "f4_tracks", "f5_amount", "audit"):
        assert row[f"{name}_pass"] is False, name
    reasons = row["reasons"].split("; ")
    assert reasons[0] == "ingest: one participant (V00_S0001_I00000001_P0001)"
    assert reasons[1:] == [
        f"{label}: not evaluated: not ingested"
        for label in ("F1 prompt", "F2 turns", "F3 speech", "F4 tracks", "F5 amount", "prompt audit")
    ]
    assert row["f1_prompt_value"] == row["f4_tracks_value"] == row["audit_value"] == ""
    assert math.isnan(row["f5_amount_value"])


def test_failed_measurement_cascades_to_f4_f5_and_clip_filters():
    failed = signal(measure_ok=False, measure_reason="video_a: cannot probe x.mp4: moov atom not found")
    for key in ("duration_video_a", "track_similarity", "track_lag_s", "speech_total_s", "av_lag_a_s"):
        failed[key] = None
    row = one(sig=[failed], cand=[])
    assert row["ingest_pass"] and row["f1_prompt_pass"] and row["audit_pass"]
    assert not (
        row["f2_turns_pass"] or row["f3_speech_pass"] or row["f4_tracks_pass"] or row["f5_amount_pass"]
    )
    assert row["reasons"].split("; ") == [
        "measure: video_a: cannot probe x.mp4: moov atom not found",
        "F2 turns: not evaluated: not measured",
        "F3 speech: not evaluated: not measured",
        "F4 tracks: not evaluated: not measured",
        "F5 amount: not evaluated: not measured",
    ]
    # With clip windows (from corpus VAD) the clip filters are still evaluated.
    row = one(sig=[failed])
    assert row["f2_turns_pass"] and row["f3_speech_pass"] and not row["f4_tracks_pass"]


def test_missing_signals_row_counts_as_not_measured():
    row = one(sig=[signal(interaction_id="V99_S9999_I00000009")])
    assert row["reasons"].startswith("measure: no signals row")
    assert "F5 amount: not evaluated: not measured" in row["reasons"]


def test_report_has_one_sorted_row_per_interaction_and_round_trips(tmp_path):
    ids = ["V02_S0003_I00000001", "V00_S0002_I00000001", "V01_S0001_I00000001"]
    report = run(
        inter=[interaction(i, session_id=i[5:9]) for i in ids],
        sig=[signal(ids[0]), signal(ids[1], speech_total_s=10.0)],
        cand=candidates(ids[0]) + candidates(ids[1]) + candidates(ids[2]),
        seg=segments(ids[0]) + segments(ids[1]) + segments(ids[2]),
    )
    assert report["interaction_id"].tolist() == sorted(ids)
    assert report["passed"].tolist() == [False, False, True]
    assert list(report.columns) == FILTER_REPORT.names
    path = tmp_path / "filter_report.csv"
    FILTER_REPORT.write(path, report)
    pd.testing.assert_frame_equal(FILTER_REPORT.read(path), report)


def test_inputs_read_back_from_csv_strings(tmp_path):
    """Booleans and numbers arriving as CSV text (the workflow's case) behave the same."""
    paths = {}
    for name, contract, rows in (
        ("interactions", INTERACTIONS, [interaction()]),
        ("signals", SIGNALS, [signal(track_lag_s=0.26)]),
        ("candidates", CLIP_CANDIDATES, candidates()),
        ("segments", SEGMENTS, segments()),
    ):
        paths[name] = tmp_path / f"{name}.csv"
        contract.write(paths[name], pd.DataFrame(rows, columns=contract.names))
    report = apply_filters(
        INTERACTIONS.read(paths["interactions"]),
        SIGNALS.read(paths["signals"]),
        CLIP_CANDIDATES.read(paths["candidates"]),
        SEGMENTS.read(paths["segments"]),
        Filters.of(PARAMS),
    )
    assert report.iloc[0]["reasons"] == "F4 tracks: desynced tracks (b lags a by +0.26 s, |lag| > 0.25 s)"

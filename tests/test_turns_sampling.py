"""Turn merging, clip snapping and the stratified design.

The specification: docs/benchmarks/familiarity.md#filters, #clips and #design.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omnisocial.familiarity import sampling
from omnisocial.familiarity.clips import clip_candidates, snap_end, snap_start_backward, snap_start_forward
from omnisocial.familiarity.contracts import CLIP_CANDIDATES, FILTER_REPORT
from omnisocial.familiarity.intervals import union_seconds
from omnisocial.familiarity.sampling import DesignError, sample_design
from omnisocial.familiarity.turns import merge_turns, timeline
from omnisocial.tables import DESIGN, RELATIONSHIPS

CLIPS = {"duration_s": 20.0, "early_start_s": 5.0, "late_end_margin_s": 5.0, "snap_tolerance_s": 4.0}
PASS_COLUMNS = [
    "ingest_pass",
    "f1_prompt_pass",
    "f2_turns_pass",
    "f3_speech_pass",
    "f4_tracks_pass",
    "f5_amount_pass",
    "audit_pass",
]


def segs(rows, interaction_id="I1"):
    return pd.DataFrame(
        [
            {
                "interaction_id": interaction_id,
                "speaker": s,
                "start": a,
                "end": b,
                "text": "w",
                "source": "asr",
            }
            for s, a, b in rows
        ]
    )


# ---------------------------------------------------------------------------- merge_turns


def test_merge_turns_gap_at_below_and_above_threshold():
    rows = [
        ("a", 0.0, 1.0),
        ("a", 1.3, 2.0),  # gap 0.3 == threshold: merged (despite 1.3 - 1.0 > 0.3 in floats)
        ("a", 2.2, 3.0),  # gap 0.2 < threshold: merged
        ("a", 3.31, 4.0),  # gap 0.31 > threshold: new turn
        ("b", 4.1, 5.0),  # other speaker: new turn
        ("a", 5.05, 6.0),  # speaker change: new turn even with a tiny gap
    ]
    turns = merge_turns(segs(rows), gap_s=0.3)
    assert list(turns.columns) == ["speaker", "start", "end"]
    assert turns.values.tolist() == [
        ["a", 0.0, 3.0],
        ["a", 3.31, 4.0],
        ["b", 4.1, 5.0],
        ["a", 5.05, 6.0],
    ]


def test_merge_turns_sorts_input_and_handles_overlap_and_empty():
    rows = [("b", 2.0, 3.0), ("a", 0.0, 1.0), ("a", 0.5, 1.8), ("b", 2.9, 4.0)]
    turns = merge_turns(segs(rows), gap_s=0.1)
    assert turns.values.tolist() == [["a", 0.0, 1.8], ["b", 2.0, 4.0]]
    # A backchannel starting inside the other speaker's segment ends that speaker's turn.
    turns = merge_turns(segs([("a", 0.0, 3.0), ("b", 1.0, 1.5), ("a", 3.1, 5.0)]), gap_s=0.3)
    assert turns["speaker"].tolist() == ["a", "b", "a"]
    assert merge_turns(segs([]).reindex(columns=["speaker", "start", "end"]), 0.3).empty


def test_timeline_prefers_segments_then_speech():
    segments = segs([("a", 1.0, 2.0)], "I1")
    speech = pd.DataFrame(
        [
            {"interaction_id": "I1", "speaker": "b", "start": 0.0, "end": 9.0, "source": "corpus_vad"},
            {"interaction_id": "I2", "speaker": "b", "start": 3.0, "end": 4.0, "source": "corpus_vad"},
        ]
    )
    assert timeline("I1", segments, speech).values.tolist() == [["a", 1.0, 2.0]]
    assert timeline("I2", segments, speech).values.tolist() == [["b", 3.0, 4.0]]
    assert timeline("I3", segments, speech).empty
    assert timeline("I2", None, speech).values.tolist() == [["b", 3.0, 4.0]]


# ---------------------------------------------------------------------------- clip snapping


def alternating(duration: float, turn_s: float = 3.0, gap_s: float = 0.5, offset: float = 0.7):
    """Alternating a/b utterances of `turn_s` seconds separated by `gap_s`, from `offset`."""
    rows, t, k = [], offset, 0
    while t + turn_s <= duration:
        rows.append(("ab"[k % 2], round(t, 3), round(t + turn_s, 3)))
        t += turn_s + gap_s
        k += 1
    return rows


def test_snap_end_moves_back_to_a_segment_end_only_when_cutting():
    line = segs([("a", 0.0, 4.0), ("b", 4.5, 9.0), ("a", 9.2, 12.0)])
    assert snap_end(4.2, line, 4.0) == 4.2  # in a pause: stays
    assert snap_end(10.0, line, 4.0) == 9.0  # cuts the a-utterance: back to b's end
    assert snap_end(10.0, line, 0.5) == 10.0  # no whole end within tolerance: unavoidable cut
    # every end within tolerance (8.0, 6.0) lies inside an overlapping utterance: keep the cut
    overlap = segs([("a", 0.0, 6.0), ("b", 5.0, 8.0), ("a", 7.5, 11.0)])
    assert snap_end(10.0, overlap, 4.0) == 10.0


def test_clip_candidates_snap_start_to_onset_and_end_not_mid_segment():
    # utterances of 3 s every 3.5 s: onsets 0.7 + 3.5k, ends 3.7 + 3.5k
    rows = alternating(100.0)
    interactions = pd.DataFrame({"interaction_id": ["I1", "I2"]})  # I2 has no timeline
    signals = pd.DataFrame({"interaction_id": ["I1"], "duration_audio_a": [90.0], "duration_audio_b": [95.0]})
    out = clip_candidates(interactions, segs(rows), None, signals, CLIPS, turn_gap_s=0.3)
    CLIP_CANDIDATES.validate(out)
    assert out[["interaction_id", "position"]].values.tolist() == [["I1", "early"], ["I1", "late"]]
    early, late = out.iloc[0], out.iloc[1]
    # early: first onset at or after 5.0 is 7.7; 7.7 + 20 = 27.7 cuts 25.2-28.2, so the end
    # goes back to the end of the previous utterance, 24.7
    assert (early.clip_start, early.clip_end) == pytest.approx((7.7, 24.7))
    # late: T = 90 (the shorter audio), unsnapped start 90 - 5 - 20 = 65, last onset <= 65 is
    # 63.7; 63.7 + 20 = 83.7 cuts 81.2-84.2, so the end goes back to 80.7
    assert (late.clip_start, late.clip_end) == pytest.approx((63.7, 80.7))
    onsets = {start for _, start, _ in rows}
    for clip in (early, late):
        assert round(clip.clip_start, 3) in onsets
        assert not any(a < clip.clip_end - 1e-9 and b > clip.clip_end + 1e-9 for _, a, b in rows)
        assert clip.n_turns == 5  # each 3 s utterance is a turn: 0.5 s gaps exceed 0.3 s
        assert clip.speech_s_a + clip.speech_s_b == pytest.approx(15.0)
        assert min(clip.speech_s_a, clip.speech_s_b) == pytest.approx(6.0)


def test_clip_candidates_unsnapped_when_no_onset_within_tolerance():
    # one long utterance each, onsets 0 and 40: nothing within 4 s of 5.0 or of 55
    rows = [("a", 0.0, 39.0), ("b", 40.0, 80.0)]
    out = clip_candidates(pd.DataFrame({"interaction_id": ["I1"]}), segs(rows), None, None, CLIPS, 0.3)
    early, late = out.iloc[0], out.iloc[1]
    assert early.clip_start == 5.0 and early.clip_end == 25.0  # nothing to snap the end to
    assert late.clip_start == 55.0 and late.clip_end == 75.0  # T = 80 from the timeline
    assert early.n_turns == 1 and late.n_turns == 1


def test_clip_candidates_speech_seconds_use_vad_and_short_interactions_get_no_row():
    rows = alternating(60.0)
    speech = pd.DataFrame(
        [
            {"interaction_id": "I1", "speaker": "a", "start": 0.0, "end": 60.0, "source": "corpus_vad"},
            {"interaction_id": "I1", "speaker": "a", "start": 10.0, "end": 20.0, "source": "corpus_vad"},
            {"interaction_id": "SHORT", "speaker": "a", "start": 0.0, "end": 18.0, "source": "corpus_vad"},
        ]
    )
    interactions = pd.DataFrame({"interaction_id": ["I1", "SHORT"]})
    out = clip_candidates(interactions, segs(rows), speech, None, CLIPS, turn_gap_s=0.3)
    assert set(out["interaction_id"]) == {"I1"}
    for clip in out.itertuples():
        assert clip.speech_s_a == pytest.approx(clip.clip_end - clip.clip_start)  # union, not sum
        assert clip.speech_s_b == 0.0


def reference_clips(segments, speech, total_end, params, gap_s):
    """The clip selection written out on frames, step by step as documented (`clip_candidates`)."""
    line = timeline("I1", segments, speech)
    if line.empty:
        return []
    turns = merge_turns(line, gap_s)
    onsets = np.sort(turns["start"].to_numpy())
    voiced = timeline("I1", None, speech)
    voiced = voiced if not voiced.empty else line
    total_end = float(line["end"].max()) if total_end is None else total_end
    duration, tolerance = params["duration_s"], params["snap_tolerance_s"]
    rows = []
    for position in ("early", "late"):
        if position == "early":
            start = snap_start_forward(params["early_start_s"], onsets, tolerance)
            if start + duration > total_end + 1e-9:
                start = params["early_start_s"]
            if start + duration > total_end + 1e-9:
                continue
        else:
            target = total_end - params["late_end_margin_s"] - duration
            if target < -1e-9:
                continue
            start = snap_start_backward(max(target, 0.0), onsets, tolerance)
        start, end = round(start, 6), round(snap_end(start + duration, line, tolerance), 6)
        inside = np.minimum(turns["end"], end) - np.maximum(turns["start"], start)
        speech_s = [
            round(union_seconds(zip(own["start"], own["end"], strict=True), start, end), 6)
            for own in (voiced[voiced["speaker"] == who] for who in ("a", "b"))
        ]
        rows.append(("I1", position, start, end, int((inside > 1e-9).sum()), *speech_s))
    return rows


@st.composite
def clip_inputs(draw):
    """Random timelines: overlaps, same-speaker runs, tied starts, rows with end <= start, and
    interaction ends short enough that the early or the late window (or both) is missing."""
    onset = st.one_of(
        st.sampled_from([0.0, 1.0, 4.5, 5.0, 9.0, 20.0]), st.floats(0.0, 60.0).map(lambda t: round(t, 2))
    )
    length = st.one_of(
        st.sampled_from([-1.0, 0.0, 0.5, 3.0]), st.floats(-0.5, 15.0).map(lambda t: round(t, 2))
    )
    row = st.tuples(st.sampled_from("ab"), onset, length).map(lambda r: (r[0], r[1], r[1] + r[2]))
    segments = draw(st.lists(row, max_size=30))
    speech = draw(st.one_of(st.just([]), st.lists(row, max_size=15)))
    total_end = draw(st.sampled_from([None, 20.0, 25.0, 29.9, 30.0, 45.0, 60.0]))
    params = {**CLIPS, "snap_tolerance_s": draw(st.sampled_from([0.0, 1.0, 4.0]))}
    return segments, speech, total_end, params, draw(st.sampled_from([None, 0.3]))


@settings(max_examples=60, deadline=None)
@given(clip_inputs())
def test_clip_candidates_match_the_frame_by_frame_reference(inputs):
    rows, speech_rows, total_end, params, gap_s = inputs
    segments = segs(rows) if rows else None
    speech = segs(speech_rows) if speech_rows else None
    signals = None
    if total_end is not None:
        signals = pd.DataFrame(
            {"interaction_id": ["I1"], "duration_audio_a": [total_end], "duration_audio_b": [99.0]}
        )
    out = clip_candidates(pd.DataFrame({"interaction_id": ["I1"]}), segments, speech, signals, params, gap_s)
    assert list(out.itertuples(index=False, name=None)) == reference_clips(
        segments, speech, total_end, params, gap_s
    )
    assert out.dtypes.equals(CLIP_CANDIDATES.empty().dtypes)


# ---------------------------------------------------------------------------- design


def build_tables(cell_specs, failing=()):
    """Interactions, filter report and clip candidates from (cell, interaction_id, pa, pb) specs."""
    inter, report, clips = [], [], []
    for (site, rel, gmix), iid, pa, pb, ok in [(*spec, True) for spec in cell_specs] + [
        (*spec, False) for spec in failing
    ]:
        inter.append(
            {
                "interaction_id": iid,
                "site": site,
                "relationship": rel,
                "gender_mix": gmix,
                "participant_a": pa,
                "participant_b": pb,
            }
        )
        passes = dict.fromkeys(PASS_COLUMNS, True)
        if not ok:
            passes["f2_turns_pass"] = False
        report.append(
            {
                "interaction_id": iid,
                "site": site,
                "relationship": rel,
                "gender_mix": gmix,
                **passes,
                "f1_prompt_value": "",
                "f2_turns_value": 2 if not ok else 6,
                "f3_speech_value": 5.0,
                "f4_tracks_value": "",
                "f4_lag_measured": True,
                "f5_amount_value": 100.0,
                "audit_value": "",
                "passed": ok,
                "reasons": "" if ok else "f2_turns: 2 turns < 4",
            }
        )
        for position, start in (("early", 5.0), ("late", 80.0)):
            clips.append(
                {
                    "interaction_id": iid,
                    "position": position,
                    "clip_start": start,
                    "clip_end": start + 19.5,
                    "n_turns": 7,
                    "speech_s_a": 6.0,
                    "speech_s_b": 7.0,
                }
            )
    return (
        FILTER_REPORT.validate(pd.DataFrame(report)),
        CLIP_CANDIDATES.validate(pd.DataFrame(clips)),
        pd.DataFrame(inter),
    )


@st.composite
def candidate_pools(draw):
    """A pool guaranteed to admit a design: n participant-disjoint candidates per cell, plus
    extra candidates that reuse participants (inside and across cells) and failing ones."""
    n_sites = draw(st.integers(1, 3))
    sites = [f"V{i:02d}" for i in range(n_sites)]
    with_gender = draw(st.booleans())
    mixes = ["female-female", "female-male", "male-male"] if with_gender else [""]
    mixes = mixes[: draw(st.integers(1, len(mixes)))]
    n = draw(st.integers(1, 3))
    specs, people, counter = [], [], 0
    for site in sites:
        for rel in ("familiar", "stranger"):
            for gmix in mixes:
                for _ in range(n):
                    pa, pb = f"P{len(people):04d}", f"P{len(people) + 1:04d}"
                    people += [pa, pb]
                    specs.append(((site, rel, gmix), f"I{counter:05d}", pa, pb))
                    counter += 1
    n_extra = draw(st.integers(0, 12))
    cells = sorted({spec[0] for spec in specs})
    for _ in range(n_extra):
        cell = draw(st.sampled_from(cells))
        pa = draw(st.sampled_from(people))
        pb = draw(st.sampled_from([*people, "NEW"]))
        pb = f"Q{counter:04d}" if pb in ("NEW", pa) else pb
        specs.append((cell, f"I{counter:05d}", pa, pb))
        counter += 1
    failing = [
        ((sites[0], "familiar", mixes[0]), f"I{counter + k:05d}", f"F{k}a", f"F{k}b") for k in range(2)
    ]
    order = draw(st.permutations(range(len(specs))))
    specs = [specs[i] for i in order]
    seed = draw(st.integers(0, 2**31 - 1))
    return specs, failing, n, seed, len(sites) * 2 * len(mixes)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(candidate_pools())
def test_sample_design_properties(pool):
    check_design(pool)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(candidate_pools())
def test_sample_design_properties_exact_solver(pool):
    """The same properties when the design comes from the exact 0/1 program (no greedy pass)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sampling, "GREEDY_TRIES", 0)
        check_design(pool)


def check_design(pool):
    specs, failing, n, seed, n_cells = pool
    report, clips, interactions = build_tables(specs, failing)
    params = {"seed": seed, "n_per_cell": n, "strata": ["site", "relationship", "gender_mix"]}
    design = sample_design(report, clips, interactions, params)
    DESIGN.validate(design)

    # fully crossed: every combination of observed levels, exactly n dyads each
    levels = [sorted({spec[0][k] for spec in specs}) for k in range(3)]
    if levels[2] == [""]:
        levels = levels[:2]
    expected_cells = {"|".join(c) for c in pd.MultiIndex.from_product(levels).to_flat_index()}
    assert len(expected_cells) == n_cells
    assert Counter(design["cell"]) == dict.fromkeys(expected_cells, n)

    # only passing interactions; each cell's rows carry that cell's stratum values
    passing = {spec[1] for spec in specs}
    assert set(design["interaction_id"]) <= passing
    assert design["interaction_id"].is_unique
    by_id = {spec[1]: spec for spec in specs}
    for row in design.itertuples():
        site, rel, gmix = by_id[row.interaction_id][0]
        assert (row.site, row.relationship, row.gender_mix) == (site, rel, gmix)
        assert row.cell == "|".join([site, rel, gmix] if levels[2:] else [site, rel])

    # no participant in two dyads
    participants = design["participant_a"].tolist() + design["participant_b"].tolist()
    assert len(participants) == len(set(participants))

    # early/late balanced within each cell; the odd extra alternates across cells
    extras = []
    for _, group in design.groupby("cell"):
        counts = Counter(group["position"])
        assert abs(counts["early"] - counts["late"]) <= 1
        extras.append(counts["early"] - counts["late"])
    if n % 2 and n_cells > 1:
        assert abs(sum(extras)) <= 1

    # the clip window is the one of the assigned position
    windows = clips.set_index(["interaction_id", "position"])
    for row in design.itertuples():
        assert windows.loc[(row.interaction_id, row.position), "clip_start"] == row.clip_start

    # dyad ids in order of (cell, interaction_id)
    assert design["dyad_id"].tolist() == [f"D{i:03d}" for i in range(1, len(design) + 1)]
    assert design[["cell", "interaction_id"]].values.tolist() == sorted(
        design[["cell", "interaction_id"]].values.tolist()
    )

    # reproducible
    again = sample_design(report, clips, interactions, params)
    pd.testing.assert_frame_equal(design, again)


def test_sample_design_different_seeds_differ():
    specs = [
        (("V00", rel, ""), f"I{rel[0]}{k:02d}", f"P{rel[0]}{k:02d}a", f"P{rel[0]}{k:02d}b")
        for rel in ("familiar", "stranger")
        for k in range(10)
    ]
    report, clips, interactions = build_tables(specs)
    designs = {
        tuple(sample_design(report, clips, interactions, {"seed": seed, "n_per_cell": 3})["interaction_id"])
        for seed in range(6)
    }
    assert len(designs) > 1


def test_sample_design_skips_empty_gender_mix():
    specs = [
        (("V00", rel, ""), f"I{rel}{k}", f"{rel}{k}a", f"{rel}{k}b")
        for rel in RELATIONSHIPS
        for k in range(2)
    ]
    report, clips, interactions = build_tables(specs)
    design = sample_design(report, clips, interactions, {"seed": 1, "n_per_cell": 2})
    assert sorted(set(design["cell"])) == ["V00|familiar", "V00|stranger"]


def test_design_error_names_cell_and_counts():
    cell_ok = ("V00", "familiar", "female-male")
    cell_short = ("V00", "stranger", "female-male")
    specs = [
        (cell_ok, "I01", "P01", "P02"),
        (cell_ok, "I02", "P03", "P04"),
        (cell_short, "I03", "P05", "P06"),
    ]
    failing = [(cell_short, "I04", "P07", "P08"), (cell_short, "I05", "P09", "P10")]
    report, clips, interactions = build_tables(specs, failing)
    with pytest.raises(DesignError) as info:
        sample_design(report, clips, interactions, {"seed": 0, "n_per_cell": 2})
    message = str(info.value)
    assert "'V00|stranger|female-male'" in message
    assert "has 1 candidate(s)" in message
    assert "3 interaction(s) in the cell" in message
    assert "f2_turns: 2" in message
    assert "lost to participant overlap: 0" in message
    assert "V00|familiar|female-male" not in message


def test_design_error_names_ingest_reasons_once_and_what_to_change():
    """An interaction never ingested counts once, under ingest with its reason, not as failing
    every filter (which were not evaluated); the message says which key to change (issue 49)."""
    cell = ("V00", "stranger", "female-male")
    specs = [(("V00", "familiar", "female-male"), "I01", "P01", "P02"), (cell, "I03", "P05", "P06")]
    report, clips, interactions = build_tables(
        specs, [(cell, "I04", "P07", "P08"), (cell, "I05", "P09", "P10")]
    )
    lost = report["interaction_id"] == "I04"
    for column in PASS_COLUMNS:
        report.loc[lost, column] = False
    report.loc[lost, "reasons"] = "ingest: missing wav for P0100; not evaluated: not ingested"
    with pytest.raises(DesignError) as info:
        sample_design(report, clips, interactions, {"seed": 0, "n_per_cell": 2})
    message = str(info.value)
    assert "failing filters: ingest: 1 (missing wav for P0100), f2_turns: 1;" in message, message
    assert "f1_prompt" not in message and "f5_amount" not in message
    assert "Lower sampling.n_per_cell (now 2) to at most the smallest cell's candidates (1)" in message


def test_design_error_for_participant_overlap():
    specs = [
        (("V00", "familiar", ""), "I01", "P01", "P02"),
        (("V00", "familiar", ""), "I02", "P01", "P03"),
        (("V00", "stranger", ""), "I03", "P02", "P04"),
        (("V00", "stranger", ""), "I04", "P03", "P05"),
    ]
    report, clips, interactions = build_tables(specs)
    # n=1 works: I01 + I04 or I02 + I03
    design = sample_design(report, clips, interactions, {"seed": 3, "n_per_cell": 1})
    assert sorted(design["interaction_id"]) in (["I01", "I04"], ["I02", "I03"])
    # n=2: familiar needs I01 and I02, which share P01
    with pytest.raises(DesignError, match=r"reusing a participant") as info:
        sample_design(report, clips, interactions, {"seed": 3, "n_per_cell": 2})
    message = str(info.value)
    assert re.search(r"cell 'V00\|(familiar|stranger)' needs 2 dyad\(s\) but has 2 candidate\(s\)", message)
    assert "lost to participant overlap: 2 candidate(s)" in message


def test_design_error_without_any_candidate():
    failing = [(("V00", "familiar", ""), f"I{k}", f"P{k}a", f"P{k}b") for k in range(3)]
    report, clips, interactions = build_tables([], failing)
    with pytest.raises(DesignError, match=r"no candidate interactions: 0 of 3 passed.*f2_turns: 3"):
        sample_design(report, clips, interactions, {"seed": 0, "n_per_cell": 1})


def test_participants_are_identified_per_vendor():
    # P01 at V00 and P01 at V01 are different people; two V00 interactions with P02 are not
    specs = [
        (("V00", "familiar", ""), "I1", "P01", "P02"),
        (("V01", "familiar", ""), "I2", "P01", "P03"),
        (("V00", "stranger", ""), "I3", "P04", "P05"),
        (("V01", "stranger", ""), "I4", "P06", "P07"),
    ]
    report, clips, interactions = build_tables(specs)
    interactions["vendor_id"] = interactions["site"].str[1:]
    design = sample_design(report, clips, interactions, {"seed": 5, "n_per_cell": 1})
    assert sorted(design["interaction_id"]) == ["I1", "I2", "I3", "I4"]
    with pytest.raises(DesignError, match="reusing a participant"):
        sample_design(report, clips, interactions.drop(columns="vendor_id"), {"seed": 5, "n_per_cell": 1})


def _gender_gap_tables():
    """Two sites, both relationships, two gender mixes; one V01 participant lacks a gender."""
    specs = []
    for site in ("V00", "V01"):
        for rel in RELATIONSHIPS:
            for gmix in ("female-female", "female-male"):
                key = f"{site}{rel[0]}{gmix[7]}"
                specs.append(((site, rel, gmix), f"I{key}", f"P{key}a", f"P{key}b"))
    specs.append((("V01", "familiar", ""), "IV01gap", "PGAPa", "PGAPb"))
    report, clips, interactions = build_tables(specs)
    interactions["gender_a"] = interactions["gender_mix"].str.split("-").str[0].fillna("")
    interactions["gender_b"] = interactions["gender_mix"].str.split("-").str[-1].fillna("")
    interactions.loc[interactions["interaction_id"] == "IV01gap", ["gender_a", "gender_b"]] = ["male", ""]
    return report, clips, interactions


def test_missing_stratum_value_stops_the_design_by_default():
    report, clips, interactions = _gender_gap_tables()
    with pytest.raises(DesignError) as info:
        sample_design(report, clips, interactions, {"seed": 0, "n_per_cell": 1})
    message = str(info.value)
    assert "1 passing interaction(s) have no usable stratum value" in message
    assert "IV01gap: empty gender_mix (no gender for PGAPb)" in message
    assert "sampling.unknown_stratum: level" in message
    with pytest.raises(DesignError, match="IV01gap: empty gender_mix"):
        sample_design(report, clips, interactions, {"seed": 0, "n_per_cell": 1, "unknown_stratum": "error"})


def test_missing_stratum_value_as_an_explicit_level():
    report, clips, interactions = _gender_gap_tables()
    params = {"seed": 0, "n_per_cell": 1, "unknown_stratum": "level"}
    # 'unknown' is a level like any other: crossed with every site and relationship
    with pytest.raises(DesignError, match=r"cell 'V00\|familiar\|unknown' needs 1 dyad\(s\) but has 0"):
        sample_design(report, clips, interactions, params)
    # with one more gap in every other site x relationship cell, the design fills, V01 included
    extra = [
        (("V00", "familiar", ""), "IV00fgap", "Q1a", "Q1b"),
        (("V00", "stranger", ""), "IV00sgap", "Q2a", "Q2b"),
        (("V01", "stranger", ""), "IV01sgap", "Q3a", "Q3b"),
    ]
    report2, clips2, inter2 = build_tables(extra)
    report = FILTER_REPORT.validate(pd.concat([report, report2], ignore_index=True))
    clips = CLIP_CANDIDATES.validate(pd.concat([clips, clips2], ignore_index=True))
    interactions = pd.concat([interactions, inter2], ignore_index=True).fillna("")
    design = sample_design(report, clips, interactions, params)
    assert sorted(set(design["site"])) == ["V00", "V01"]
    unknown = design[design["gender_mix"] == "unknown"]
    assert sorted(unknown["cell"]) == [f"{s}|{r}|unknown" for s in ("V00", "V01") for r in RELATIONSHIPS]
    assert "IV01gap" in set(unknown["interaction_id"])
    with pytest.raises(ValueError, match="unknown_stratum must be one of error, level"):
        sample_design(report, clips, interactions, {**params, "unknown_stratum": "drop"})


def test_f2_counts_merged_turns_by_default_and_pauses_only_on_request():
    """A turn lasts until the other person speaks: one speaker's pauses do not start new turns."""
    # 0-40 s: a talks in five sentences with 1 s pauses, then b answers, then a again
    rows = [("a", 5.0 + 3.0 * k, 7.0 + 3.0 * k) for k in range(5)]
    rows += [("b", 20.5, 23.0), ("b", 24.0, 26.0), ("a", 26.5, 40.0)]
    line = segs(rows)
    assert merge_turns(line).speaker.tolist() == ["a", "b", "a"]  # whatever the pause
    assert len(merge_turns(line, None)) == 3
    assert len(merge_turns(line, 0.3)) == 8  # the option: every pause over 0.3 s is a new turn
    interactions = pd.DataFrame({"interaction_id": ["I1"]})
    signals = pd.DataFrame({"interaction_id": ["I1"], "duration_audio_a": [40.0], "duration_audio_b": [40.0]})
    merged = clip_candidates(interactions, line, None, signals, CLIPS, turn_gap_s=None)
    paused = clip_candidates(interactions, line, None, signals, CLIPS, turn_gap_s=0.3)
    early = {
        name: frame.set_index("position").loc["early", "n_turns"]
        for name, frame in (("m", merged), ("p", paused))
    }
    assert early["m"] == 2 and early["p"] >= 5  # the monologue passed F2 (min_turns 4) only by its pauses

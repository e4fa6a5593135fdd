"""The demo corpus generator: Seamless Interaction layout, designed behaviour, built-in failures.

One small corpus (1 site x 2 relationships x 2 gender compositions x 1 candidate, plus
four failures) is generated once for the module; a second, two-interaction corpus is
generated twice into the same root to check determinism and replacement. Duration is the
demo config's 50 s, built against its F5 threshold of 40 s (`min_total_speech_s`): 41 s of
voiced speech needs about 49.6 s with the strangers' 0.9 s gaps.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import wave
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import shared_dir

from omnisocial.familiarity.clips import clip_candidates
from omnisocial.familiarity.corpus.demo import FAILURES, gender_mix, generate_demo_corpus, speech_targets
from omnisocial.familiarity.corpus.demo.design import (
    CLIP_TURN_SLACK,
    DEFAULT_CLIPS,
    MIN_SPEAKER_S,
    MIN_TURNS,
    TURN_GAP_S,
)
from omnisocial.familiarity.corpus.demo.timeline import Piece, clips_pass

pytestmark = pytest.mark.skipif(
    shutil.which("espeak-ng") is None or shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None,
    reason="needs espeak-ng, ffmpeg and ffprobe",
)

STYLE = {
    "familiar": {"gap_mean_s": 0.25, "overlap_prob": 0.30, "backchannel_prob": 0.35, "words_per_minute": 185},
    "stranger": {"gap_mean_s": 0.90, "overlap_prob": 0.05, "backchannel_prob": 0.08, "words_per_minute": 150},
}
PARAMS = {
    "seed": 7,
    "sites": ["V00"],
    "candidates_per_cell": 1,
    "duration_s": 50,
    "min_total_speech_s": 40.0,
    "sample_rate": 16000,
    "video": {"width": 160, "height": 120, "fps": 10},
    "crosstalk_db": -24,
    "style": STYLE,
    "failures": ["duplicated_tracks", "truncated_video", "unreadable_json", "too_few_turns"],
}
F5_S = PARAMS["min_total_speech_s"]  # the filters' min_total_speech_s the corpus is built for
HEADERS = {
    "interactions.csv": ",prompt_hash,prompt_id_unique,participant_a_prompt_text,participant_b_prompt_text,"
    "ipc_a,ipc_b,interaction_type",
    "relationships.csv": "vendor_id,session_id,relationship,relationship_detail",
    "participants.csv": "extraversion,agreeableness,conscientiousness,neuroticism,openness,"
    "vendor_id,participant_id",
    "filelist.csv": "file_id,label,split,batch_idx,archive_idx,has_annotation_1p,has_annotation_3p,"
    "has_imitator_movement",
    "participant_genders.csv": "participant_id,gender",
    "_demo_truth.csv": "interaction_id,expected",
}
FILE_ID = re.compile(r"^V(\d{2})_S(\d{4})_I(\d{8})_P(\w+)$")
LOCATION = re.compile(r"^naturalistic/(dev|test)/\d{4}/\d{4}$")
WINDOW = 20.0
TURN_GAP = float("inf")  # filters.turn_gap_s null: one speaker's consecutive segments are one turn


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Generated once (conftest.shared_dir: its 7 CPU-s shown as a shared run, not as the first
    test's); the tests read it and never change it."""
    build = lambda folder: generate_demo_corpus(folder / "seamless", PARAMS)  # noqa: E731
    return shared_dir(tmp_path_factory, "demo-corpus", build) / "seamless"


def _read(root: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(root / name, dtype=str, keep_default_na=False)


def _files(root: Path) -> dict[str, dict[str, Path]]:
    """file_id -> {suffix: path} for every participant file under naturalistic/."""
    out: dict[str, dict[str, Path]] = {}
    for path in sorted((root / "naturalistic").rglob("*")):
        if path.is_file():
            out.setdefault(path.stem, {})[path.suffix] = path
    return out


def _by_interaction(root: Path) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for file_id in _files(root):
        groups.setdefault(file_id.rsplit("_P", 1)[0], []).append(file_id)
    return {key: sorted(value) for key, value in groups.items()}


def _truth(root: Path) -> dict[str, str]:
    return dict(_read(root, "_demo_truth.csv").itertuples(index=False))


def _segments(path: Path) -> list[dict]:
    return json.loads(path.read_text())["metadata:transcript"]


def _dialogue(root: Path, interaction_id: str) -> list[tuple[int, float, float, str]]:
    """(speaker, start, end, text) of both participants' transcript segments, in time order."""
    files = _files(root)
    segments = []
    for speaker, file_id in enumerate(_by_interaction(root)[interaction_id]):
        segments += [
            (speaker, s["start"], s["end"], s["transcript"]) for s in _segments(files[file_id][".json"])
        ]
    return sorted(segments, key=lambda s: s[1])


def _turns(segments) -> list[tuple[int, float, float]]:
    """Merged turns: same-speaker segments closer than TURN_GAP joined; one-word backchannels left out."""
    turns: list[list] = []
    for speaker, start, end, text in segments:
        if len(text.split()) < 2:
            continue
        if turns and turns[-1][0] == speaker and start - turns[-1][2] < TURN_GAP:
            turns[-1][2] = max(turns[-1][2], end)
        else:
            turns.append([speaker, start, end])
    return [tuple(t) for t in turns]


def _window_measures(segments, duration: float) -> tuple[list[int], list[float]]:
    """Per 20 s window (1 s steps): merged turns overlapping it, least speech of either speaker in it."""
    turns = _turns(segments)
    counts, least = [], []
    for lo in np.arange(0.0, duration - WINDOW + 1e-9, 1.0):
        hi = lo + WINDOW
        counts.append(sum(1 for _, s, e in turns if min(e, hi) - max(s, lo) > 0.1))
        spoken = [
            sum(
                max(0.0, min(e, hi) - max(s, lo))
                for who, s, e, t in segments
                if who == speaker and len(t.split()) > 1
            )
            for speaker in (0, 1)
        ]
        least.append(min(spoken))
    return counts, least


def _union(intervals) -> float:
    total, end_so_far = 0.0, -np.inf
    for start, end in sorted(intervals):
        if start > end_so_far:
            total += end - start
            end_so_far = end
        elif end > end_so_far:
            total += end - end_so_far
            end_so_far = end
    return total


def _vad_union(root: Path, interaction_id: str) -> float:
    files = _files(root)
    intervals = []
    for file_id in _by_interaction(root)[interaction_id]:
        vad = json.loads(files[file_id][".json"].read_text())["metadata:vad"]
        intervals += [(v["start"], v["end"]) for v in vad]
    return _union(intervals)


def _probe(path: Path) -> dict:
    result = subprocess.run(
        ["ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout)


def _wav(path: Path) -> tuple[np.ndarray, int, int, int]:
    with wave.open(str(path), "rb") as handle:
        data = np.frombuffer(handle.readframes(handle.getnframes()), dtype="<i2").astype(np.float64) / 32768
        return data, handle.getframerate(), handle.getnchannels(), handle.getsampwidth()


def _good(root: Path) -> list[str]:
    return [iid for iid, expected in _truth(root).items() if expected == "pass"]


def _failure(root: Path, name: str) -> str:
    return next(iid for iid, expected in _truth(root).items() if expected == name)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------- layout and tables


@pytest.mark.heavy  # 10 CPU-s
def test_headers_are_exactly_the_seamless_ones(corpus):
    for name, header in HEADERS.items():
        assert (corpus / name).read_text().splitlines()[0] == header, name


def test_layout_paths_and_filelist_agree(corpus):
    files = _files(corpus)
    filelist = _read(corpus, "filelist.csv")
    assert sorted(filelist["file_id"]) == sorted(files)
    for row in filelist.itertuples(index=False):
        suffixes = files[row.file_id]
        assert set(suffixes) == {".mp4", ".wav", ".json"}
        folder = suffixes[".wav"].parent.relative_to(corpus).as_posix()
        assert LOCATION.match(folder), folder
        assert folder == f"naturalistic/{row.split}/{int(row.batch_idx):04d}/{int(row.archive_idx):04d}"
        assert row.label == "naturalistic"
        for flag in (row.has_annotation_1p, row.has_annotation_3p, row.has_imitator_movement):
            assert flag in {"True", "False"}
    # Every interaction of the truth table has its two participants' files.
    groups = _by_interaction(corpus)
    assert set(groups) == set(_truth(corpus))
    assert all(len(members) == 2 for members in groups.values())


def test_ids_parse_and_join_across_tables(corpus):
    files = _files(corpus)
    truth = _truth(corpus)
    participants = _read(corpus, "participants.csv")
    genders = _read(corpus, "participant_genders.csv")
    relationships = _read(corpus, "relationships.csv")
    prompts = _read(corpus, "interactions.csv")
    known = set(zip(participants["vendor_id"], participants["participant_id"], strict=True))
    sessions = set(zip(relationships["vendor_id"], relationships["session_id"], strict=True))
    for file_id, paths in files.items():
        match = FILE_ID.match(file_id)
        assert match, file_id
        vendor, session, prompt, participant = match.groups()
        try:
            assert json.loads(paths[".json"].read_text())["id"] == file_id
        except json.JSONDecodeError:
            assert truth[file_id.rsplit("_P", 1)[0]] == "unreadable_json"
        assert (vendor, participant) in known
        assert (f"V{vendor}", session) in sessions
        assert prompt in set(prompts["prompt_hash"])
    assert any(pid.endswith("A") for pid in participants["participant_id"])
    assert any(file_id.endswith("A") for file_id in files)
    assert participants["vendor_id"].str.fullmatch(r"\d{2}").all()
    assert participants["participant_id"].str.fullmatch(r"\d{4}A?").all()
    assert set(genders["participant_id"]) == set(participants["participant_id"])
    assert set(genders["gender"]) <= {"female", "male"}
    for trait in ("extraversion", "agreeableness", "conscientiousness", "neuroticism", "openness"):
        assert participants[trait].astype(float).between(1, 5).all()
    # Nobody takes part in two interactions.
    people = [file_id.rsplit("_P", 1)[1] for file_id in files]
    assert len(people) == len(set(people))


def test_relationships_prompts_and_design(corpus):
    relationships = _read(corpus, "relationships.csv")
    assert relationships["vendor_id"].str.fullmatch(r"V\d{2}").all()
    assert relationships["session_id"].str.fullmatch(r"\d{4}").all()
    assert set(relationships["relationship"]) == {"familiar", "stranger"}
    familiar = relationships["relationship"] == "familiar"
    assert set(relationships.loc[familiar, "relationship_detail"]) <= {
        "friends",
        "coworkers",
        "siblings",
        "dating",
        "spouse",
        "family-generic",
    }
    assert set(relationships.loc[~familiar, "relationship_detail"]) <= {"", "none"}

    prompts = _read(corpus, "interactions.csv")
    assert prompts["prompt_hash"].str.fullmatch(r"\d{8}").all()
    either_or = prompts[prompts["prompt_id_unique"].str.contains("_EO_")]
    assert len(either_or) >= 4
    assert either_or["participant_a_prompt_text"].str.startswith("Would you rather").all()

    # The good interactions fill site x relationship x gender composition, one each here.
    relation = {
        f"{v}_S{s}": r for v, s, r in relationships[["vendor_id", "session_id", "relationship"]].values
    }
    gender = dict(_read(corpus, "participant_genders.csv").values)
    cells = []
    for iid in _good(corpus):
        a, b = (file_id.rsplit("_P", 1)[1] for file_id in _by_interaction(corpus)[iid])
        cells.append((iid[:3], relation[iid.rsplit("_I", 1)[0]], gender_mix(gender[a], gender[b])))
    expected = [("V00", r, m) for r in ("familiar", "stranger") for m in ("female-female", "male-male")]
    assert sorted(cells) == sorted(expected)


def _clips_pass_on_frames(pieces: list[Piece], duration: float) -> bool:
    """`clips_pass` as first written: `clip_candidates` on frames built from the pieces."""
    segments = pd.DataFrame(
        {
            "interaction_id": "x",
            "speaker": ["a" if p.speaker == 0 else "b" for p in pieces],
            "start": [p.start for p in pieces],
            "end": [p.end for p in pieces],
        }
    )
    signals = pd.DataFrame(
        {"interaction_id": ["x"], "duration_audio_a": [duration], "duration_audio_b": [duration]}
    )
    clips = clip_candidates(
        pd.DataFrame({"interaction_id": ["x"]}), segments, None, signals, DEFAULT_CLIPS, TURN_GAP_S
    )
    return (
        len(clips) == 2
        and bool((clips["n_turns"] >= MIN_TURNS + CLIP_TURN_SLACK).all())
        and bool((clips[["speech_s_a", "speech_s_b"]].min(axis=1) >= MIN_SPEAKER_S).all())
    )


def _draft(rng: np.random.Generator) -> tuple[list[Piece], float]:
    """A random layout: mostly alternating, with same-speaker runs, overlaps, tied starts,
    empty pieces (end == start) and backchannels; sometimes too short for a late clip."""
    duration = float(rng.choice([24.0, 30.0, 50.0, 60.0]))
    pieces: list[Piece] = []
    t = float(rng.uniform(0.0, 1.0))
    while t < duration - 0.5:
        same = pieces and rng.random() < 0.25
        who = pieces[-1].speaker if same else (1 - pieces[-1].speaker if pieces else 0)
        samples = 0 if rng.random() < 0.05 else int(rng.integers(30, 500))  # at 100 Hz
        start = round(t, 1) if rng.random() < 0.5 else round(t, 3)
        pieces.append(Piece(who, start, "", np.zeros(samples, np.float32), 100, rng.random() < 0.1))
        t = start if rng.random() < 0.05 else start + samples / 100 + float(rng.uniform(-0.8, 1.5))
    return pieces, duration


def test_clips_pass_answers_as_clip_candidates_on_frames():
    """The demo's draft check runs the clip selection on arrays; same answer as on frames."""
    answers = []
    for seed in range(150):
        pieces, duration = _draft(np.random.default_rng(seed))
        answers.append(clips_pass(pieces, duration))
        assert answers[-1] == _clips_pass_on_frames(pieces, duration), seed
    assert 10 <= sum(answers) <= 140  # both answers were exercised


def test_gender_mix_sorts_the_pair():
    assert gender_mix("male", "female") == "female-male"
    assert gender_mix("female", "male") == "female-male"
    assert gender_mix("male", "male") == "male-male"


def test_speech_targets_scale_with_the_threshold():
    # 90 s, the schema default: exactly the targets the corpus was tuned with (same bytes)
    default = speech_targets(90.0)
    assert default.speech_s == 91.0
    assert default.little_speech_s == (40.0, 75.0)
    assert default.duration_s == (110.0, 140.0)
    demo = speech_targets(40.0)
    assert demo.speech_s == 41.0
    assert demo.little_speech_s == pytest.approx((40 / 90 * 40, 75 / 90 * 40))
    assert demo.duration_s == pytest.approx((41 * 110 / 91, 140 / 90 * 40))
    assert demo.duration_s[0] < PARAMS["duration_s"] < demo.duration_s[1]


def test_bad_params_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="unknown demo failure"):
        generate_demo_corpus(tmp_path / "x", {**PARAMS, "failures": ["no_such_check"]})
    with pytest.raises(ValueError, match="vendor ids"):
        generate_demo_corpus(tmp_path / "x", {**PARAMS, "sites": ["site1"]})
    for duration in (45, 70):  # outside 49.56-62.22 s, the range for 40 s of speech
        with pytest.raises(
            ValueError,
            match=r"demo.duration_s \(\d+\) must be within 49.56-62.22 s for demo.min_total_speech_s 40",
        ):
            generate_demo_corpus(tmp_path / "x", {**PARAMS, "duration_s": duration})
    with pytest.raises(ValueError, match="lack min_total_speech_s"):
        generate_demo_corpus(tmp_path / "x", {k: v for k, v in PARAMS.items() if k != "min_total_speech_s"})
    assert not (tmp_path / "x").exists()
    assert set(PARAMS["failures"]) <= set(FAILURES)


# --------------------------------------------------------------------------- media


def test_media_formats(corpus):
    duration = PARAMS["duration_s"]
    truncated = _failure(corpus, "truncated_video")
    for file_id, paths in _files(corpus).items():
        samples, rate, channels, width = _wav(paths[".wav"])
        assert (rate, channels, width) == (PARAMS["sample_rate"], 1, 2)
        assert len(samples) == duration * rate
        info = _probe(paths[".mp4"])
        streams = {s["codec_type"]: s for s in info["streams"]}
        video, audio = streams["video"], streams["audio"]
        assert video["codec_name"] == "h264" and video["pix_fmt"] == "yuv420p"
        assert (video["width"], video["height"]) == (160, 120)
        assert video["r_frame_rate"] == "10/1"
        assert audio["codec_name"] == "aac" and audio["channels"] == 1
        if not file_id.startswith(truncated):
            assert float(info["format"]["duration"]) == pytest.approx(duration, abs=0.2)


def test_microphones_hear_the_other_speaker_at_crosstalk_level(corpus):
    """Where only b talks, a's microphone carries b's voice `crosstalk_db` quieter."""
    iid = _good(corpus)[0]
    files = _files(corpus)
    ids = _by_interaction(corpus)[iid]
    mics = [_wav(files[file_id][".wav"])[0] for file_id in ids]
    segments = _dialogue(corpus, iid)
    rate = PARAMS["sample_rate"]
    ratios = []
    for speaker in (0, 1):
        other = [(s, e) for who, s, e, _ in segments if who == 1 - speaker]
        solo = [
            (s, e)
            for who, s, e, _ in segments
            if who == speaker and not any(min(e, oe) > max(s, os_) for os_, oe in other) and e - s > 1.5
        ]
        index = np.concatenate([np.arange(int(s * rate), int(e * rate)) for s, e in solo])
        own = np.sqrt(np.mean(mics[speaker][index] ** 2))
        bleed = np.sqrt(np.mean(mics[1 - speaker][index] ** 2))
        ratios.append(20 * np.log10(bleed / own))
    assert ratios == pytest.approx([PARAMS["crosstalk_db"]] * 2, abs=1.5)


def test_video_mouth_follows_own_speech(corpus):
    """Decoded frames: the mouth region is darker (open) while the camera's owner speaks."""
    iid = _good(corpus)[0]
    files = _files(corpus)
    file_id = _by_interaction(corpus)[iid][0]
    raw = subprocess.run(
        [
            "ffmpeg",
            "-v",
            "error",
            "-i",
            str(files[file_id][".mp4"]),
            "-f",
            "rawvideo",
            "-pix_fmt",
            "gray",
            "-",
        ],
        capture_output=True,
        check=True,
    ).stdout
    frames = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 120, 160)
    mouth = (frames[:, 70:98, 70:90] < 90).mean(axis=(1, 2))  # rows below the face's midline
    vad = json.loads(files[file_id][".json"].read_text())["metadata:vad"]
    times = (np.arange(len(frames)) + 0.5) / PARAMS["video"]["fps"]
    speaking = np.zeros(len(frames), dtype=bool)
    for v in vad:
        speaking |= (times >= v["start"]) & (times < v["end"])
    assert speaking.sum() > 100 and (~speaking).sum() > 10
    assert mouth[speaking].mean() > 3 * mouth[~speaking].mean()


# --------------------------------------------------------------------------- conversation design


def test_good_interactions_meet_the_filter_targets(corpus):
    duration = PARAMS["duration_s"]
    for iid in _good(corpus):
        assert _vad_union(corpus, iid) >= F5_S, iid
        segments = _dialogue(corpus, iid)
        assert "would you rather" in segments[0][3].lower()
        counts, least = _window_measures(segments, duration)
        assert min(counts) >= 4, iid
        assert min(least) >= 3.0, iid


def test_familiar_pairs_answer_faster_than_strangers(corpus):
    relationships = _read(corpus, "relationships.csv")
    relation = {
        f"{v}_S{s}": r for v, s, r in relationships[["vendor_id", "session_id", "relationship"]].values
    }
    gaps = {"familiar": [], "stranger": []}
    for iid in _good(corpus):
        turns = _turns(_dialogue(corpus, iid))
        gaps[relation[iid.rsplit("_I", 1)[0]]] += [
            nxt[1] - cur[2] for cur, nxt in zip(turns, turns[1:], strict=False) if nxt[0] != cur[0]
        ]
    familiar, stranger = np.mean(gaps["familiar"]), np.mean(gaps["stranger"])
    assert familiar < stranger - 0.3, (familiar, stranger)
    # Familiar pairs overlap; strangers mostly leave a pause.
    assert np.mean(np.array(gaps["familiar"]) < 0) > np.mean(np.array(gaps["stranger"]) < 0)


def test_too_few_turns_fails_turns_only(corpus):
    iid = _failure(corpus, "too_few_turns")
    counts, least = _window_measures(_dialogue(corpus, iid), PARAMS["duration_s"])
    assert max(counts) < 4
    assert min(least) >= 3.0
    assert _vad_union(corpus, iid) >= F5_S


def test_duplicated_tracks_are_bit_identical(corpus):
    files = _files(corpus)
    a, b = _by_interaction(corpus)[_failure(corpus, "duplicated_tracks")]
    assert _sha(files[a][".wav"]) == _sha(files[b][".wav"])
    good_a, good_b = _by_interaction(corpus)[_good(corpus)[0]]
    assert _sha(files[good_a][".wav"]) != _sha(files[good_b][".wav"])


def test_truncated_video_is_shorter_than_its_audio(corpus):
    files = _files(corpus)
    durations = []
    for file_id in _by_interaction(corpus)[_failure(corpus, "truncated_video")]:
        samples, rate, _, _ = _wav(files[file_id][".wav"])
        durations.append((float(_probe(files[file_id][".mp4"])["format"]["duration"]), len(samples) / rate))
    shortest = min(durations)
    assert shortest[0] == pytest.approx(0.4 * PARAMS["duration_s"], abs=0.5)
    assert shortest[1] == PARAMS["duration_s"]
    assert max(durations)[0] == pytest.approx(PARAMS["duration_s"], abs=0.2)


def test_unreadable_json_does_not_parse(corpus):
    files = _files(corpus)
    readable = []
    for file_id in _by_interaction(corpus)[_failure(corpus, "unreadable_json")]:
        try:
            readable.append(json.loads(files[file_id][".json"].read_text())["id"] == file_id)
        except json.JSONDecodeError:
            readable.append(False)
    assert sorted(readable) == [False, True]


# --------------------------------------------------------------------------- determinism


@pytest.mark.heavy  # 6 CPU-s
def test_same_seed_same_bytes_and_root_replaced(tmp_path):
    params = {**PARAMS, "candidates_per_cell": 0, "failures": ["silent_speaker", "too_little_speech"]}
    root = tmp_path / "seamless"

    def digest() -> dict[str, str]:
        return {p.relative_to(root).as_posix(): _sha(p) for p in sorted(root.rglob("*")) if p.is_file()}

    generate_demo_corpus(root, params)
    first = digest()
    (root / "stale.txt").write_text("left over from an older corpus")
    generate_demo_corpus(root, params)
    second = digest()
    assert first == second  # csv, json, wav and mp4 bytes alike; the stale file is gone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["seamless"]
    assert any(name.endswith(".wav") for name in first) and any(name.endswith(".csv") for name in first)

    # The two failures of this corpus hold what they promise.
    silent = _failure(root, "silent_speaker")
    files = _files(root)
    data = [json.loads(files[f][".json"].read_text()) for f in _by_interaction(root)[silent]]
    data.sort(key=lambda d: len(d["metadata:vad"]))
    assert data[0]["metadata:transcript"] == [] and data[0]["metadata:vad"] == []
    assert len(data[1]["metadata:transcript"]) > 10
    assert _vad_union(root, silent) >= F5_S
    counts, _ = _window_measures(_dialogue(root, silent), params["duration_s"])
    assert max(counts) == 1  # one speaker is one merged turn: F2 fails too, as a listener hears it
    little = _vad_union(root, _failure(root, "too_little_speech"))
    low, high = speech_targets(F5_S).little_speech_s
    assert low <= little <= high < F5_S  # far below the F5 threshold

    other = {**params, "seed": params["seed"] + 1}
    generate_demo_corpus(root, other)
    assert digest() != first

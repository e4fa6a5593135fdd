"""Multi-party clips of the who / when / how demo and their SocialOmni files (`socialomni.demo`)."""

from __future__ import annotations

import colorsys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from omnisocial.demo_kit import SHORT_GAP_S, _stamp, encode_mp4, json_dump, speak, text_mask, write_wav
from omnisocial.importing import format_excel_time
from omnisocial.io import write_csv
from omnisocial.media.pipe import yuv420p
from omnisocial.socialomni.contracts import LETTERS
from omnisocial.socialomni.demo.topics import NAMES, TOPICS, Line, Topic
from omnisocial.socialomni.who import build_who_items

TAIL_S = 0.8  # silence after the last turn


LEAD_S = (0.5, 1.2)  # silence before the first turn


LONG_GAP_EXTRA_S = (0.5, 1.2)  # long gap = cut_lag_s + this


NOISE_RMS = 0.001


MAX_TRIES = 40


STREAM_LEAD_S = 0.5  # streaming when: the first query comes this long after the ending turn starts


def frame_envelope(speech: np.ndarray, sample_rate: int, fps: float, n_frames: int) -> np.ndarray:
    """Per video frame: RMS of `speech` over the 90th percentile of voiced frames, clipped to [0, 1]."""
    edges = np.minimum(np.round(np.arange(n_frames + 1) * sample_rate / fps).astype(int), len(speech))
    power = np.concatenate([[0.0], np.cumsum(np.square(speech, dtype=np.float64))])
    rms = np.sqrt((power[edges[1:]] - power[edges[:-1]]) / np.maximum(np.diff(edges), 1))
    voiced = rms[rms > 1e-3]
    reference = float(np.percentile(voiced, 90)) if voiced.size else 1.0
    return np.clip(rms / max(reference, 1e-6), 0.0, 1.0)


@dataclass(frozen=True)
class Speaker:
    name: str
    voice: str
    pitch: int
    speed: int
    colour: tuple[int, int, int]
    gain: float
    on_screen: bool
    slot: int  # panel 0-3 (row-major), -1 when off-screen


@dataclass(frozen=True)
class Turn:
    speaker: int
    start: float
    end: float
    line: Line


def _speakers(rng: np.random.Generator, n: int, offscreen: bool) -> list[Speaker]:
    chosen = rng.choice(len(NAMES), size=n, replace=False)
    female = [f"f{k}" for k in range(1, 6)]
    male = [f"m{k}" for k in range(1, 8)]
    rng.shuffle(female)
    rng.shuffle(male)
    hidden = int(rng.integers(1, n)) if offscreen else -1
    people, slot = [], 0
    for k, index in enumerate(chosen):
        name, gender = NAMES[int(index)]
        variant = female.pop() if gender == "f" else male.pop()
        pitch = int(rng.integers(50, 81)) if gender == "f" else int(rng.integers(20, 51))
        hue = (k / n + float(rng.uniform(0, 0.1))) % 1.0
        r, g, b = colorsys.hsv_to_rgb(hue, 0.55, 0.7)
        on_screen = k != hidden
        people.append(
            Speaker(
                name=name,
                voice=f"en+{variant}",
                pitch=pitch,
                speed=int(rng.integers(155, 185)),
                colour=(int(r * 255), int(g * 255), int(b * 255)),
                gain=float(rng.uniform(0.6, 0.8)),
                on_screen=on_screen,
                slot=slot if on_screen else -1,
            )
        )
        slot += on_screen
    return people


def _layout(
    rng: np.random.Generator, topic: Topic, people: list[Speaker], audio: Voices, p: dict
) -> list[Turn] | None:
    """Turns of one clip, or None when this draw misses a target (redrawn by the caller)."""
    lo, hi = (float(v) for v in p["multiparty_duration_s"])
    target = float(rng.uniform(lo, hi - 1.0))
    cut_lag = float(p["cut_lag_s"])
    n = len(people)
    turns: list[Turn] = []
    t = float(rng.uniform(*LEAD_S))
    previous = -1
    for number, line in enumerate(topic.lines):
        silent = [k for k in range(n) if k != previous and all(turn.speaker != k for turn in turns)]
        others = [k for k in range(n) if k != previous]
        pool = silent if silent and (number == 0 or rng.random() < 0.7) else others
        speaker = int(pool[int(rng.integers(len(pool)))]) if number else 0
        duration = len(audio[(speaker, number)]) / int(p["sample_rate"])
        if t + duration + TAIL_S > hi:
            break
        turns.append(Turn(speaker, round(t, 4), round(t + duration, 4), line))
        previous = speaker
        if t + duration + TAIL_S >= target and len(turns) > n:
            break
        if rng.random() < float(p["short_gap_prob"]):
            gap = float(rng.uniform(*SHORT_GAP_S))
        else:
            gap = cut_lag + float(rng.uniform(*LONG_GAP_EXTRA_S))
        t = t + duration + gap
    long_gaps = sum(1 for a, b in zip(turns, turns[1:], strict=False) if b.start - a.end > cut_lag + 0.4)
    if len({turn.speaker for turn in turns}) < n or long_gaps < int(p["when_transitions_per_clip"]):
        return None
    if len(turns) < max(int(p["who_items_per_clip"]), 2):
        return None
    return turns


class Voices:
    """espeak-ng recordings of (speaker, line number), synthesized on first use and cached."""

    def __init__(self, people: list[Speaker], topic: Topic, sample_rate: int, workdir: Path):
        self.people, self.topic, self.sample_rate, self.workdir = people, topic, sample_rate, workdir
        self.cache: dict[tuple[int, int], np.ndarray] = {}

    def __getitem__(self, key: tuple[int, int]) -> np.ndarray:
        if key not in self.cache:
            speaker, number = key
            person = self.people[speaker]
            path = self.workdir / "speak.wav"
            text = self.topic.lines[number].text
            self.cache[key] = speak(person.voice, person.pitch, person.speed, text, path, self.sample_rate)
        return self.cache[key]


def _panel_box(slot: int, width: int, height: int) -> tuple[int, int, int, int]:
    pw, ph = width // 2, height // 2
    x0, y0 = (slot % 2) * pw, (slot // 2) * ph
    return x0, y0, x0 + pw, y0 + ph


def _panel(person: Speaker, pw: int, ph: int, mouth: int, name_mask: np.ndarray) -> np.ndarray:
    panel = np.empty((ph, pw, 3), dtype=np.uint8)
    panel[:] = person.colour
    panel[:2, :] = 30
    panel[:, :2] = 30
    fx0, fx1, fy0, fy1 = int(pw * 0.32), int(pw * 0.68), int(ph * 0.1), int(ph * 0.74)
    panel[fy0:fy1, fx0:fx1] = (224, 188, 160)
    eye = max(2, ph // 20)
    ey = int(ph * 0.3)
    for ex in (int(pw * 0.42), int(pw * 0.58)):
        panel[ey : ey + eye, ex - eye // 2 : ex - eye // 2 + eye] = (40, 30, 30)
    my = int(ph * 0.56)
    panel[max(fy0, my - mouth) : min(fy1, my + mouth + 1), int(pw * 0.42) : int(pw * 0.58)] = (120, 20, 30)
    _stamp(panel, name_mask, (pw - name_mask.shape[1]) // 2, ph - 9, (255, 255, 255))
    return panel


def _multiparty_video(people: list[Speaker], tracks: list[np.ndarray], p: dict, n_frames: int) -> bytes:
    video = p["video"]
    width, height, fps = int(video["width"]), int(video["height"]), float(video["fps"])
    pw, ph = width // 2, height // 2
    empty = np.full((height, width, 3), 24, dtype=np.uint8)
    max_mouth = max(1, int(ph * 0.09))
    mouths = {}
    for k, person in enumerate(people):
        if person.on_screen:
            env = frame_envelope(tracks[k], int(p["sample_rate"]), fps, n_frames)
            mouths[k] = np.round(env * max_mouth).astype(int)
    cache: dict[tuple, bytes] = {}
    names = {k: text_mask(person.name) for k, person in enumerate(people)}
    out = []
    for i in range(n_frames):
        key = tuple(int(mouths[k][i]) for k in sorted(mouths))
        if key not in cache:
            frame = empty.copy()
            for k in sorted(mouths):
                x0, y0, x1, y1 = _panel_box(people[k].slot, width, height)
                frame[y0:y1, x0:x1] = _panel(people[k], pw, ph, int(mouths[k][i]), names[k])
            cache[key] = yuv420p(frame)
        out.append(cache[key])
    return b"".join(out)


def _transcript_lines(turns: list[Turn], people: list[Speaker], before: float) -> str:
    return "\n".join(f"{people[t.speaker].name}: {t.line.text}" for t in turns if t.end <= before + 1e-9)


def _ceil_tenth(value: float) -> float:
    return float(np.ceil(round(value * 10, 6)) / 10)


@dataclass
class ClipOutput:
    clip_id: str
    duration: float
    turns: pd.DataFrame
    panels: list[dict]
    who: list[dict]
    when: list[dict]
    references: list[dict]
    stream: list[dict]


def _who_json(row: dict, consistency: str, topic: Topic, clip_id: str, asr: str) -> dict:
    return {
        "id": row["item_id"],
        "video_path": row["video_path"],
        "question": row["question"],
        "options": [f"{letter}. {row[f'option_{letter.lower()}']}" for letter in LETTERS],
        "correct_answer": row["correct_answer"],
        "asr_content": asr,
        "metadata": {
            "consistency": consistency,
            "domain": "demo",
            "subcategory": topic.key,
            "clip_id": clip_id,
        },
    }


def _make_clip(index: int, p: dict, folder: Path, workdir: Path) -> ClipOutput:
    clip_id = f"mp{index:02d}"
    n = [int(v) for v in p["speakers"]][index % len(p["speakers"])]
    topic = TOPICS[index % len(TOPICS)]
    rng = np.random.default_rng([int(p["seed"]), 1, index])
    people = _speakers(rng, n, offscreen=index % 2 == 1)
    audio = Voices(people, topic, int(p["sample_rate"]), workdir)
    turns = None
    for _ in range(MAX_TRIES):
        turns = _layout(rng, topic, people, audio, p)
        if turns is not None:
            break
    if turns is None:
        raise RuntimeError(f"social demo: no layout of clip {clip_id} met its targets in {MAX_TRIES} tries")
    sr = int(p["sample_rate"])
    lo = float(p["multiparty_duration_s"][0])
    duration = round(max(lo, turns[-1].end + TAIL_S), 1)
    fps = float(p["video"]["fps"])
    n_frames = int(round(duration * fps))
    n_samples = int(round(n_frames / fps * sr))
    tracks = [np.zeros(n_samples, dtype=np.float32) for _ in people]
    for turn in turns:
        number = topic.lines.index(turn.line)
        chunk = audio[(turn.speaker, number)] * people[turn.speaker].gain
        begin = int(round(turn.start * sr))
        chunk = chunk[: max(0, n_samples - begin)]
        tracks[turn.speaker][begin : begin + len(chunk)] += chunk
    noise = np.random.default_rng([int(p["seed"]), 2, index]).normal(0.0, NOISE_RMS, n_samples)
    mix = (np.sum(tracks, axis=0) + noise).astype(np.float32)
    video_rel = f"videos/{clip_id}.mp4"
    write_wav(folder / "audio" / f"{clip_id}.wav", mix, sr)
    frames = _multiparty_video(people, tracks, p, n_frames)
    encode_mp4(folder / video_rel, frames, n_frames, p["video"], workdir, audio=mix, sample_rate=sr)

    table = pd.DataFrame(
        {
            "clip_id": clip_id,
            "speaker": [people[t.speaker].name for t in turns],
            "start": [t.start for t in turns],
            "end": [t.end for t in turns],
            "text": [t.line.text for t in turns],
        }
    )
    width, height = int(p["video"]["width"]), int(p["video"]["height"])
    panels = []
    for person in people:
        box = _panel_box(person.slot, width, height) if person.on_screen else (-1, -1, -1, -1)
        panels.append(
            {
                "clip_id": clip_id,
                "speaker": person.name,
                "on_screen": person.on_screen,
                "x0": box[0],
                "y0": box[1],
                "x1": box[2],
                "y1": box[3],
            }
        )

    # who: every turn is a candidate; keep one about the off-screen speaker when there is one
    who = []
    wanted = int(p["who_items_per_clip"])
    if wanted:
        built = build_who_items(
            table[["speaker", "start", "end", "text"]],
            n_items=len(table),
            seed=int(rng.integers(2**31)),
            clip_window=(60.0, 0.0),
            corpus_id=f"{clip_id}_who",
            video_path=video_rel,
        )
        on_screen = {person.name: person.on_screen for person in people}
        hidden = [i for i, s in enumerate(built["speaker"]) if not on_screen[s]]
        chosen = set(hidden[:1])
        rest = [i for i in range(len(built)) if i not in chosen]
        extra = rng.choice(len(rest), size=min(wanted - len(chosen), len(rest)), replace=False)
        chosen |= {rest[int(k)] for k in extra}
        for i in sorted(chosen):
            row = built.iloc[i].to_dict()
            asr = " ".join(t.line.text for t in turns if t.end <= row["query_time"] + 0.05)
            consistency = "consistent" if on_screen[row["speaker"]] else "inconsistent"
            who.append(_who_json(row, consistency, topic, clip_id, asr))

    # when / how: YES at cut_lag after a turn end with a long gap, NO mid-turn
    cut_lag = float(p["cut_lag_s"])
    transitions = [k for k in range(len(turns) - 1) if turns[k + 1].start - turns[k].end > cut_lag + 0.4]
    picked = sorted(rng.choice(transitions, size=int(p["when_transitions_per_clip"]), replace=False).tolist())
    when, references = [], []
    for number, k in enumerate(picked):
        ending, following = turns[k], turns[k + 1]
        target = people[following.speaker].name
        cuts = {
            "end": _ceil_tenth(ending.end + cut_lag),
            "mid": round((ending.start + ending.end) / 2, 1),
        }
        for kind, cut in cuts.items():
            item_id = f"{clip_id}_when{number}_{kind}"
            when.append(
                {
                    "video_id": item_id,
                    "video_file": video_rel,
                    "question_1": {
                        "question": f"Based on the conversation so far, should {target} speak now?",
                        "timestamp": format_excel_time(cut),  # as the released builder writes it
                        "option_A": "YES",
                        "option_B": "NO",
                        "correct_answer": "A" if kind == "end" else "B",
                    },
                    "question_2": {"question": f"What should {target} say?", "answer": following.line.text},
                    "full_asr": _transcript_lines(turns, people, cut),
                    "metadata": {
                        "domain": "demo",
                        "subcategory": topic.key,
                        "clip_id": clip_id,
                        "cut_kind": "turn_end" if kind == "end" else "mid_turn",
                        "turn_start": ending.start,
                        "turn_end": ending.end,
                        "next_start": following.start,
                    },
                }
            )
            texts = [("true", following.line.text)] + [("paraphrase", q) for q in following.line.paraphrases]
            references += [
                {"item_id": item_id, "ref_index": r, "kind": ref_kind, "text": text}
                for r, (ref_kind, text) in enumerate(texts)
            ]
    stream = [
        {
            "item_id": f"{clip_id}_turn{k:02d}",
            "clip_id": clip_id,
            "video_path": video_rel,
            "target": people[turns[k + 1].speaker].name,
            "previous_speaker": people[turns[k].speaker].name,
            "stream_start": round(turns[k].start + STREAM_LEAD_S, 4),
            "turn_end": turns[k].end,
            "next_start": turns[k + 1].start,
            "stream_end": duration,
        }
        for k in range(len(turns) - 1)
    ]
    return ClipOutput(clip_id, duration, table, panels, who, when, references, stream)


def write_socialomni(social: Path, p: dict, work: Path) -> dict:
    """The multi-party clips and SocialOmni files under `social` (package doc); their counts."""
    clips = [_make_clip(index, p, social, work) for index in range(int(p["n_multiparty"]))]
    level1 = [item for clip in clips for item in clip.who]
    level2 = [item for clip in clips for item in clip.when]
    json_dump(social / "data" / "level_1" / "dataset.json", level1)
    json_dump(social / "data" / "level_2" / "annotations.json", level2)
    write_csv(social / "truth" / "turns.csv", pd.concat([c.turns for c in clips], ignore_index=True))
    write_csv(social / "truth" / "panels.csv", pd.DataFrame([row for c in clips for row in c.panels]))
    references = pd.DataFrame(
        [row for c in clips for row in c.references], columns=["item_id", "ref_index", "kind", "text"]
    )
    write_csv(social / "truth" / "how_references.csv", references)
    write_csv(social / "truth" / "when_stream.csv", pd.DataFrame([row for c in clips for row in c.stream]))
    return {
        "multiparty_clips": len(clips),
        "who_items": len(level1),
        "when_items": len(level2),
        "when_stream_items": sum(len(c.stream) for c in clips),
    }

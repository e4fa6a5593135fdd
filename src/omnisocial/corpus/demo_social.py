"""Generate the who / when / how and streaming demo: multi-party clips and visual-event clips.

`generate_social_demo(root, params)` writes, from the `social.demo` config block alone and
deterministically from its seed, a small data set in the released formats (see
docs/data-formats.md), so the workflow reads it through the same importers as real data:

    {root}/socialomni/data/level_1/dataset.json     who items (SocialOmni level 1)
    {root}/socialomni/data/level_2/annotations.json when / how items (SocialOmni level 2)
    {root}/socialomni/videos/{clip}.mp4, audio/{clip}.wav
    {root}/socialomni/truth/turns.csv               clip_id, speaker, start, end, text
    {root}/socialomni/truth/panels.csv              which screen panel shows which speaker
    {root}/socialomni/truth/how_references.csv      true next utterance + paraphrases per item
    {root}/socialomni/truth/when_stream.csv         every turn transition (streaming protocol)
    {root}/duplexeval/items.json                    Omni-DuplexEval items, keyed by split
    {root}/duplexeval/videos/{split}_{id}.mp4, question_audio/{split}_{id}.wav
    {root}/duplexeval/truth/events.csv              every visual change: time, kind, caption
    {root}/manifest.json                            params, counts and sha256 of every file

The `truth/` folders are not part of the releases: they hold the ground truth the demo's
baselines and tests check against (a real data set has none, and the workflow then skips
what needs them).

Multi-party clips (`n_multiparty`, 15-25 s by default):
- 3 or 4 named speakers (`speakers` is cycled over the clips), each an espeak-ng voice
  variant with its own pitch and speed, take turns through one of the scripted
  conversations below, one line per turn, nobody speaking twice in a row and nobody
  overlapping. The gap before a turn is short (0.15-0.45 s) with probability
  `short_gap_prob`, else long (`cut_lag_s` + 0.5 to 1.2 s); the when items sit on long gaps.
- video (`video` width x height at fps): a 2 x 2 grid of panels, one per on-screen speaker,
  with the speaker's colour, a face, a name tag and a mouth bar whose height follows that
  speaker's own speech envelope, so the picture shows who talks. In every second clip
  (odd index) one speaker (not the first) is off-screen: heard but never shown, which
  makes the who items about that speaker audio-visually inconsistent, as in SocialOmni.
- audio: the mono mix of all voices plus faint seeded noise; the mp4 carries it as AAC.
- who items: `social.who.build_who_items` over the clip's turns with a window reaching
  back to the clip start (so the question's times are clip times); per clip
  `who_items_per_clip` of them, at least one about the off-screen speaker when there is one.
- when items: at `when_transitions_per_clip` turn transitions with a long gap, a YES item
  whose cut is `cut_lag_s` after the true end of the turn (inside the silent gap, before
  the next speaker starts: the released cut marks where the next turn should begin) and a
  NO item cut in the middle of the same turn. Both ask "should <next speaker> speak now?";
  question_2 asks what they should say, answered by their true next line; full_asr holds
  the turns completed before the cut as "Name: text" lines. how_references.csv adds two
  hand-written paraphrases of that line.
- when_stream.csv: every transition of every clip: the first query time (0.5 s after the
  ending turn starts, once it is under way, so speech detected a little late at its onset
  cannot pass for a pause), the turn's true end, the next turn's start and the clip end.

Visual-event clips (one per split in `visual_splits`, times `visual_per_split`, 20-40 s):
numpy frames piped to ffmpeg, no audio, a static background and one change per event,
events at least `min_event_gap_s` apart, each at a frame boundary (t = frame / fps):
- RTD_counting: stars appear one at a time; RTD_OCR: a word is shown, then replaced;
  RTD_fine_grained_movement: a ball moves 1.5 s in one direction, then rests;
- PR_event_reminder: "remind me when the green square appears": it appears (reminder1),
  a blue disc appears, the square disappears, the square appears again (reminder2);
- PR_post_event_reminder: a lamp; a grey box slides in, the lamp goes off (reminder1), on,
  off again (reminder2).
Every change is listed in truth/events.csv (reminder = 1 or 2 for the reminded ones), so
the frame-difference detector can be scored against all of them.

Determinism: every random draw comes from numpy generators seeded by (`seed`, a stream
number, the clip index); JSON and CSV are written with fixed formatting, wav headers hold no
date, ffmpeg runs single-threaded with bit-exact flags. The data set is built in
`{root}.tmp` and renamed onto `root` when complete.
"""

from __future__ import annotations

import colorsys
import json
import logging
import shutil
import subprocess
import time
import wave
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.signal import resample_poly

from omnisocial.io import atomic_path, sha256_file, write_csv, write_json
from omnisocial.media.pipe import run_with_stdin, yuv420p
from omnisocial.social.contracts import LETTERS
from omnisocial.social.importers import format_clock
from omnisocial.social.who import build_who_items

log = logging.getLogger(__name__)

DEMO_SPLITS = (
    "RTD_counting",
    "RTD_OCR",
    "RTD_fine_grained_movement",
    "PR_event_reminder",
    "PR_post_event_reminder",
)
DEFAULTS = {
    "seed": 20261201,
    "n_multiparty": 4,
    "speakers": [3, 4],
    "multiparty_duration_s": [15.0, 25.0],
    "short_gap_prob": 0.3,
    "who_items_per_clip": 3,
    "when_transitions_per_clip": 2,
    "cut_lag_s": 0.8,
    "visual_splits": list(DEMO_SPLITS),
    "visual_per_split": 1,
    "visual_duration_s": [20.0, 40.0],
    "min_event_gap_s": 5.0,
    "sample_rate": 16000,
    "video": {"width": 160, "height": 120, "fps": 10},
}
TAIL_S = 0.8  # silence after the last turn
LEAD_S = (0.5, 1.2)  # silence before the first turn
SHORT_GAP_S = (0.15, 0.45)
LONG_GAP_EXTRA_S = (0.5, 1.2)  # long gap = cut_lag_s + this
NOISE_RMS = 0.001
TRIM_LEVEL = 0.006
MAX_TRIES = 40
MOVE_S = 1.5
STREAM_LEAD_S = 0.5  # streaming when: the first query comes this long after the ending turn starts
PHRASES = {"right": "to the right", "left": "to the left", "up": "up", "down": "down"}

# --------------------------------------------------------------------------- text


@dataclass(frozen=True)
class Line:
    text: str
    paraphrases: tuple[str, str]


@dataclass(frozen=True)
class Topic:
    key: str
    lines: tuple[Line, ...]


def _topic(key: str, rows: list[tuple[str, str, str]]) -> Topic:
    return Topic(key, tuple(Line(text, (p1, p2)) for text, p1, p2 in rows))


TOPICS = (
    _topic(
        "weekend_hike",
        [
            (
                "So, are we still going hiking on Saturday?",
                "Is the Saturday hike still happening?",
                "Are we still on for the hike this Saturday?",
            ),
            (
                "Yes, but we should leave really early.",
                "Sure, though we need to set off early.",
                "Definitely, as long as we start out early.",
            ),
            (
                "How early are we talking, like six?",
                "What time do you mean, six in the morning?",
                "Early meaning what, around six o'clock?",
            ),
            (
                "Six sounds fine, I can drive us.",
                "Six works for me, and I will do the driving.",
                "Six is okay, I am happy to drive.",
            ),
            (
                "Great, I will bring sandwiches for everyone.",
                "Perfect, I will pack lunch for all of us.",
                "Nice, I can make sandwiches for the group.",
            ),
            (
                "Do not forget the rain jackets this time.",
                "Remember to pack rain jackets this time.",
                "Please bring the rain gear this time.",
            ),
            (
                "Right, last time we got completely soaked.",
                "True, we got drenched on the last trip.",
                "Good point, we were soaked through last time.",
            ),
            (
                "Should we ask Sam if he wants to come?",
                "Maybe we should invite Sam along too?",
                "What about asking Sam to join us?",
            ),
            (
                "Sure, but the car only has five seats.",
                "Okay, but only five people fit in the car.",
                "Fine, though there are just five seats in the car.",
            ),
            (
                "Then five of us it is, I will text him.",
                "So we are five, I will message him now.",
                "Five people then, I will send him a text.",
            ),
        ],
    ),
    _topic(
        "team_lunch",
        [
            (
                "Who wants to order lunch for the team today?",
                "Is anyone up for ordering the team lunch today?",
                "Who is going to order lunch for everyone today?",
            ),
            (
                "I can do it, what is everyone in the mood for?",
                "I will handle it, what does everybody feel like eating?",
                "Leave it to me, what do you all want?",
            ),
            (
                "Pizza again would be easy for everybody.",
                "We could just get pizza, that suits everyone.",
                "Pizza is the simple choice for the whole group.",
            ),
            (
                "We had pizza twice last week, though.",
                "But we already ate pizza two times last week.",
                "Pizza was on the menu twice last week.",
            ),
            (
                "What about that new noodle place downstairs?",
                "How about the new noodle bar downstairs?",
                "Maybe the noodle shop that just opened downstairs?",
            ),
            (
                "Good idea, they have vegetarian options too.",
                "Nice, they also do vegetarian dishes.",
                "Sounds good, and they serve vegetarian food as well.",
            ),
            (
                "Can someone check if they deliver to our floor?",
                "Could somebody find out if they bring it up to our floor?",
                "Does anyone know whether they deliver up here?",
            ),
            (
                "They do, I ordered from them on Monday.",
                "Yes, I had them deliver here on Monday.",
                "They deliver, I got food from them on Monday.",
            ),
            (
                "Perfect, send me your orders before noon.",
                "Great, give me what you want before twelve.",
                "Okay, let me have your orders by noon.",
            ),
        ],
    ),
    _topic(
        "game_night",
        [
            (
                "Are you all free for game night on Friday?",
                "Can everyone make it to game night this Friday?",
                "Is Friday game night working for all of you?",
            ),
            (
                "I am in, can we play something new this time?",
                "Count me in, could we try a new game?",
                "Yes, but let us play a different game for once.",
            ),
            (
                "I just bought a game about building trains.",
                "I recently got a new train building game.",
                "I have a new board game where you build railways.",
            ),
            (
                "How long does one round usually take?",
                "How much time does a game of it take?",
                "Is it a long game to play?",
            ),
            (
                "About an hour once everyone knows the rules.",
                "Roughly an hour when we all know how to play.",
                "Around one hour after people learn the rules.",
            ),
            (
                "Then we should start at seven, not eight.",
                "In that case let us begin at seven instead of eight.",
                "So we had better start at seven rather than eight.",
            ),
            (
                "Seven works, I will bring some snacks.",
                "Seven is fine, and I will bring snacks.",
                "Okay for seven, I can bring something to eat.",
            ),
            (
                "Please, no more of those spicy chips.",
                "Just not the really spicy chips again, please.",
                "Maybe skip the hot chips this time.",
            ),
            (
                "Fine, I will get popcorn and fruit instead.",
                "Okay, I will bring popcorn and some fruit.",
                "Alright, popcorn and fruit then.",
            ),
        ],
    ),
    _topic(
        "moving_day",
        [
            (
                "Thanks for helping me move on Sunday, everyone.",
                "I really appreciate you all helping with my move on Sunday.",
                "Thank you all for giving me a hand with the move on Sunday.",
            ),
            (
                "No problem, how many boxes do you have?",
                "Happy to help, how many boxes are there?",
                "Sure thing, how many boxes are we talking about?",
            ),
            (
                "About thirty, plus the sofa and a desk.",
                "Around thirty boxes, and also a couch and a desk.",
                "Roughly thirty, together with the sofa and a desk.",
            ),
            (
                "The sofa will not fit in my small car.",
                "My little car is too small for the sofa.",
                "There is no way the couch goes in my car.",
            ),
            (
                "I can borrow my brother's van for the day.",
                "My brother might lend me his van that day.",
                "I could get my brother's van for Sunday.",
            ),
            (
                "Great, is there a lift in the new building?",
                "Good, does the new place have an elevator?",
                "Nice, is there an elevator where you are moving?",
            ),
            (
                "Sadly no, it is on the fourth floor.",
                "Unfortunately not, and it is four floors up.",
                "No lift, I am afraid, and it is the fourth floor.",
            ),
            (
                "Then we definitely need pizza afterwards.",
                "In that case we will need pizza when we are done.",
                "So pizza after the move is a must.",
            ),
            (
                "Deal, the pizza is on me.",
                "Agreed, I will pay for the pizza.",
                "Sure, I will buy the pizza.",
            ),
        ],
    ),
)

# (name, gender): espeak-ng variants en+f1..f5 / en+m1..m7
NAMES = (
    ("Alice", "f"),
    ("Ben", "m"),
    ("Chloe", "f"),
    ("David", "m"),
    ("Emma", "f"),
    ("Hugo", "m"),
    ("Iris", "f"),
    ("Omar", "m"),
)

# --------------------------------------------------------------------------- a 5 x 7 font

_GLYPHS = {
    "A": ".###. #...# #...# ##### #...# #...# #...#",
    "B": "####. #...# #...# ####. #...# #...# ####.",
    "C": ".###. #...# #.... #.... #.... #...# .###.",
    "D": "####. #...# #...# #...# #...# #...# ####.",
    "E": "##### #.... #.... ####. #.... #.... #####",
    "F": "##### #.... #.... ####. #.... #.... #....",
    "G": ".###. #...# #.... #.### #...# #...# .###.",
    "H": "#...# #...# #...# ##### #...# #...# #...#",
    "I": ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",
    "J": "..### ...#. ...#. ...#. ...#. #..#. .##..",
    "K": "#...# #..#. #.#.. ##... #.#.. #..#. #...#",
    "L": "#.... #.... #.... #.... #.... #.... #####",
    "M": "#...# ##.## #.#.# #.#.# #...# #...# #...#",
    "N": "#...# #...# ##..# #.#.# #..## #...# #...#",
    "O": ".###. #...# #...# #...# #...# #...# .###.",
    "P": "####. #...# #...# ####. #.... #.... #....",
    "Q": ".###. #...# #...# #...# #.#.# #..#. .##.#",
    "R": "####. #...# #...# ####. #.#.. #..#. #...#",
    "S": ".#### #.... #.... .###. ....# ....# ####.",
    "T": "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
    "U": "#...# #...# #...# #...# #...# #...# .###.",
    "V": "#...# #...# #...# #...# #...# .#.#. ..#..",
    "W": "#...# #...# #...# #.#.# #.#.# #.#.# .#.#.",
    "X": "#...# #...# .#.#. ..#.. .#.#. #...# #...#",
    "Y": "#...# #...# .#.#. ..#.. ..#.. ..#.. ..#..",
    "Z": "##### ....# ...#. ..#.. .#... #.... #####",
    "0": ".###. #...# #..## #.#.# ##..# #...# .###.",
    "1": "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.",
    "2": ".###. #...# ....# ...#. ..#.. .#... #####",
    "3": "####. ....# ....# .###. ....# ....# ####.",
    "4": "...#. ..##. .#.#. #..#. ##### ...#. ...#.",
    "5": "##### #.... ####. ....# ....# #...# .###.",
    "6": ".###. #.... #.... ####. #...# #...# .###.",
    "7": "##### ....# ...#. ..#.. .#... .#... .#...",
    "8": ".###. #...# #...# .###. #...# #...# .###.",
    "9": ".###. #...# #...# .#### ....# ....# .###.",
    " ": "..... ..... ..... ..... ..... ..... .....",
}
GLYPHS = {
    char: np.array([[c == "#" for c in row] for row in rows.split()], dtype=bool)
    for char, rows in _GLYPHS.items()
}


def text_mask(text: str, scale: int = 1) -> np.ndarray:
    """Boolean pixel mask of `text` in the 5 x 7 font (1 px between letters), scaled by `scale`."""
    chars = [GLYPHS[c] for c in text.upper() if c in GLYPHS]
    if not chars:
        return np.zeros((7 * scale, 0), dtype=bool)
    spacer = np.zeros((7, 1), dtype=bool)
    parts = []
    for k, glyph in enumerate(chars):
        if k:
            parts.append(spacer)
        parts.append(glyph)
    mask = np.concatenate(parts, axis=1)
    return np.kron(mask, np.ones((scale, scale), dtype=bool))


def _stamp(frame: np.ndarray, mask: np.ndarray, x: int, y: int, colour) -> None:
    """Paint `mask` onto `frame` with its top-left corner at (x, y), clipped to the frame."""
    h, w = mask.shape
    y0, x0 = max(0, y), max(0, x)
    y1, x1 = min(frame.shape[0], y + h), min(frame.shape[1], x + w)
    if y1 <= y0 or x1 <= x0:
        return
    region = mask[y0 - y : y1 - y, x0 - x : x1 - x]
    frame[y0:y1, x0:x1][region] = colour


def _disc(size: int) -> np.ndarray:
    yy, xx = np.mgrid[:size, :size]
    centre = (size - 1) / 2
    return (yy - centre) ** 2 + (xx - centre) ** 2 <= (size / 2) ** 2


def _diamond(size: int) -> np.ndarray:
    yy, xx = np.mgrid[:size, :size]
    centre = (size - 1) / 2
    return np.abs(yy - centre) + np.abs(xx - centre) <= size / 2


# --------------------------------------------------------------------------- parameters


def _merge(defaults: dict, given: dict) -> dict:
    out = dict(defaults)
    for key, value in (given or {}).items():
        if key not in defaults:
            raise ValueError(f"social demo: unknown parameter {key!r}; known: {', '.join(sorted(defaults))}")
        out[key] = {**defaults[key], **value} if isinstance(defaults[key], dict) else value
    return out


def validate_params(params: dict | None) -> dict:
    """The demo parameters with defaults filled in; ValueError naming a bad one."""
    p = _merge(DEFAULTS, dict(params or {}))
    if int(p["n_multiparty"]) < 1:
        raise ValueError("social demo: n_multiparty must be >= 1")
    speakers = [int(n) for n in p["speakers"]]
    if not speakers or any(n not in (3, 4) for n in speakers):
        raise ValueError(f"social demo: speakers must be a list of 3s and 4s, got {p['speakers']}")
    for key, lowest in (("multiparty_duration_s", 10.0), ("visual_duration_s", 15.0)):
        lo, hi = (float(v) for v in p[key])
        if not lowest <= lo < hi:
            raise ValueError(f"social demo: {key} must be [low, high] with {lowest:g} <= low < high")
    unknown = [s for s in p["visual_splits"] if s not in DEMO_SPLITS]
    if unknown:
        raise ValueError(f"social demo: unknown visual split(s) {unknown}; known: {', '.join(DEMO_SPLITS)}")
    video = p["video"]
    if int(video["width"]) % 4 or int(video["height"]) % 4 or int(video["width"]) < 96:
        raise ValueError("social demo: video width and height must be multiples of 4, width >= 96")
    if float(video["fps"]) <= 0:
        raise ValueError("social demo: video fps must be > 0")
    if not 0 <= float(p["short_gap_prob"]) < 1:
        raise ValueError("social demo: short_gap_prob must lie in [0, 1)")
    if float(p["cut_lag_s"]) <= SHORT_GAP_S[1]:
        raise ValueError(f"social demo: cut_lag_s must exceed {SHORT_GAP_S[1]} s (the longest short gap)")
    if float(p["min_event_gap_s"]) < MOVE_S + 1:
        raise ValueError(f"social demo: min_event_gap_s must be >= {MOVE_S + 1:g} s")
    for key in ("who_items_per_clip", "when_transitions_per_clip", "visual_per_split"):
        if int(p[key]) < 0:
            raise ValueError(f"social demo: {key} must be >= 0")
    return p


# --------------------------------------------------------------------------- audio / video io


def _read_wav(path: Path) -> tuple[np.ndarray, int]:
    with wave.open(str(path), "rb") as handle:
        rate = handle.getframerate()
        data = np.frombuffer(handle.readframes(handle.getnframes()), dtype="<i2")
        if handle.getnchannels() > 1:
            data = data.reshape(-1, handle.getnchannels())[:, 0]
    return data, rate


def speak(voice: str, pitch: int, speed: int, text: str, path: Path, sample_rate: int) -> np.ndarray:
    """One espeak-ng recording of `text`, trimmed of leading/trailing silence, float32 at `sample_rate`."""
    command = ["espeak-ng", "-v", voice, "-p", str(pitch), "-s", str(speed), "-w", str(path), text]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    samples, rate = _read_wav(path)
    x = samples.astype(np.float32) / 32768.0
    if rate != sample_rate:
        ratio = Fraction(sample_rate, rate)
        x = resample_poly(x, ratio.numerator, ratio.denominator).astype(np.float32)
    loud = np.flatnonzero(np.abs(x) > TRIM_LEVEL)
    if loud.size == 0:
        raise RuntimeError(f"espeak-ng produced silence for {text!r}")
    x = x[loud[0] : loud[-1] + 1].copy()
    fade = min(len(x) // 2, int(0.005 * sample_rate))
    ramp = np.linspace(0.0, 1.0, fade, dtype=np.float32)
    x[:fade] *= ramp
    x[len(x) - fade :] *= ramp[::-1]
    return x


def _pcm(signal: np.ndarray) -> bytes:
    return np.round(np.clip(signal, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


def write_wav(path: Path, signal: np.ndarray, sample_rate: int) -> None:
    """Mono 16-bit PCM, atomically; the header holds no date, so the bytes are reproducible."""
    with atomic_path(path) as tmp, wave.open(str(tmp), "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(sample_rate)
        handle.writeframes(_pcm(signal))


def encode_mp4(
    path: Path,
    frames: bytes,
    n_frames: int,
    video: dict,
    workdir: Path,
    audio: np.ndarray | None = None,
    sample_rate: int = 16000,
) -> None:
    """H.264 (yuv420p, near-lossless) plus optional AAC audio; single-threaded and bit-exact."""
    width, height, fps = int(video["width"]), int(video["height"]), float(video["fps"])
    seconds = n_frames / fps
    command = [
        "ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-threads", "1",
        "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", f"{width}x{height}",
        "-framerate", str(video["fps"]), "-i", "pipe:0",
    ]  # fmt: skip
    if audio is not None:
        wav = workdir / "mp4_audio.wav"
        write_wav(wav, audio, sample_rate)
        command += ["-i", str(wav), "-map", "0:v:0", "-map", "1:a:0", "-c:a", "aac", "-b:a", "48k"]
        command += ["-flags:a", "+bitexact"]
    else:
        command += ["-map", "0:v:0", "-an"]
    errors = workdir / "ffmpeg.log"
    with atomic_path(path) as tmp:
        command += [
            "-t", f"{seconds:.6f}", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "4",
            "-threads", "1", "-pix_fmt", "yuv420p", "-fflags", "+bitexact", "-flags:v", "+bitexact",
            "-map_metadata", "-1", "-f", "mp4", str(tmp),
        ]  # fmt: skip
        code = run_with_stdin(command, frames, errors)
        if code:
            raise RuntimeError(f"ffmpeg failed for {path.name}: {errors.read_text(errors='replace')[-500:]}")


def frame_envelope(speech: np.ndarray, sample_rate: int, fps: float, n_frames: int) -> np.ndarray:
    """Per video frame: RMS of `speech` over the 90th percentile of voiced frames, clipped to [0, 1]."""
    edges = np.minimum(np.round(np.arange(n_frames + 1) * sample_rate / fps).astype(int), len(speech))
    power = np.concatenate([[0.0], np.cumsum(np.square(speech, dtype=np.float64))])
    rms = np.sqrt((power[edges[1:]] - power[edges[:-1]]) / np.maximum(np.diff(edges), 1))
    voiced = rms[rms > 1e-3]
    reference = float(np.percentile(voiced, 90)) if voiced.size else 1.0
    return np.clip(rms / max(reference, 1e-6), 0.0, 1.0)


# --------------------------------------------------------------------------- multi-party clips


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
                        "timestamp": format_clock(cut),
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


# --------------------------------------------------------------------------- visual-event clips


@dataclass
class Thing:
    shape: str  # "disc", "square", "diamond", "text"
    colour: tuple[int, int, int]
    size: int
    x: float
    y: float
    text: str = ""
    visible: bool = True


@dataclass
class Change:
    frame: int
    kind: str
    text: str
    apply: object  # callable(things, frame) -> None; a movement also sets the path
    reminder: int = 0
    move: tuple | None = None  # (name, x0, y0, x1, y1, first_frame, last_frame)


def _event_frames(
    rng: np.random.Generator, n: int | None, duration: float, fps: float, gap: float
) -> list[int]:
    times = [float(rng.uniform(2.5, 4.0))]
    while True:
        following = times[-1] + float(rng.uniform(gap, gap + 2.0))
        if following > duration - 3.0 or (n is not None and len(times) >= n):
            break
        times.append(following)
    return [int(round(t * fps)) for t in times]


def _visual_plan(split: str, rng: np.random.Generator, p: dict) -> tuple[float, dict, list[Change], dict]:
    """(duration, named things at the start, changes, item texts) of one visual clip."""
    fps = float(p["video"]["fps"])
    width, height = int(p["video"]["width"]), int(p["video"]["height"])
    lo, hi = (float(v) for v in p["visual_duration_s"])
    gap = float(p["min_event_gap_s"])
    if split.startswith("PR_"):
        lo = max(lo, 4.0 + 3 * (gap + 2.0) + 3.1)  # four events fit whatever the draws
        hi = max(hi, lo + 1.0)
    duration = round(float(rng.uniform(lo, hi)), 1)
    things: dict[str, Thing] = {}
    changes: list[Change] = []

    def show(name: str, visible: bool):
        def apply(state, frame):
            state[name].visible = visible

        return apply

    if split == "RTD_counting":
        frames = _event_frames(rng, 5, duration, fps, gap)
        slots = [
            (x, y) for y in (int(height * 0.3), int(height * 0.65)) for x in np.linspace(20, width - 32, 4)
        ]
        order = rng.permutation(len(slots))
        for count, frame in enumerate(frames, start=1):
            x, y = slots[int(order[count - 1])]
            name = f"star{count}"
            things[name] = Thing("diamond", (250, 220, 60), 14, float(x), float(y), visible=False)
            noun = "star is" if count == 1 else "stars are"
            changes.append(Change(frame, "appear", f"Now {count} {noun} on the screen.", show(name, True)))
        n = len(frames)
        texts = {
            "question_text": "Tell me how many stars are on the screen every time the number changes.",
            "answer1": f"Stars appear one at a time until there are {n} stars on the screen.",
            "answer2": f"The number of stars goes up one by one from one to {n}.",
        }
    elif split == "RTD_OCR":
        frames = _event_frames(rng, 4, duration, fps, gap)
        words = [
            str(w)
            for w in rng.choice(
                ["OPEN", "SALE", "EXIT", "STOP", "CAFE", "PARK", "TAXI"], len(frames), replace=False
            )
        ]
        for k, (frame, word) in enumerate(zip(frames, words, strict=True)):
            name = f"word{k}"
            things[name] = Thing(
                "text", (255, 255, 255), 3, 0.0, float(height * 0.35), text=word, visible=False
            )

            def swap(state, _frame, k=k):
                for j in range(len(words)):
                    state[f"word{j}"].visible = j == k

            changes.append(Change(frame, "text", f'The word "{word}" is shown on the screen.', swap))
        listed = ", ".join(words[:-1]) + f" and {words[-1]}" if len(words) > 1 else words[0]
        texts = {
            "question_text": "Read out any text that appears on the screen.",
            "answer1": f"The screen shows the words {listed}, one after another.",
            "answer2": f"Words appear in turn on the screen: {', '.join(words)}.",
        }
    elif split == "RTD_fine_grained_movement":
        frames = _event_frames(rng, 5, duration, fps, gap)
        size = 18
        x, y = width / 2 - size / 2, height / 2 - size / 2
        things["ball"] = Thing("disc", (255, 90, 70), size, x, y)
        reach = (width * 0.3, height * 0.25)  # how far one movement goes, across and up or down
        moves = []
        for frame in frames:
            options = []
            for direction, dx, dy in (("right", 1, 0), ("left", -1, 0), ("up", 0, -1), ("down", 0, 1)):
                nx, ny = x + dx * reach[0], y + dy * reach[1]
                if 2 <= nx <= width - size - 2 and 2 <= ny <= height - size - 2:
                    options.append((direction, nx, ny))
            direction, nx, ny = options[int(rng.integers(len(options)))]
            last = frame + int(round(MOVE_S * fps))
            moves.append((direction, x, y, nx, ny))
            changes.append(
                Change(
                    frame,
                    "move",
                    f"The red ball moves {PHRASES[direction]}.",
                    None,
                    0,
                    ("ball", x, y, nx, ny, frame, last),
                )
            )
            x, y = nx, ny
        directions = ", then ".join(PHRASES[m[0]] for m in moves)
        texts = {
            "question_text": "Describe every movement of the red ball.",
            "answer1": f"The red ball moves {directions}, resting in between.",
            "answer2": f"The ball makes {len(moves)} short moves: {directions}.",
        }
    elif split == "PR_event_reminder":
        frames = _event_frames(rng, 4, duration, fps, gap)
        things["square"] = Thing(
            "square", (40, 200, 70), 18, float(width * 0.2), float(height * 0.3), visible=False
        )
        things["disc"] = Thing(
            "disc", (60, 90, 230), 18, float(width * 0.65), float(height * 0.55), visible=False
        )
        plan = [
            ("appear", "The green square appears.", show("square", True), 1),
            ("appear", "A blue disc appears.", show("disc", True), 0),
            ("disappear", "The green square disappears.", show("square", False), 0),
            ("appear", "The green square appears again.", show("square", True), 2),
        ]
        changes = [
            Change(f, kind, text, fn, rem) for f, (kind, text, fn, rem) in zip(frames, plan, strict=True)
        ]
        texts = {
            "question_text": "Remind me every time the green square appears.",
            "answer1": "The green square has appeared.",
            "answer2": "The green square has appeared.",
        }
    elif split == "PR_post_event_reminder":
        frames = _event_frames(rng, 4, duration, fps, gap)
        things["lamp"] = Thing("disc", (255, 230, 90), 22, float(width * 0.15), float(height * 0.15))
        things["box"] = Thing(
            "square", (150, 150, 150), 20, float(width * 0.6), float(height * 0.6), visible=False
        )

        def lamp(on: bool):
            def apply(state, _frame):
                state["lamp"].colour = (255, 230, 90) if on else (70, 60, 40)

            return apply

        plan = [
            ("appear", "A grey box appears.", show("box", True), 0),
            ("change", "The lamp switches off.", lamp(False), 1),
            ("change", "The lamp switches on.", lamp(True), 0),
            ("change", "The lamp switches off again.", lamp(False), 2),
        ]
        changes = [
            Change(f, kind, text, fn, rem) for f, (kind, text, fn, rem) in zip(frames, plan, strict=True)
        ]
        texts = {
            "question_text": "After the lamp switches off, remind me to close the window.",
            "answer1": "The lamp is off, so remember to close the window.",
            "answer2": "The lamp is off, so remember to close the window.",
        }
    else:  # pragma: no cover - validate_params rejects other splits
        raise ValueError(split)
    return duration, things, changes, texts


def _draw(frame: np.ndarray, thing: Thing) -> None:
    if not thing.visible:
        return
    x, y = int(round(thing.x)), int(round(thing.y))
    if thing.shape == "text":
        mask = text_mask(thing.text, thing.size)
        _stamp(frame, mask, (frame.shape[1] - mask.shape[1]) // 2, y, thing.colour)
        return
    mask = {"disc": _disc, "diamond": _diamond}.get(thing.shape, lambda s: np.ones((s, s), dtype=bool))(
        thing.size
    )
    _stamp(frame, mask, x, y, thing.colour)


def _visual_clip(split: str, number: int, index: int, p: dict, folder: Path, workdir: Path):
    rng = np.random.default_rng([int(p["seed"]), 3, index])
    duration, things, changes, texts = _visual_plan(split, rng, p)
    fps = float(p["video"]["fps"])
    width, height = int(p["video"]["width"]), int(p["video"]["height"])
    n_frames = int(round(duration * fps))
    background = np.empty((height, width, 3), dtype=np.uint8)
    shade = np.linspace(40, 70, height, dtype=np.float64)[:, None]
    background[..., 0] = np.round(shade * 0.5).astype(np.uint8)
    background[..., 1] = np.round(shade * 0.7).astype(np.uint8)
    background[..., 2] = np.round(shade * 1.4).astype(np.uint8)
    by_frame: dict[int, list[Change]] = {}
    for change in changes:
        by_frame.setdefault(change.frame, []).append(change)
    moving: list[tuple] = []
    out = []
    for i in range(n_frames):
        for change in by_frame.get(i, []):
            if change.move is not None:
                moving.append(change.move)
            else:
                change.apply(things, i)
        for name, x0, y0, x1, y1, first, last in moving:
            share = min(1.0, (i - first + 1) / (last - first))
            things[name].x, things[name].y = x0 + (x1 - x0) * share, y0 + (y1 - y0) * share
        moving = [m for m in moving if i < m[6]]
        frame = background.copy()
        for thing in things.values():
            _draw(frame, thing)
        out.append(yuv420p(frame))
    item_id = f"{split.split('_', 1)[1].lower()}_{number:02d}"
    video_rel = f"videos/{item_id}.mp4"
    audio_rel = f"question_audio/{item_id}.wav"
    encode_mp4(folder / video_rel, b"".join(out), n_frames, p["video"], workdir)
    question = speak(
        "en+f3", 55, 165, texts["question_text"], workdir / "question.wav", int(p["sample_rate"])
    )
    write_wav(folder / audio_rel, question, int(p["sample_rate"]))
    reminders = {c.reminder: round(c.frame / fps, 6) for c in changes if c.reminder}
    item = {
        "id": item_id,
        **texts,
        "reminder1": reminders.get(1),
        "reminder2": reminders.get(2),
        "video_type": "synthetic",
        "video_duration": duration,
        "video": video_rel,
        "question_audio": audio_rel,
    }
    events = [
        {
            "split": split,
            "item_id": item_id,
            "event_index": k,
            "t": round(change.frame / fps, 6),
            "kind": change.kind,
            "text": change.text,
            "reminder": change.reminder,
        }
        for k, change in enumerate(sorted(changes, key=lambda c: c.frame))
    ]
    return item, events


# --------------------------------------------------------------------------- the whole demo


def _json_dump(path: Path, data) -> None:
    write_json(path, data)


def generate_social_demo(root: str | Path, params: dict | None = None) -> dict:
    """Write the who / when / how and streaming demo to `root` (module doc); return its manifest."""
    p = validate_params(params)
    root = Path(root)
    began = time.perf_counter()
    build = root.with_name(root.name + ".tmp")
    if build.exists():
        shutil.rmtree(build)
    social, duplex = build / "socialomni", build / "duplexeval"
    work = build / "_work"
    work.mkdir(parents=True)
    try:
        clips = [_make_clip(index, p, social, work) for index in range(int(p["n_multiparty"]))]
        level1 = [item for clip in clips for item in clip.who]
        level2 = [item for clip in clips for item in clip.when]
        _json_dump(social / "data" / "level_1" / "dataset.json", level1)
        _json_dump(social / "data" / "level_2" / "annotations.json", level2)
        write_csv(social / "truth" / "turns.csv", pd.concat([c.turns for c in clips], ignore_index=True))
        write_csv(social / "truth" / "panels.csv", pd.DataFrame([row for c in clips for row in c.panels]))
        references = pd.DataFrame(
            [row for c in clips for row in c.references], columns=["item_id", "ref_index", "kind", "text"]
        )
        write_csv(social / "truth" / "how_references.csv", references)
        write_csv(
            social / "truth" / "when_stream.csv", pd.DataFrame([row for c in clips for row in c.stream])
        )

        items: dict[str, list] = {}
        events: list[dict] = []
        index = 0
        for split in p["visual_splits"]:
            for number in range(int(p["visual_per_split"])):
                item, rows = _visual_clip(split, number, index, p, duplex, work)
                items.setdefault(split, []).append(item)
                events += rows
                index += 1
        _json_dump(duplex / "items.json", items)
        columns = ["split", "item_id", "event_index", "t", "kind", "text", "reminder"]
        write_csv(duplex / "truth" / "events.csv", pd.DataFrame(events, columns=columns))
        shutil.rmtree(work)
        files = sorted(path for path in build.rglob("*") if path.is_file())
        manifest = {
            "params": p,
            "counts": {
                "multiparty_clips": len(clips),
                "who_items": len(level1),
                "when_items": len(level2),
                "when_stream_items": sum(len(c.stream) for c in clips),
                "stream_items": sum(len(v) for v in items.values()),
                "visual_events": len(events),
            },
            "files": {str(path.relative_to(build)): sha256_file(path) for path in files},
        }
        _json_dump(build / "manifest.json", manifest)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    old = root.with_name(root.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    if root.exists():
        root.rename(old)
    build.rename(root)
    if old.exists():
        shutil.rmtree(old)
    log.info(
        "social demo: %s in %s, %.1f s", json.dumps(manifest["counts"]), root, time.perf_counter() - began
    )
    return manifest


__all__ = ["DEFAULTS", "DEMO_SPLITS", "TOPICS", "generate_social_demo", "text_mask", "validate_params"]

"""What the demo generators share: the `social.demo` parameters, drawing, speech and media io.

The who / when / how demo (`omnisocial.socialomni.demo`) and the streaming demo
(`omnisocial.duplexeval.demo`) are generated together by the `social_demo` rule, from the
one `social.demo` config block, into one folder with one manifest:

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

This module holds the pieces both use, so neither benchmark package imports the other:
`DEFAULTS` / `validate_params` (the whole `social.demo` block), the 5 x 7 pixel font
(`text_mask`) and shapes, espeak-ng speech (`speak`), wav and mp4 writing (`write_wav`,
`encode_mp4`) and `build_demo`, which runs the benchmarks' writers (passed in by the
caller, e.g. `workflow/scripts/social/demo.py`) into `{root}.tmp`, writes the manifest and
renames the folder onto `root` when complete.

The familiarity demo corpus (`omnisocial.familiarity.corpus.demo`) uses the same lower
layer: `espeak` (one espeak-ng recording, resampled), `trim_and_fade`, `read_wav`, `pcm16`,
`write_pcm_wav`, and `fresh_build` / `publish` (build in `{root}.tmp`, rename onto `root`);
both encode their mp4 with `omnisocial.media.pipe.encode_raw_mp4`.

Determinism: every random draw comes from numpy generators seeded by (`seed`, a stream
number, the clip index); JSON and CSV are written with fixed formatting, wav headers hold no
date, ffmpeg runs single-threaded with bit-exact flags. The data set is built in
`{root}.tmp` and renamed onto `root` when complete.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import time
import wave
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np

from omnisocial.io import atomic_path, sha256_file, write_json
from omnisocial.media.pipe import encode_raw_mp4
from omnisocial.processes import as_child

# scipy.signal is imported where used: it loads scipy.stats too (~1.6 s CPU per job start)

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


SHORT_GAP_S = (0.15, 0.45)


TRIM_LEVEL = 0.006  # about -44 dBFS: where a recording's speech starts and ends


MOVE_S = 1.5


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


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    """The 16-bit samples of a wav file (its first channel) and its sample rate."""
    with wave.open(str(path), "rb") as handle:
        rate = handle.getframerate()
        data = np.frombuffer(handle.readframes(handle.getnframes()), dtype="<i2")
        if handle.getnchannels() > 1:
            data = data.reshape(-1, handle.getnchannels())[:, 0]
    return data, rate


def espeak(
    voice: str, pitch: int, speed: int, text: str, path: Path, sample_rate: int, ssml: bool = False
) -> np.ndarray:
    """Run espeak-ng once (`ssml`: `text` is SSML) into `path`; its recording as float32 at `sample_rate`."""
    command = ["espeak-ng", "-v", voice, "-p", str(pitch), "-s", str(speed), "-w", str(path)]
    if ssml:
        command.insert(1, "-m")
    command, options = as_child([*command, text])
    subprocess.run(command, check=True, capture_output=True, timeout=120, **options)
    samples, rate = read_wav(path)
    x = samples.astype(np.float32) / 32768.0
    if rate != sample_rate:  # espeak-ng records at 22050 Hz
        from scipy.signal import resample_poly

        ratio = Fraction(sample_rate, rate)
        x = resample_poly(x, ratio.numerator, ratio.denominator).astype(np.float32)
    return x


def trim_and_fade(x: np.ndarray, sample_rate: int, text: str | None = None) -> np.ndarray:
    """Trim near-silence at both ends and fade the edges (5 ms) so no piece starts with a click."""
    loud = np.flatnonzero(np.abs(x) > TRIM_LEVEL)
    if loud.size == 0:
        raise RuntimeError("espeak-ng produced silence" + (f" for {text!r}" if text is not None else ""))
    x = x[loud[0] : loud[-1] + 1].copy()
    fade = min(len(x) // 2, int(0.005 * sample_rate))
    if fade:
        ramp = np.linspace(0.0, 1.0, fade, dtype=np.float32)
        x[:fade] *= ramp
        x[-fade:] *= ramp[::-1]
    return x


def speak(voice: str, pitch: int, speed: int, text: str, path: Path, sample_rate: int) -> np.ndarray:
    """One espeak-ng recording of `text`, trimmed of leading/trailing silence, float32 at `sample_rate`."""
    return trim_and_fade(espeak(voice, pitch, speed, text, path, sample_rate), sample_rate, text)


def pcm16(signal: np.ndarray) -> bytes:
    """float samples in [-1, 1] as 16-bit little-endian PCM bytes (clipped, rounded)."""
    return np.round(np.clip(signal, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


def write_pcm_wav(path: Path, pcm: bytes, sample_rate: int) -> None:
    """Mono 16-bit PCM bytes as a wav, atomically; the header holds no date, so the bytes are reproducible."""
    with atomic_path(path) as tmp, wave.open(str(tmp), "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(sample_rate)
        handle.writeframes(pcm)


def write_wav(path: Path, signal: np.ndarray, sample_rate: int) -> None:
    """Mono 16-bit PCM of float `signal`, atomically (`write_pcm_wav`)."""
    write_pcm_wav(path, pcm16(signal), sample_rate)


def encode_mp4(
    path: Path,
    frames: bytes,
    n_frames: int,
    video: dict,
    workdir: Path,
    audio: np.ndarray | None = None,
    sample_rate: int = 16000,
) -> None:
    """H.264 (yuv420p, near-lossless: `-qp 4`) plus optional AAC audio (48k); single-threaded, bit-exact."""
    seconds = n_frames / float(video["fps"])
    wav = None
    if audio is not None:
        wav = workdir / "mp4_audio.wav"
        write_wav(wav, audio, sample_rate)
    errors = workdir / "ffmpeg.log"
    encode_raw_mp4(
        path, frames, video, seconds, errors, wav, video_options={"qp": 4}, audio_options={"b:a": "48k"}
    )


def json_dump(path: Path, data) -> None:
    write_json(path, data)


def fresh_build(root: Path) -> Path:
    """An empty `{root}.tmp` to build a data set in (a stale one from a failed run is removed)."""
    build = root.with_name(root.name + ".tmp")
    if build.exists():
        shutil.rmtree(build)
    build.mkdir(parents=True)
    return build


def publish(build: Path, root: Path) -> None:
    """Rename the complete `build` onto `root`, replacing an existing `root` only now."""
    old = root.with_name(root.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    if root.exists():
        root.rename(old)
    build.rename(root)
    if old.exists():
        shutil.rmtree(old)


def build_demo(
    root: str | Path,
    params: dict | None,
    parts: Sequence[tuple[str, Callable[[Path, dict, Path], dict]]],
) -> dict:
    """Write the demo to `root` (module doc) from its parts; return its manifest.

    `parts`: (folder name, writer) in order; a writer(folder, params, workdir) writes its
    benchmark's files under `folder` and returns its counts for the manifest.
    """
    p = validate_params(params)
    root = Path(root)
    began = time.perf_counter()
    build = fresh_build(root)
    work = build / "_work"
    work.mkdir()
    try:
        counts: dict = {}
        for name, writer in parts:
            counts.update(writer(build / name, p, work))
        shutil.rmtree(work)
        files = sorted(path for path in build.rglob("*") if path.is_file())
        manifest = {
            "params": p,
            "counts": counts,
            "files": {str(path.relative_to(build)): sha256_file(path) for path in files},
        }
        json_dump(build / "manifest.json", manifest)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    publish(build, root)
    log.info(
        "social demo: %s in %s, %.1f s", json.dumps(manifest["counts"]), root, time.perf_counter() - began
    )
    return manifest

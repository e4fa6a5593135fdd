"""Speed of silero VAD and of the per-interaction signal measurements, on one CPU thread.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_vad_filters.py [--minutes 3] [--repeats 3]

Synthesizes a two-person conversation with espeak-ng (alternating sentences, each
microphone hearing the other person 24 dB down, plus noise), writes both tracks as 16 kHz
WAV and both cameras as 160x120, 10 fps H.264 (a patch whose brightness follows the
owner's voice, like the demo corpus), then times, best of `--repeats`:

- silero VAD on one track: one run with the sequence export and with the streaming export,
  and the study's default, the one run and the runs from a fresh state over 8 s stretches
  every 4 s (`vad.restart_s`), with its cost against the one run measured in the same run;
- the signal measurements: WAV decoding, envelopes, track similarity, video motion,
  audio-video lag, and the whole `measure_interaction` with corpus VAD and with silero
  (and with silero, the bleed path of one frame only: `signals.bleed_path_s: null`, and
  one silero run: `vad.restart_s: null`, the baselines of their costs, measured in the same run);
- bleed cancellation alone (`omnisocial.media.crosstalk.cancel_bleed`), one frame and 0.25 s.

Each line prints seconds and x-real-time (audio seconds per wall second; for a whole
interaction, its duration per wall second). Exits 1 when the study's VAD (with restarts) is
under 50x real time.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import soundfile as sf  # noqa: E402

from omnisocial.familiarity.signals import measure_interaction  # noqa: E402
from omnisocial.media.audio import envelope, load_audio  # noqa: E402
from omnisocial.media.crosstalk import cancel_bleed  # noqa: E402
from omnisocial.media.sync import av_lag, track_similarity, video_motion  # noqa: E402
from omnisocial.media.vad import speech_segments  # noqa: E402
from omnisocial.settings import Signals, Vad  # noqa: E402

SR = 16000
FPS = 10
TARGET_X = 50.0
SENTENCES = [
    "Would you rather spend a week in the mountains or a week at the beach?",
    "The mountains, I think, because I get bored lying in the sun all day.",
    "Really? I would take the beach every time, with a good book and cold drinks.",
    "Fair enough, but what about the food? Mountain huts serve the best soup.",
    "I suppose that is true. Would you rather cook dinner or wash the dishes?",
    "Cook, definitely. Washing up is the worst part of any evening.",
    "We agree on that one at least. What about travelling by train or by plane?",
    "Train, if there is time. You see so much more of the country on the way.",
]


def espeak(text: str, voice: str, folder: Path, index: int) -> np.ndarray:
    path = folder / f"{voice.replace('+', '_')}_{index}.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-w", str(path), text], check=True, capture_output=True)
    return load_audio(path, SR)


def conversation(minutes: float, folder: Path, seed: int = 0) -> dict[str, np.ndarray]:
    """Both speakers' clean voices on one timeline, taking turns with short gaps."""
    rng = np.random.default_rng(seed)
    voices = {"a": "en", "b": "en+f3"}
    bank = {s: [espeak(t, v, folder, i) for i, t in enumerate(SENTENCES)] for s, v in voices.items()}
    n = int(minutes * 60 * SR)
    own = {s: np.zeros(n, np.float32) for s in voices}
    at, turn, k = int(0.5 * SR), 0, 0
    while True:
        speaker = "ab"[turn % 2]
        piece = bank[speaker][k % len(SENTENCES)]
        if at + piece.size > n:
            break
        own[speaker][at : at + piece.size] += piece
        at += piece.size + int(rng.uniform(0.1, 0.9) * SR)
        turn, k = turn + 1, k + 1
    return own


def write_media(own: dict[str, np.ndarray], folder: Path) -> dict[str, str]:
    rng = np.random.default_rng(1)
    leak = 10 ** (-24 / 20)
    files = {}
    for speaker, other in (("a", "b"), ("b", "a")):
        mic = own[speaker] + leak * own[other] + 0.0015 * rng.standard_normal(own[speaker].size)
        files[f"audio_{speaker}"] = str(folder / f"{speaker}.wav")
        sf.write(files[f"audio_{speaker}"], mic.astype(np.float32), SR, subtype="PCM_16")
        per_frame = SR // FPS
        clean = own[speaker][: own[speaker].size // per_frame * per_frame]
        rms = np.sqrt(np.mean(clean.reshape(-1, per_frame) ** 2, axis=1))
        level = np.clip(rms / max(np.percentile(rms[rms > 1e-4], 90), 1e-6), 0, 1)
        frames = np.full((level.size, 120, 160), 70, dtype=np.uint8)
        frames[:, 70:100, 60:100] = (70 + 170 * level).astype(np.uint8)[:, None, None]
        files[f"video_{speaker}"] = str(folder / f"{speaker}.mp4")
        command = [
            "ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "gray", "-s", "160x120",
            "-framerate", str(FPS), "-i", "pipe:0", "-c:v", "libx264", "-preset", "ultrafast",
            "-threads", "1", "-pix_fmt", "yuv420p", files[f"video_{speaker}"],
        ]  # fmt: skip
        subprocess.run(command, input=frames.tobytes(), check=True, capture_output=True)
    return files


def best_of(repeats: int, function) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        began = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - began)
    return min(times), result


def report(label: str, seconds: float, audio_s: float) -> float:
    x = audio_s / seconds
    print(f"{label:<44} {seconds * 1000:9.1f} ms  {x:9.1f} x real time")
    return x


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=3.0, help="conversation length (default 3)")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs (default 3)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-vad-") as scratch:
        folder = Path(scratch)
        began = time.perf_counter()
        own = conversation(args.minutes, folder)
        files = write_media(own, folder)
        duration = own["a"].size / SR
        took = time.perf_counter() - began
        print(f"synthesized {duration:.0f} s of two-person espeak-ng speech in {took:.1f} s")
        print(f"threads: OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, onnxruntime intra/inter-op 1/1")

        audio = {s: load_audio(files[f"audio_{s}"], SR) for s in "ab"}
        began = time.perf_counter()
        import onnxruntime  # noqa: F401

        print(f"import onnxruntime: {(time.perf_counter() - began) * 1000:.0f} ms")
        for backend in ("sequence", "stream"):  # the first call of each builds its onnxruntime session
            began = time.perf_counter()
            speech_segments(audio["a"][:SR], SR, Vad.of(restart_s=None), backend=backend)
            print(f"silero {backend} session + 1 s warm-up: {(time.perf_counter() - began) * 1000:.0f} ms")

        results = {}
        vad = Vad.of()  # the schema's vad block
        one_silero = vad.replace(restart_s=None)
        one_run, segments = best_of(args.repeats, lambda: speech_segments(audio["a"], SR, one_silero))
        report("VAD silero, one run (sequence export)", one_run, duration)
        seconds, _ = best_of(
            args.repeats, lambda: speech_segments(audio["a"], SR, one_silero, backend="stream")
        )
        report("VAD silero, one run (streaming export)", seconds, duration)
        seconds, _ = best_of(args.repeats, lambda: speech_segments(audio["a"], SR, vad))
        results["vad"] = report(f"VAD silero, restarts over {vad.restart_s:g} s (default)", seconds, duration)
        print(f"  the restarts cost {seconds / one_run:.2f}x the one run")
        print(f"  {len(segments)} speech segments on track a, {sum(e - s for s, e in segments):.1f} s")

        seconds, _ = best_of(args.repeats, lambda: load_audio(files["audio_a"], SR))
        report("load_audio (16 kHz WAV)", seconds, duration)
        seconds, _ = best_of(args.repeats, lambda: envelope(audio["a"], SR, 0.02, log=True))
        report("envelope (20 ms hop, log)", seconds, duration)
        env = {s: envelope(audio[s], SR, 0.02, log=True) for s in "ab"}
        seconds, (similarity, lag) = best_of(
            args.repeats, lambda: track_similarity(env["a"], env["b"], 0.02, 3.0)
        )
        report("track_similarity (±3 s)", seconds, duration)
        print(f"  similarity {similarity:.3f} at lag {lag:+.2f} s")
        seconds, motion = best_of(args.repeats, lambda: video_motion(files["video_a"], fps=FPS))
        report("video_motion (160x120 H.264 -> 32x24 grey)", seconds, duration)
        linear = envelope(audio["a"], SR, 0.02)
        seconds, lag = best_of(args.repeats, lambda: av_lag(linear, 0.02, motion, FPS, 2.0))
        report("av_lag (±2 s)", seconds, duration)
        print(f"  audio-video lag of a {lag:+.2f} s")

        row = {"interaction_id": "V00_S0001_I00000001", "ingest_ok": True, **files}
        corpus = pd.DataFrame(
            [
                {
                    "interaction_id": row["interaction_id"],
                    "speaker": "a",
                    "start": s,
                    "end": e,
                    "source": "corpus_vad",
                }
                for s, e in segments
            ]
        )
        params = (vad, Signals.of(), True)  # the schema's vad and signals blocks, audio-video lags measured
        seconds, (signals, _) = best_of(args.repeats, lambda: measure_interaction(row, corpus, None, *params))
        assert signals["measure_ok"], signals["measure_reason"]
        report("measure_interaction, corpus VAD (2 tracks)", seconds, duration)
        seconds, (signals, _) = best_of(args.repeats, lambda: measure_interaction(row, None, None, *params))
        report("measure_interaction, silero (2 tracks)", seconds, duration)
        one_frame = (vad, params[1].replace(bleed_path_s=None), True)
        baseline, _ = best_of(args.repeats, lambda: measure_interaction(row, None, None, *one_frame))
        report("  the same, bleed path of one frame only", baseline, duration)
        print(f"  the bleed path over 0.25 s costs {seconds / baseline:.2f}x the one-frame run")
        one_silero_run = (one_silero, params[1], True)
        baseline, _ = best_of(args.repeats, lambda: measure_interaction(row, None, None, *one_silero_run))
        report("  the same, one silero run", baseline, duration)
        print(f"  silero's restarts over {vad.restart_s:g} s cost {seconds / baseline:.2f}x the one-run one")
        for path_s in (None, 0.25):
            took, (_, shares) = best_of(
                args.repeats, lambda p=path_s: cancel_bleed(audio, SR, Signals.of(bleed_path_s=p))
            )
            report(f"cancel_bleed, path {'one frame' if path_s is None else f'{path_s:g} s'}", took, duration)
        print(
            f"  share of the frames where the other leads explained: a {shares['a']:.2f}, b {shares['b']:.2f}"
        )
        print(
            f"  speech a {signals['speech_s_a']:.1f} s, b {signals['speech_s_b']:.1f} s, "
            f"similarity {signals['track_similarity']:.3f}, lag {signals['track_lag_s']:+.2f} s, "
            f"av lags {signals['av_lag_a_s']:+.2f} / {signals['av_lag_b_s']:+.2f} s"
        )

    if results["vad"] < TARGET_X:
        print(f"FAIL: VAD at {results['vad']:.1f}x real time, target {TARGET_X:g}x", file=sys.stderr)
        return 1
    print(f"OK: VAD at {results['vad']:.0f}x real time (target {TARGET_X:g}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

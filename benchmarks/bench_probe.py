"""CPU of the signal measurements with each MP4 probed by ffprobe against in process (PyAV).

    .venv/bin/python benchmarks/bench_probe.py RUN [--rounds 2] [--workers 2] [--segments DIR]

RUN is a finished demo run folder (`benchmarks/bench_pipeline.py --keep` prints it): its corpus
tables (`results/familiarity/corpus/`) and media. Each round runs `measure_all` twice in fresh
processes, first with every MP4 sent to ffprobe (the former route) and then with the in-process
probe, and prints their CPU seconds (user + sys of the process and its workers); the two
routes must write the same signals and speech tables (exit 1 otherwise). Then every MP4 under
RUN is probed both ways: the in-process answer must equal ffprobe's wherever it is given.
With --segments, every MP4 under DIR (streamed segments, e.g. a test run's `segments*`
folders) has its frames counted both ways (`streaming.media.count_frames`): CPU per segment
and equal answers.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MEASURE = """
import resource, sys
from omnisocial.config import load_config
from omnisocial.familiarity.contracts import INTERACTIONS, SEGMENTS, SPEECH
from omnisocial.familiarity.signals import measure_all
from omnisocial.media import audio
from omnisocial.settings import Signals, Vad

run, route, out, workers = sys.argv[1:5]
if route == "ffprobe":
    audio.MP4_SUFFIXES = ()  # every MP4 to ffprobe, as before the in-process probe
config = load_config(f"{run}/config.yaml")
corpus = f"{run}/results/familiarity/corpus/"
signals, speech = measure_all(
    INTERACTIONS.read(corpus + "interactions.csv"),
    SPEECH.read(corpus + "corpus_vad.csv"),
    SEGMENTS.read(corpus + "transcript_segments.csv"),
    Vad.of(config["vad"]),
    Signals.of(config["signals"]),
    bool(config["filters"]["measure_av_sync"]),
    workers=int(workers),
)
signals.to_csv(f"{out}/signals.csv", index=False)
speech.to_csv(f"{out}/speech.csv", index=False)
own = resource.getrusage(resource.RUSAGE_SELF)
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print(own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime)
"""


def measure(run: Path, route: str, out: Path, workers: int) -> float:
    out.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-c", MEASURE, str(run), route, str(out), str(workers)]
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=run)
    return float(done.stdout.strip().splitlines()[-1])


def probe_parity(run: Path) -> tuple[int, int, list[str]]:
    """(files answered in process, files sent to ffprobe, files whose answers differ)."""
    from omnisocial.media.audio import MediaError, mp4_probe, probe_with_ffprobe

    answered, passed_on, differ = 0, 0, []
    for path in sorted(p for suffix in ("mp4", "m4a", "mov") for p in run.rglob(f"*.{suffix}")):
        in_process = mp4_probe(path)
        if in_process is None:
            passed_on += 1
            continue
        answered += 1
        try:
            if in_process != probe_with_ffprobe(path):
                differ.append(str(path))
        except MediaError as error:
            differ.append(f"{path} ({error})")
    return answered, passed_on, differ


def _cpu_s() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def segment_counts(folder: Path) -> bool:
    """Print the CPU per segment of counting frames by ffprobe and in process; whether they agree."""
    from omnisocial.streaming.media import frames_by_ffprobe, frames_in_process

    paths = sorted(folder.rglob("*.mp4"))
    answers, cpu = {}, {}
    for name, count in (("ffprobe", frames_by_ffprobe), ("in_process", frames_in_process)):
        began = _cpu_s()
        answers[name] = [count(path) for path in paths]
        cpu[name] = (_cpu_s() - began) / max(1, len(paths)) * 1000
    passed_on = sum(answer is None for answer in answers["in_process"])
    equal = all(b is None or a == b for a, b in zip(answers["ffprobe"], answers["in_process"], strict=True))
    print(
        f"segment frame counts: {len(paths)} segments, {cpu['ffprobe']:.1f} ms CPU each by ffprobe, "
        f"{cpu['in_process']:.1f} in process ({passed_on} passed on to ffprobe); equal: {equal}"
    )
    return equal


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--segments", type=Path, help="a folder of streamed segments to count")
    args = parser.parse_args()
    run = args.run.resolve()
    same = True
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            outs = {route: Path(scratch, f"{route}{round_}") for route in ("ffprobe", "in_process")}
            cpu = {route: measure(run, route, out, args.workers) for route, out in outs.items()}
            tables = ("signals.csv", "speech.csv")
            equal = all(
                (outs["ffprobe"] / t).read_bytes() == (outs["in_process"] / t).read_bytes() for t in tables
            )
            same &= equal
            print(
                f"round {round_ + 1}: measure_signals' work {cpu['ffprobe']:.1f} CPU-s with ffprobe, "
                f"{cpu['in_process']:.1f} in process ({cpu['in_process'] / cpu['ffprobe']:.2f}); "
                f"tables {'identical' if equal else 'DIFFER'}"
            )
    answered, passed_on, differ = probe_parity(run)
    print(
        f"MP4 probes: {answered} answered in process (equal to ffprobe's: {not differ}), "
        f"{passed_on} to ffprobe"
    )
    for path in differ:
        print(f"  differs: {path}")
    ok = same and not differ
    if args.segments is not None:
        ok &= segment_counts(args.segments.resolve())
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

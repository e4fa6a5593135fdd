"""Streaming throughput against a loopback model with a fixed latency: calls/s as a share of the limit.

    .venv/bin/python benchmarks/bench_streaming_throughput.py [--latency-ms 200] [--concurrency 1 4 16]
        [--entries audio audio_video frames] [--clip-s 8] [--items-per-slot 2] [--compare-driver FILE]
        [--nagle]

A loopback OpenAI-compatible server (a threading HTTP server on 127.0.0.1, port 0) answers
every chat completion after exactly `--latency-ms` (the reply "NO" or "SILENT"), so a client
with c calls in flight can make at most c / latency calls per second (Little's law). Synthetic
clips (testsrc2 320x180 at 25 fps + a sine, H.264 + AAC, `--clip-s` s) are cut once into their
step segments (as the workflow's segments rule does, not timed), then streamed by
`omnisocial.streaming.stream` through a real `OpenAICompatBackend` (`concurrency` c), the whole
prefix each step (1 s steps to each clip's end, no stop rule: every step is asked), with c x
`--items-per-slot` items so every slot has an item to stream. Entries:

- audio: the audio prefix (wav joined from the segments, an `input_audio` part);
- audio_video: the mp4 prefix as one `video_url` part (data URL) with its audio in the video
  (`media.video_audio: in_video`, vLLM's use_audio_in_video; whether it has sound comes from
  the segments, no probe per step);
- frames: JPEG frames sampled at 1 fps (`video_mode: frames`, no audio): the item's frames,
  sampled once, up to t.

Per (entry, c) it prints calls, wall seconds, calls/s, the limit c / latency and the share
calls/s / limit (target >= 0.9), the same share from the first call to the last reply
(`steady`: the job's start-up, its store read and first media, left out), the server's mean
busy slots (mean calls in flight),
and the CPU seconds per call this process and its ffmpeg children used (media preparation,
encoding), with the share the machine's cores could sustain at that CPU cost: where that
is below the latency limit the run is CPU-bound, not scheduling-bound. Each run uses a fresh
result cache (every step a real call). `--compare-driver FILE` also runs a driver module
loaded from FILE (e.g. an older `streaming/driver.py` written out with `git show`) on the same
clips and server, in the same run, and prints the ratio of the two. `--nagle`: the server leaves
Nagle's algorithm on (as Python's http.server and cpp-httplib do), so each reply's body waits for
the client's ACK of its headers. `benchmarks/bench_streaming_rule.py` measures the workflow's own
job instead.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from omnisocial.models.openai_compat import OpenAICompatBackend  # noqa: E402
from omnisocial.streaming import Parsed, Schedule, StreamItem, StreamProtocol, cut_segments  # noqa: E402
from omnisocial.streaming import stream as new_stream  # noqa: E402

TARGET = 0.9
ENTRIES = {
    "audio": ("audio", {}),
    "audio_video": ("video", {"video_mode": "video_url", "video_audio": "in_video"}),
    "frames": ("video", {"video_mode": "frames", "video_audio": "none", "fps": 1.0, "frame_width": 320}),
}


class LoopbackServer:
    """Chat completions answered after a fixed latency; counts calls and the slots it kept busy.

    `serve` runs it in this process; `LoopbackProcess` starts it as a process of its own (a
    model server is one: it must not share the client's interpreter lock)."""

    def __init__(self, latency_s: float, nagle: bool = False):
        self.latency_s = latency_s
        self.calls = 0
        self.in_flight = 0
        self.busy_s = 0.0  # integral of calls in flight over time
        self.first = self.last = None  # when the first call came and the last reply left
        self._lock = threading.Lock()
        self._last = time.monotonic()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as a real server

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                # as uvicorn (vLLM) and Go (Ollama) servers do; `nagle` leaves it off, as Python's
                # http.server and cpp-httplib (llama.cpp's server) do by default: then Nagle's
                # algorithm holds each reply's body until the client ACKs its headers
                if not nagle:
                    self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_GET(self):  # noqa: N802 - http.server API: the backend's probe, the bench's stats
                path, _, query = self.path.partition("?")
                if path.endswith("/stats"):
                    self._send(server.stats(reset=query == "reset"))
                else:
                    self._send({"data": []})

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                server._enter()
                try:
                    time.sleep(server.latency_s)
                finally:
                    server._leave()
                message = {"role": "assistant", "content": "NO"}
                choice = {"index": 0, "message": message, "finish_reason": "stop"}
                self._send({"id": "x", "object": "chat.completion", "model": "loopback", "choices": [choice]})

            def _send(self, data):
                body = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True

    def _tick(self):
        now = time.monotonic()
        self.busy_s += self.in_flight * (now - self._last)
        self._last = now

    def _enter(self):
        with self._lock:
            self._tick()
            self.in_flight += 1
            self.calls += 1
            self.first = self.first or self._last

    def _leave(self):
        with self._lock:
            self._tick()
            self.in_flight -= 1
            self.last = self._last

    def stats(self, reset: bool = False) -> dict:
        with self._lock:
            self._tick()
            out = {"calls": self.calls, "busy_s": self.busy_s, "first": self.first, "last": self.last}
            if reset:
                self.calls, self.busy_s, self.first, self.last = 0, 0.0, None, None
        return out

    def serve(self) -> None:
        print(self.httpd.server_address[1], flush=True)
        self.httpd.serve_forever()


class LoopbackProcess:
    """The loopback server in a child process (this file with --serve); stats over HTTP."""

    def __init__(self, latency_s: float, nagle: bool = False):
        self.latency_s = latency_s
        command = [sys.executable, __file__, "--serve", str(latency_s), *(["--nagle"] if nagle else [])]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        self.port = int(self.process.stdout.readline())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self, reset: bool = False) -> dict:
        import httpx

        return httpx.get(f"{self.url}/stats{'?reset' if reset else ''}", timeout=10).json()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait(timeout=10)


def make_clip(path: Path, seconds: float) -> Path:
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25",
         "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000", "-t", f"{seconds:g}",
         "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-pix_fmt", "yuv420p", "-c:a", "aac",
         str(path)],
        check=True, capture_output=True,
    )  # fmt: skip
    return path


def protocol() -> StreamProtocol:
    def prompt(item, t, history):
        return (
            "",
            f"The clip is streamed to you live; you have seen it up to t = {t:g} s. Speak now? YES or NO.",
        )

    return StreamProtocol("bench", prompt, lambda reply: Parsed("silence"), stop_at_first=False)


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_once(stream_fn, entry_name, items, segments, server, concurrency, work) -> dict:
    modality, media = ENTRIES[entry_name]
    entry = {"name": f"bench-{entry_name}", "backend": "openai", "model": "loopback", "base_url": server.url,
             "modalities": ["text", modality], "max_retries": 0, "concurrency": concurrency, "timeout_s": 60,
             "media": {"audio_sample_rate": 16000, **media}}  # fmt: skip
    backend = OpenAICompatBackend(entry)
    cache = Path(tempfile.mkdtemp(dir=work)) / "cache.jsonl"
    server.stats(reset=True)
    cpu0, started = cpu_seconds(), time.perf_counter()
    try:
        run = stream_fn(
            backend, items, protocol(), modality=modality, segments_root=segments, cache_path=cache,
            progress=False, work_dir=work,
        )  # fmt: skip
    finally:
        backend.close()
    wall, cpu = time.perf_counter() - started, cpu_seconds() - cpu0
    seen = server.stats()
    calls = int(run.summary["n_calls"])
    assert calls == seen["calls"] == sum(len(item.schedule) for item in items), (calls, seen["calls"])
    limit = concurrency / server.latency_s
    rate = calls / wall
    cores = len(os.sched_getaffinity(0))
    cpu_per_call = cpu / calls
    return {
        "entry": entry_name,
        "c": concurrency,
        "calls": calls,
        "wall_s": wall,
        "calls_per_s": rate,
        "limit": limit,
        "share": rate / limit,
        "steady": calls / (seen["last"] - seen["first"]) / limit,  # first call to last reply
        "busy": seen["busy_s"] / wall,
        "cpu_ms_per_call": 1000 * cpu_per_call,
        "cpu_share": min(1.0, cores / cpu_per_call / limit) if cpu_per_call > 0 else 1.0,
    }


def load_driver(path: Path):
    spec = importlib.util.spec_from_file_location("compared_driver", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module.stream


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--entries", nargs="+", default=list(ENTRIES), choices=list(ENTRIES))
    parser.add_argument("--clip-s", type=float, default=10.0, help="each item's clip length (1 s steps)")
    parser.add_argument("--items-per-slot", type=int, default=4)
    parser.add_argument("--compare-driver", type=Path, help="a driver module file to run beside this one")
    parser.add_argument("--serve", type=float, help=argparse.SUPPRESS)  # the server process
    parser.add_argument("--nagle", action="store_true", help="the server leaves Nagle's algorithm on")
    args = parser.parse_args()
    if args.serve is not None:
        LoopbackServer(args.serve, args.nagle).serve()
        return 0
    drivers = {"new": new_stream}
    if args.compare_driver:
        drivers["compared"] = load_driver(args.compare_driver)
    cores = len(os.sched_getaffinity(0))
    print(f"load average {os.getloadavg()[0]:.1f} (cpu_cap assumes the cores are this job's alone)")
    print(f"loopback latency {args.latency_ms:g} ms; {args.clip_s:g} s clips, 1 s steps; {cores} cores; "
          f"target share >= {TARGET}")  # fmt: skip
    results = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-throughput-") as scratch,
        LoopbackProcess(args.latency_ms / 1000) as server,
    ):
        work = Path(scratch)
        clip = make_clip(work / "clip.mp4", args.clip_s + 0.5)
        most = max(args.concurrency) * args.items_per_slot
        items = [StreamItem(f"i{k:03d}", clip, Schedule(1.0, args.clip_s, 1.0)) for k in range(most)]
        segments = work / "segments"
        for modality in sorted({ENTRIES[name][0] for name in args.entries}):
            cut_segments(items[0], None, segments, modality)
            for item in items[1:]:  # every item streams the same clip: share its segments
                (segments / modality / item.item_id).symlink_to(segments / modality / items[0].item_id)
        header = [
            "driver",
            "entry",
            "c",
            "calls",
            "wall_s",
            "calls/s",
            "limit",
            "share",
            "steady",
            "busy",
            "cpu_ms",
            "cpu_cap",
        ]
        print(" ".join(f"{h:>11}" for h in header))
        for name in args.entries:
            for concurrency in args.concurrency:
                mine = items[: concurrency * args.items_per_slot]
                for label, stream_fn in drivers.items():
                    row = run_once(stream_fn, name, mine, segments, server, concurrency, work)
                    row["driver"] = label
                    results.append(row)
                    values = [row["wall_s"], row["calls_per_s"], row["limit"], row["share"], row["steady"],
                              row["busy"], row["cpu_ms_per_call"], row["cpu_share"]]  # fmt: skip
                    cells = [f"{label:>11}", f"{name:>11}", f"{concurrency:>11}", f"{row['calls']:>11}"]
                    print(" ".join(cells + [f"{v:11.3f}" for v in values]), flush=True)
    new = [r for r in results if r["driver"] == "new"]
    if "compared" in drivers:
        print("\nnew / compared calls per second")
        for row in new:
            other = next(
                r
                for r in results
                if r["driver"] == "compared" and (r["entry"], r["c"]) == (row["entry"], row["c"])
            )
            print(f"  {row['entry']:>11} c={row['c']:<3} {row['share']:.3f} vs {other['share']:.3f}: "
                  f"{row['calls_per_s'] / other['calls_per_s']:.2f}x")  # fmt: skip
    below = [r for r in new if r["share"] < TARGET]
    for row in below:
        bound = "CPU-bound on this machine" if row["cpu_share"] < TARGET else "scheduling"
        print(f"below target: {row['entry']} c={row['c']} share {row['share']:.3f} ({bound}: the cores "
              f"could sustain {row['cpu_share']:.2f} of the limit at {row['cpu_ms_per_call']:.0f} ms CPU "
              "a call)")  # fmt: skip
    print("PASS" if not below else f"\n{len(below)} of {len(new)} runs below {TARGET}")
    return 0 if not below else 1


if __name__ == "__main__":
    sys.exit(main())

"""The one route to the ffmpeg/ffprobe executables: ffmpeg-python graphs, run with a timeout.

Commands are built with ffmpeg-python (`import ffmpeg`): `ffmpeg.input(...)`, selectors
(`["a:0"]` compiles to `-map 0:a:0`), `.output(...)`. ffmpeg-python writes each node's
keyword options in sorted order, so a compiled command may order the options of one
output differently from a hand-written list; the options and their values are the same.

ffmpeg-python's own `run` / `run_async` / `probe` take no timeout and cannot send stderr
to a file, so the functions here run the compiled argument list (`stream.compile()`)
with `subprocess` themselves:

- `run_ffmpeg(stream, *, file, what, timeout_s=TIMEOUT_S) -> bytes`: stdout of the run.
- `run_command(argv, *, file, what, timeout_s=TIMEOUT_S) -> CompletedProcess`: the same
  for an argument list (`ffprobe_args` or a compiled stream).
- `probe_json(file, *, what="probe", timeout_s=TIMEOUT_S, **options) -> dict`: ffprobe's JSON, with
  `ffmpeg.probe`'s arguments (`-show_format -show_streams -of json`, then `options`).
- `pipe_frames(stream, data, stderr_path) -> int`: raw frames on the encoder's stdin
  (`ffmpeg.input("pipe:", format="rawvideo", ...)`), stderr in a file, the exit code.

Failures raise `MediaError` naming the file: "<tool> is not installed (needed to <what>
<file>)", "<tool> took over <timeout_s> s to <what> <file>", "cannot <what> <file>:
<last stderr line>".
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import ffmpeg

TIMEOUT_S = 600


class MediaError(Exception):
    """A media file is missing, empty, corrupt or unreadable; the message says which and why."""


def last_line(text: bytes | str) -> str:
    """The last non-empty line of a tool's message ("no message" when there is none)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def compile_args(stream, cmd: str = "ffmpeg") -> list[str]:
    """The argument list ffmpeg-python builds for `stream` (no `-y`: nothing is overwritten)."""
    return ffmpeg.compile(stream, cmd=cmd)


def ffprobe_args(file: str | Path, cmd: str = "ffprobe", **options) -> list[str]:
    """The argument list `ffmpeg.probe(file, cmd, **options)` runs (options sorted by name)."""
    return [cmd, "-show_format", "-show_streams", "-of", "json", *_options(options), str(file)]


def _options(options: dict) -> list[str]:
    args = []
    for key in sorted(options):  # as ffmpeg-python's convert_kwargs_to_cmd_line_args
        args.append(f"-{key}")
        if options[key] is not None:
            args.append(f"{options[key]}")
    return args


def run_command(
    argv: list[str], *, file: Path, what: str, timeout_s: float = TIMEOUT_S
) -> subprocess.CompletedProcess:
    """Run `argv` capturing stdout and stderr; MediaError (file named) when it fails or hangs."""
    try:
        result = subprocess.run(argv, capture_output=True, timeout=timeout_s, check=False)
    except FileNotFoundError:
        raise MediaError(f"{argv[0]} is not installed (needed to {what} {file})") from None
    except subprocess.TimeoutExpired:
        raise MediaError(f"{argv[0]} took over {timeout_s} s to {what} {file}") from None
    if result.returncode != 0:
        message = last_line(result.stderr)
        message = message.removeprefix(f"{file}: ").removeprefix(f"{argv[-1]}: ")
        raise MediaError(f"cannot {what} {file}: {message}")
    return result


def run_ffmpeg(stream, *, file: Path, what: str, timeout_s: float = TIMEOUT_S) -> bytes:
    """Run an ffmpeg-python graph (output to "-" or "pipe:1" to read it) and return its stdout.

    `ffmpeg.run` has no timeout, so the compiled argument list runs under `run_command`.
    """
    return run_command(compile_args(stream), file=file, what=what, timeout_s=timeout_s).stdout


def probe_json(file: Path, *, what: str = "probe", timeout_s: float = TIMEOUT_S, **options) -> dict:
    """ffprobe's JSON for `file`, with the arguments `ffmpeg.probe(file, **options)` uses.

    `ffmpeg.probe` has no timeout, hence `run_command` on its argument list. Raises
    MediaError as `run_command` does, or "ffprobe gave unreadable output for <file>: ...".
    """
    result = run_command(ffprobe_args(file, **options), file=file, what=what, timeout_s=timeout_s)
    try:
        return json.loads(result.stdout.decode("utf-8", errors="replace") or "{}")
    except json.JSONDecodeError as error:
        raise MediaError(f"ffprobe gave unreadable output for {file}: {error}") from None


def pipe_frames(stream, data: bytes, stderr_path: Path) -> int:
    """Run an encoder graph with `data` on its stdin and its stderr in `stderr_path`; its exit code.

    The graph reads `pipe:` (e.g. `ffmpeg.input("pipe:", format="rawvideo", pix_fmt="yuv420p",
    s="64x48", r=10).output(str(path), vcodec="libx264")`); a list is taken as the argument list.
    `run_async(pipe_stdin=True)` cannot send stderr to a file, hence Popen on the compiled list.
    Writes stdin in one call (communicate() would feed large frame buffers in small pieces); a
    process that exits early (broken pipe) is reported by its exit code.
    """
    argv = list(stream) if isinstance(stream, (list, tuple)) else compile_args(stream)
    with open(stderr_path, "wb") as log_file:
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log_file)
        try:
            process.stdin.write(data)
        except BrokenPipeError:
            pass
        finally:
            process.stdin.close()
        return process.wait()

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
- `run_tool(argv, *, doing, timeout_s=TIMEOUT_S) -> CompletedProcess`: the run under both,
  whatever its return code (the stimuli judge it themselves).
- `probe_json(file, *, what="probe", timeout_s=TIMEOUT_S, **options) -> dict`: ffprobe's JSON, with
  `ffmpeg.probe`'s arguments (`-show_format -show_streams -of json`, then `options`).
- `pipe_frames(stream, data, stderr_path) -> int`: raw frames on the encoder's stdin
  (`ffmpeg.input("pipe:", format="rawvideo", ...)`), stderr in a file, the exit code.

Failures raise `MediaError` naming the file: "<tool> is not installed (needed to <what>
<file>)", "<tool> took over <timeout_s> s to <what> <file>", "cannot <what> <file>:
<last stderr line>". A tool stopped by a signal (Ctrl-C, a kill) raises
`omnisocial.processes.Interrupted` instead (`raise_if_interrupted`): the file is not at fault.
The tools die with the thread that started them (`processes.as_child`).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import ffmpeg

from omnisocial.processes import Interrupted, as_child, interrupt_signal

TIMEOUT_S = 600
# ffmpeg ends a run it was told to stop (SIGINT, SIGTERM...) with exit status 255, and says
# "Exiting normally, received signal N." at info level only: unseen under `-loglevel error`.
FFMPEG_SIGNAL_EXIT = 255
RECEIVED_SIGNAL = re.compile(rb"received signal (\d+)")


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


def raise_if_interrupted(argv: list[str], returncode: int, stderr: bytes, doing: str) -> None:
    """Raise Interrupted when a signal stopped the tool of `argv` (`doing`: what it was doing).

    A negative return code is a kill by a signal. ffmpeg traps SIGINT/SIGTERM/... and exits 255,
    which it gives only after a signal (its errors exit 1): a 255 that states the signal, or that
    said nothing (its error lines would be there under `-loglevel error`), is an interrupt.
    """
    tool, stderr = Path(argv[0]).name, stderr or b""
    signum = interrupt_signal(returncode)
    if signum is None and tool.startswith("ffmpeg") and returncode == FFMPEG_SIGNAL_EXIT:
        received = RECEIVED_SIGNAL.search(stderr)
        if received is None and stderr.strip():
            return  # a 255 that names an error: ffmpeg's failure, reported as such
        signum = int(received[1]) if received else None
    elif signum is None:
        return
    raise Interrupted(tool, signum, doing)


def run_tool(
    argv: list[str], *, doing: str, timeout_s: float | None = TIMEOUT_S
) -> subprocess.CompletedProcess:
    """Run `argv` to its end, stdout and stderr captured, as a child that dies with its thread.

    Interrupted when a signal stopped it; any other return code is the caller's to judge.
    FileNotFoundError when the tool is not installed, TimeoutExpired past `timeout_s`.
    """
    command, options = as_child(argv)
    result = subprocess.run(command, capture_output=True, timeout=timeout_s, check=False, **options)
    raise_if_interrupted(argv, result.returncode, result.stderr, doing)
    return result


def run_command(
    argv: list[str], *, file: Path, what: str, timeout_s: float = TIMEOUT_S
) -> subprocess.CompletedProcess:
    """Run `argv` capturing stdout and stderr; MediaError (file named) when it fails or hangs.

    Interrupted when a signal stopped it (`raise_if_interrupted`).
    """
    try:
        result = run_tool(argv, doing=f"trying to {what} {file}", timeout_s=timeout_s)
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
    process that exits early (broken pipe) is reported by its exit code; one stopped by a signal
    raises Interrupted.
    """
    argv = list(stream) if isinstance(stream, (list, tuple)) else compile_args(stream)
    command, options = as_child(argv)
    with open(stderr_path, "wb") as log_file:
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log_file, **options
        )
        try:
            process.stdin.write(data)
        except BrokenPipeError:
            pass
        finally:
            process.stdin.close()
        code = process.wait()
    raise_if_interrupted(argv, code, Path(stderr_path).read_bytes(), f"encoding {argv[-1]}")
    return code

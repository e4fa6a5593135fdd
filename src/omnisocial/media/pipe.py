"""Feeding raw frames to an external encoder (ffmpeg) through its standard input."""

from __future__ import annotations

import subprocess
from pathlib import Path


def run_with_stdin(command: list[str], data: bytes, stderr_path: Path) -> int:
    """Run `command` with `data` on its stdin and stderr in `stderr_path`; return its exit code.

    Writes stdin in one call (communicate() would feed large frame buffers in small
    pieces); a process that exits early (broken pipe) is reported by its exit code.
    """
    with open(stderr_path, "wb") as log_file:
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log_file)
        try:
            process.stdin.write(data)
        except BrokenPipeError:
            pass
        finally:
            process.stdin.close()
        return process.wait()

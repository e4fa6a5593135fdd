"""The processes a job starts, and how they end with it.

- `fork_context()`: the multiprocessing context of the jobs that spread their work over their
  threads (corpus, signals, Rasch fits).
- `Interrupted` / `interrupt_signal`: a child stopped by a signal (Ctrl-C, a kill) is reported as
  an interrupted run, never as a failure of its input.
- `as_child` / `die_with_parent`: the tools the package runs (ffmpeg, ffprobe, espeak...) get
  SIGKILL from Linux when the thread that started them ends (prctl PR_SET_PDEATHSIG), so a job
  that is killed leaves no encoder behind.
- `stop_with_workflow()`: a job (`omnisocial.workflow.start`) ends itself when the Snakemake run
  that started it is gone (killed with `kill -9`, its session lost), so that a resumed run never
  works beside a leftover job; its forked pool workers die with it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

# Signals that stop a run from outside: Ctrl-C, a closed terminal, `kill`, `kill -9`.
INTERRUPT_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGKILL})
PARENT_POLL_S = 0.5  # how often a job looks for its Snakemake run
ORPHANED_EXIT = 1  # a job's exit status when its run is gone (nobody reads it)


def fork_context():
    """The multiprocessing context of those pools: fork, or spawn where fork does not exist.

    fork: the workers need not re-import the caller's main module (a Snakemake script has no
    `if __name__ == "__main__"` guard) nor pay its imports again.
    """
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


class Interrupted(KeyboardInterrupt):
    """A tool the package ran was stopped by a signal: the run was interrupted, its input is not at fault.

    A KeyboardInterrupt, so that no `except Exception` (a per-item failure policy) counts an
    interrupted item as a failed one: the interrupt ends the job, and a rerun redoes the item.
    """

    def __init__(self, tool: str, signum: int | None, doing: str):
        self.tool, self.doing = tool, doing
        self.signal = signal.Signals(signum) if signum is not None else None
        by = self.signal.name if self.signal is not None else "a signal"
        super().__init__(
            f"{tool} was interrupted by {by} while {doing}: the run was stopped, rerun to resume"
        )

    def __reduce__(self):  # as raised in a pool's worker process, re-raised in the job
        return type(self), (self.tool, self.signal, self.doing)


def interrupt_signal(returncode: int) -> signal.Signals | None:
    """The interrupting signal that killed a child with this return code (negative), or None."""
    if returncode < 0 and -returncode in {s.value for s in INTERRUPT_SIGNALS}:
        return signal.Signals(-returncode)
    return None


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()  # looked up here, so that a forked child only calls it (no import, no lookup)


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when the thread that started it ends (elsewhere: nothing).

    Set for the package's tools (`as_child`) and run in every child a job forks.
    SIGKILL, not SIGTERM: nobody reads the child's output once its parent is gone.
    """
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL.value, 0, 0, 0)


# The keyword arguments with which a tool that dies with its thread is started where util-linux's
# setpriv is missing: the child runs die_with_parent between fork and exec.
_PREEXEC_OPTIONS = {"preexec_fn": die_with_parent} if _PRCTL is not None else {}


@functools.cache
def _setpriv() -> str | None:
    """util-linux's setpriv where it can set the parent-death signal (2.33 and later), else None."""
    found = shutil.which("setpriv")
    if _PRCTL is None or found is None:
        return None
    try:
        usage = subprocess.run([found, "--help"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return found if "--pdeathsig" in usage.stdout else None


def as_child(argv: Sequence[str]) -> tuple[list[str], dict]:
    """The argument list and subprocess keyword arguments that start `argv` as a child that Linux
    SIGKILLs when the thread that started it ends.

    Through `setpriv --pdeathsig KILL` where util-linux has it: setpriv sets the signal and execs
    the tool in the same process, so return codes and signals are the tool's own, and Python
    starts it with vfork. A `preexec_fn` would make Python fork the whole job instead, copying its
    page tables (a corpus worker holds hundreds of MB), for every tool it runs. A tool that is not
    installed is started directly, so that it still raises FileNotFoundError.
    """
    argv = [str(arg) for arg in argv]
    setpriv = _setpriv()
    if setpriv is None or not argv or shutil.which(argv[0]) is None:
        return argv, dict(_PREEXEC_OPTIONS)
    return [setpriv, "--pdeathsig", "KILL", "--", *argv], {}


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of a live process, from /proc; None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), int(fields[19])  # fields 4 (ppid) and 22 (starttime) of proc(5)


def runs_snakemake(argv: list[str]) -> bool:
    """Whether a command line runs Snakemake: `snakemake ...`, `python .../bin/snakemake ...` or
    `python -m snakemake ...` (a group job's), not a command that merely names it (`pytest -k snakemake`)."""
    names = [Path(arg).name for arg in argv[:3]]
    return names[:1] == ["snakemake"] or names[1:2] == ["snakemake"] or names[1:3] == ["-m", "snakemake"]


def _is_snakemake(pid: int) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return runs_snakemake([arg.decode(errors="replace") for arg in argv])


def workflow_processes(pid: int | None = None) -> list[tuple[int, int]]:
    """(pid, start time) of the processes a job lives for: its parent, and every ancestor up to the
    outermost Snakemake process (a group job runs under a Snakemake that the run's own Snakemake
    started through a shell). Empty where /proc does not exist.
    """
    pid = os.getpid() if pid is None else pid
    chain = []
    current = _stat(pid)
    while current is not None and current[0] > 1:
        parent = current[0]
        current = _stat(parent)
        if current is None:
            break
        chain.append((parent, current[1], _is_snakemake(parent)))
    outermost = max((i for i, (_, _, smk) in enumerate(chain) if smk), default=0)
    return [(p, started) for p, started, _ in chain[: outermost + 1]]


def _gone(watched: list[tuple[int, int]], first_parent: int) -> int | None:
    """The first watched process that no longer runs (a pid reused by another process counts)."""
    if os.getppid() != first_parent:
        return first_parent
    for pid, started in watched:
        stat = _stat(pid)
        if stat is None or stat[1] != started:
            return pid
    return None


_watching = False


def stop_with_workflow(log=None, poll_s: float = PARENT_POLL_S) -> None:
    """End this process (os._exit) within `poll_s` of its Snakemake run's end; forked children too.

    A job started by Snakemake itself asks for SIGKILL on its end (`die_with_parent`); a daemon
    thread polls the parent and the run's Snakemake processes (`workflow_processes`), which also
    covers a job under a Snakemake that the run started through a shell (a group job).
    os._exit ends every thread at once, so the tools started through `as_child` and the pool
    workers forked after this call (which ask for SIGKILL on their parent's end) die with it.
    Once per process.
    """
    global _watching
    if _watching:
        return
    _watching = True
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=die_with_parent)
    first_parent = os.getppid()
    if _is_snakemake(first_parent):
        # The kernel's SIGKILL needs no Python: it also ends a job stuck in a C call holding the
        # GIL, which the thread below would wait for. Snakemake's thread that started the job
        # waits for it, so only Snakemake's death sends it.
        die_with_parent()
    watched = workflow_processes()

    def watch() -> None:
        while (gone := _gone(watched, first_parent)) is None:
            time.sleep(poll_s)
        message = f"stopping: process {gone} of the Snakemake run that started this job has ended"
        if log is not None:
            log.error(message)
        os._exit(ORPHANED_EXIT)

    threading.Thread(target=watch, name="stop-with-workflow", daemon=True).start()

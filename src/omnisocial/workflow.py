"""What every workflow script shares: logging into the rule's log file.

Snakemake deletes a job's declared log before each attempt, so a retried job would lose
the failed attempt's traceback. Each attempt (a retry or a later run of the same job)
therefore writes, behind a header numbering it, both to the declared log and to
`<log>.attempts` beside it, a file that no rule declares and that is only ever appended
to: it keeps every attempt's log. (Snakemake gives scripts no attempt number, so the
number counts the headers already in that file.)

Because stderr goes to the log, a failed job would show only Snakemake's "check log
file(s)" on the console; `start` therefore also installs an excepthook that, after the full
traceback has gone to the log, prints the exception's type and the first `CONSOLE_LINES`
lines of its message to the console (the real stderr), with the log's path.

An interrupt (Ctrl-C, a kill of a tool the job ran: a KeyboardInterrupt, e.g.
`omnisocial.processes.Interrupted`) is shown as such: `omnisocial: rule <name> interrupted`.
A job also ends itself when the Snakemake run that started it is gone
(`omnisocial.processes.stop_with_workflow`), so a resumed run never works beside it.

A job's interpreter also skips the garbage collector's passes over everything it imported
when it exits (`skip_exit_collections`): the job's work is done by then.
"""

from __future__ import annotations

import atexit
import gc
import io
import logging
import sys
import traceback
from datetime import UTC, datetime

from omnisocial.processes import stop_with_workflow

ATTEMPTS_SUFFIX = ".attempts"


class _Tee(io.TextIOBase):
    """A line-buffered text stream that writes to several files."""

    def __init__(self, *streams):
        self._streams = streams

    def write(self, text: str) -> int:
        for stream in self._streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self._streams:
            stream.flush()


HEADER = "===== rule "
CONSOLE_LINES = 25


def attempt_header(rule: str, attempt: int) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{HEADER}{rule}, attempt {attempt}, started {stamp} =====\n"


def _attempts_so_far(history_path: str) -> int:
    try:
        with open(history_path, encoding="utf-8", errors="replace") as handle:
            return sum(line.startswith(HEADER) for line in handle)
    except FileNotFoundError:
        return 0


def console_excepthook(rule: str, log_path: str, console=None):
    """An excepthook: the traceback to sys.stderr (the log), then its last lines to `console`."""

    def hook(kind, error, tb) -> None:
        sys.__excepthook__(kind, error, tb)  # writes to sys.stderr, i.e. the log
        lines = "".join(traceback.format_exception_only(kind, error)).rstrip("\n").splitlines()
        if len(lines) > CONSOLE_LINES:
            lines = [*lines[:CONSOLE_LINES], f"... ({len(lines) - CONSOLE_LINES} more line(s) in the log)"]
        outcome = "interrupted" if issubclass(kind, KeyboardInterrupt) else "failed"
        stream = console or sys.__stderr__
        stream.write(
            f"omnisocial: rule {rule} {outcome}\n"
            + "".join(f"    {line}\n" for line in lines)
            + f"    (full traceback: {log_path})\n"
        )
        stream.flush()

    return hook


def skip_exit_collections() -> None:
    """Freeze every object the collector tracks, so that the interpreter's last collections
    (at exit, before and while the modules are torn down) pass over none of them.

    Those passes walk every object a job imported: 0.2-0.9 CPU-s per job of the demo (pandas and
    matplotlib 0.2 s, torch and transformers 0.7 s, pymc and arviz 0.8 s; cycles of objects that
    are garbage by then are simply not freed before the process ends). Exit handlers, the
    flushing of the standard streams and the exit status are unchanged.
    """
    gc.freeze()


def start(smk) -> logging.Logger:
    """Send logging and stderr to the rule's `log:` file (appending) and log the rule's params.

    An uncaught exception still reaches the console in short (`console_excepthook`); the job
    ends itself when its Snakemake run is gone (`stop_with_workflow`).
    """
    log_path = smk.log[0]
    # Both live for the job; line buffering keeps a crash's last lines.
    declared = open(log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
    attempt = _attempts_so_far(log_path + ATTEMPTS_SUFFIX) + 1
    history = open(log_path + ATTEMPTS_SUFFIX, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
    stream = _Tee(declared, history)
    stream.write(attempt_header(smk.rule, attempt))
    sys.stderr = stream
    sys.excepthook = console_excepthook(smk.rule, log_path)
    atexit.unregister(skip_exit_collections)  # once per process, however often start runs
    atexit.register(skip_exit_collections)  # runs before the exit's collections
    logging.basicConfig(
        stream=stream,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logger = logging.getLogger(f"omnisocial.rule.{smk.rule}")
    stop_with_workflow(logger)
    for name, value in smk.params.items():
        logger.info("param %s = %r", name, value)
    return logger


def threads(smk) -> int:
    return max(1, int(getattr(smk, "threads", 1) or 1))

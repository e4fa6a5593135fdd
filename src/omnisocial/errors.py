"""Errors and exit codes every layer may raise or return (no imports: the command line, the
statistics and the benchmarks all use them, so this module sits below all of them)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_INPUT = 2


class InputError(Exception):
    """Bad input: `omnisocial` reports it as one line and exit code 2."""

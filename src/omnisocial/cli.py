"""Command line: `omnisocial <subcommand> ...`.

Built-in subcommands are listed in `BUILTIN_COMMANDS` (name -> register(subparsers)). Each
register function adds its parser and sets `func`, a callable taking the parsed arguments
and returning the exit code.

Other modules add subcommands through a hook: a module named in `PLUGIN_MODULES` that
defines `add_cli(subparsers)` gets to register its own parsers the same way (set
`func=...` with `set_defaults`). Plugins are imported only when the command line does not
name a built-in subcommand (so `omnisocial score` never pays for importing PyMC), and a
plugin module that does not exist yet is skipped.

Errors in the input (a table breaking its contract, an unreadable file) end with a one-line
message on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import sys
from collections.abc import Callable

import pandas as pd

from omnisocial.io import read_csv_strings
from omnisocial.tables import METRICS, PREDICTIONS, TableError

EXIT_OK = 0
EXIT_INPUT = 2

PLUGIN_MODULES = ("omnisocial.stats.glmm", "omnisocial.stats.rasch")


class InputError(Exception):
    """Bad input: reported as one line and exit code 2."""


# --- score ------------------------------------------------------------------------------


def _check_field_counts(path: str) -> None:
    """Fail on a row with fewer or more fields than the header (pandas would pad it silently)."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            return
        for row in reader:
            if row and len(row) != len(header):
                line = reader.line_num
                if len(row) < len(header):
                    missing = ", ".join(header[len(row) :])
                    raise InputError(
                        f"{path}: row {line} column {missing}: missing (row has {len(row)} fields)"
                    )
                raise InputError(f"{path}: row {line}: {len(row)} fields, the header has {len(header)}")


def read_predictions(path: str) -> pd.DataFrame:
    """Read a predictions CSV: labels/truth case-insensitive, empty label = non-answer."""
    try:
        _check_field_counts(path)
        frame = read_csv_strings(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as error:
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, csv.Error) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InputError(f"{path}: not a readable CSV ({reason})") from None
    for column in ("truth", "label"):
        if column in frame.columns:
            frame[column] = frame[column].astype(str).str.strip().str.lower()
    return PREDICTIONS.validate(frame, source=str(path))


def _run_score(args: argparse.Namespace) -> int:
    from omnisocial.stats.sdt import score_predictions

    predictions = read_predictions(args.predictions)
    METRICS.write(args.output, score_predictions(predictions))
    return EXIT_OK


def register_score(subparsers) -> None:
    parser = subparsers.add_parser(
        "score",
        help="score a predictions table into a metrics table",
        description="Accuracy on answered items, coverage, Wilson 95%% CI, exact binomial p vs 0.5, "
        "per-class recall, log-linear d' and c, one row per model x modality.",
    )
    parser.add_argument("predictions", help="PREDICTIONS CSV (model,modality,item_id,truth,label,confidence)")
    parser.add_argument("-o", "--output", required=True, help="METRICS CSV to write")
    parser.set_defaults(func=_run_score)


BUILTIN_COMMANDS: dict[str, Callable] = {
    "score": register_score,
}


# --- plumbing ---------------------------------------------------------------------------


def _load_plugins(subparsers) -> None:
    for name in PLUGIN_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name == name:  # not written yet: nothing to register
                continue
            print(f"omnisocial: warning: cannot load {name}: {error}", file=sys.stderr)
            continue
        except ImportError as error:
            print(f"omnisocial: warning: cannot load {name}: {error}", file=sys.stderr)
            continue
        hook = getattr(module, "add_cli", None)
        if callable(hook):
            hook(subparsers)


def _first_positional(argv: list[str]) -> str | None:
    return next((arg for arg in argv if not arg.startswith("-")), None)


def build_parser(load_plugins: bool = True) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="omnisocial", description="Benchmarks of social perception in omni-modal models and people."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for register in BUILTIN_COMMANDS.values():
        register(subparsers)
    if load_plugins:
        _load_plugins(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(load_plugins=_first_positional(argv) not in BUILTIN_COMMANDS)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (InputError, TableError) as error:
        message = " ".join(str(error).split())
        print(f"omnisocial {args.command}: error: {message}", file=sys.stderr)
        return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())

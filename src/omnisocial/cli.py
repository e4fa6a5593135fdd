"""Command line: `omnisocial <subcommand> ...`.

Every subcommand is registered one way: `COMMANDS` names, for each subcommand, the module
whose `add_cli(subparsers)` adds its parser and sets `func` (a callable taking the parsed
arguments and returning the exit code). Only the named subcommand's module is imported, so
`omnisocial score` never pays for importing PyMC; `--help` or an unknown name imports them
all. A module that does not exist yet is skipped.

Errors in the input (a table breaking its contract, an unreadable file: `TableError`, or
`omnisocial.errors.InputError`, which the shared layers raise without importing this module)
end with a one-line message on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import importlib
import sys
from collections.abc import Sequence

import pandas as pd

from omnisocial.errors import EXIT_INPUT, EXIT_OK, InputError
from omnisocial.io import read_csv_strings
from omnisocial.tables import METRICS, PREDICTIONS, RELATIONSHIPS, Contract, TableError

COMMANDS: dict[str, str] = {
    "score": __name__,  # add_cli below
    "glmm": "omnisocial.stats.glmm.cli",
    "rasch": "omnisocial.stats.rasch",
    "socialomni": "omnisocial.socialomni.cli",  # who|when|how from replies made elsewhere
    "duplexeval": "omnisocial.duplexeval.cli",  # rtd|pr from judge replies made elsewhere
    "rating-server": "omnisocial.familiarity.ratings.collect",  # the rating experiment's server
    "explore": "omnisocial.explorer.serve",  # a run's results explorer on localhost
    "friendbench-demo": "omnisocial.familiarity.release_demo",  # a generated release, both layouts
}


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


DEFAULT_MODALITIES = ("text", "audio", "video")


def predictions_contract(labels: Sequence[str], modalities: Sequence[str] | None) -> Contract:
    """PREDICTIONS with the given label vocabulary (signal class first) and modalities (None: any)."""
    columns = []
    for column in PREDICTIONS.columns:
        if column.name == "truth":
            column = dataclasses.replace(column, allowed=tuple(labels))
        elif column.name == "label":
            column = dataclasses.replace(column, allowed=("", *labels))
        elif column.name == "modality":
            allowed = tuple(modalities) if modalities else None
            column = dataclasses.replace(column, allowed=allowed, blank=False)
        columns.append(column)
    return dataclasses.replace(PREDICTIONS, columns=tuple(columns))


def read_predictions(
    path: str, labels: Sequence[str] = RELATIONSHIPS, modalities: Sequence[str] | None = DEFAULT_MODALITIES
) -> pd.DataFrame:
    """Read a predictions CSV into PREDICTIONS (truth and label in the familiar/stranger vocabulary).

    Labels and truth are case-insensitive; an empty label is a non-answer; `confidence` may
    be left out (no confidence for any row). `labels` is the file's vocabulary, its signal
    class first: the file's values are mapped onto familiar/stranger in that order.
    """
    labels = [label.strip().lower() for label in labels]
    if len(labels) != 2 or len(set(labels)) != 2 or "" in labels:
        raise InputError(f"--labels needs two distinct labels, signal class first (got {','.join(labels)})")
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
    if "confidence" not in frame.columns:
        frame["confidence"] = ""
    for column in ("truth", "label"):
        if column in frame.columns:
            frame[column] = frame[column].astype(str).str.strip().str.lower()
    frame = predictions_contract(labels, modalities).validate(frame, source=str(path))
    if frame.empty:
        raise InputError(f"{path}: no prediction rows (only a header)")
    to_relationship = {labels[0]: RELATIONSHIPS[0], labels[1]: RELATIONSHIPS[1], "": ""}
    frame["truth"] = frame["truth"].map(to_relationship)
    frame["label"] = frame["label"].map(to_relationship)
    return frame


def parse_replies(path: str, column: str) -> pd.DataFrame:
    """A table of raw model replies made elsewhere (`column` holds each reply's text, e.g. the JSON
    the workflow's prompts ask for) as a predictions table: each reply is read by the workflow's
    own parser (`models.parsing.parse_familiarity`), so a reply it cannot read is a non-answer
    (empty label), as in `infer_model`. Prints how many replies gave no label."""
    from omnisocial.models.parsing import parse_familiarity

    try:
        frame = read_csv_strings(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    if column not in frame.columns:
        raise InputError(f"{path}: no column {column!r} (--reply-column) among {', '.join(frame.columns)}")
    parsed = [parse_familiarity(text) for text in frame[column]]
    frame["label"] = [
        p["relationship_label"] if p["relationship_label"] in RELATIONSHIPS else "" for p in parsed
    ]
    frame["confidence"] = ["" if p["confidence"] is None else f"{p['confidence']:g}" for p in parsed]
    unread = sum(1 for p, label in zip(parsed, frame["label"], strict=True) if not label)
    print(
        f"omnisocial score: {len(frame)} replies read, {unread} gave no label (non-answers)", file=sys.stderr
    )
    return frame.drop(columns=[column])


def _run_score(args: argparse.Namespace) -> int:
    import tempfile

    from omnisocial.stats.sdt import score_predictions

    modalities = None if args.modalities == "any" else args.modalities.split(",")
    source = args.predictions
    if args.reply_column:
        with tempfile.TemporaryDirectory() as folder:
            source = f"{folder}/predictions.csv"
            parse_replies(args.predictions, args.reply_column).to_csv(source, index=False)
            predictions = read_predictions(source, args.labels.split(","), modalities)
    else:
        predictions = read_predictions(source, args.labels.split(","), modalities)
    METRICS.write(
        args.output, score_predictions(predictions, predictions_contract(RELATIONSHIPS, modalities))
    )
    return EXIT_OK


def add_cli(subparsers) -> None:
    """Register `omnisocial score PREDICTIONS.csv -o METRICS.csv`."""
    parser = subparsers.add_parser(
        "score",
        help="score a predictions table into a metrics table",
        description="Accuracy on answered items, coverage, Wilson 95% CI, exact binomial p vs 0.5, "
        "per-class recall, log-linear d' and c, one row per model x modality. The signal class "
        "(the first of --labels) is reported as familiar_recall, the other as stranger_recall.",
    )
    parser.add_argument(
        "predictions", help="PREDICTIONS CSV: model,modality,item_id,truth,label[,confidence in 0..1]"
    )
    parser.add_argument("-o", "--output", required=True, help="METRICS CSV to write")
    parser.add_argument(
        "--labels",
        default=",".join(RELATIONSHIPS),
        help="the two labels of truth and label, signal class first (default: %(default)s)",
    )
    parser.add_argument(
        "--modalities",
        default=",".join(DEFAULT_MODALITIES),
        help="allowed modality values, comma-separated, or 'any' (default: %(default)s)",
    )
    parser.add_argument(
        "--reply-column",
        default="",
        help="score raw model replies made elsewhere: the column holding each reply's text (e.g. "
        "reply), read by the workflow's parser into label and confidence (no label column needed)",
    )
    parser.set_defaults(func=_run_score)


# --- plumbing ---------------------------------------------------------------------------


def _add_commands(subparsers, modules: list[str]) -> None:
    for name in modules:
        try:
            module = sys.modules[__name__] if name == __name__ else importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name == name:  # not written yet: nothing to register
                continue
            print(f"omnisocial: warning: cannot load {name}: {error}", file=sys.stderr)
            continue
        except ImportError as error:
            print(f"omnisocial: warning: cannot load {name}: {error}", file=sys.stderr)
            continue
        module.add_cli(subparsers)


def _first_positional(argv: list[str]) -> str | None:
    return next((arg for arg in argv if not arg.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of `command` alone, or of every subcommand when it is None or unknown."""
    parser = argparse.ArgumentParser(
        prog="omnisocial", description="Benchmarks of social perception in omni-modal models and people."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    modules = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    _add_commands(subparsers, modules)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(_first_positional(argv)).parse_args(argv)
    try:
        return int(args.func(args))
    except (InputError, TableError) as error:
        message = " ".join(str(error).split())
        print(f"omnisocial {args.command}: error: {message}", file=sys.stderr)
        return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())

"""`omnisocial socialomni who|when|how`: score SocialOmni replies made elsewhere (no workflow, no network).

    omnisocial socialomni who ITEMS.json REPLIES -o METRICS.csv
    omnisocial socialomni when ANNOTATIONS.json REPLIES -o METRICS.csv
    omnisocial socialomni how ANNOTATIONS.json REPLIES --judge-replies JUDGED -o METRICS.csv

ITEMS.json / ANNOTATIONS.json: the released `data/level_1/dataset.json` and
`data/level_2/annotations.json` (read by `socialomni.importers`, with `--timestamps`).
REPLIES: CSV or JSONL (one object a line) with `id, reply` (how: `id, reply, candidate`:
the when reply and the how answer); optional `model`, `modality` columns. JUDGED: CSV or
JSONL with `id` and the raw judge text in `judge_reply` (or `reply` / `text`), optional
`judge`; or a JSON object {id: text}. `--parser released|strict` (`socialomni.parsing`).

who and when write the ACCURACY_BREAKDOWN table (fractions with counts; overall, per
consistency split, correct option, domain, subcategory / per gold answer; the parser and
how many replies the other parser reads differently). how writes `how.released_averages`
(each released average under its own name, coverage, large-gap rate; overall and per
domain) after scoring the when replies, so the when-gated averages are the released ones.
Registered through `omnisocial.cli.PLUGIN_MODULES` (this module's `add_cli`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from omnisocial.importing import TIMESTAMP_MODES, ImportErrorWithItem
from omnisocial.io import read_csv_strings, write_csv
from omnisocial.socialomni.contracts import ACCURACY_BREAKDOWN
from omnisocial.socialomni.parsing import PARSERS


def _input_error():
    from omnisocial.cli import InputError

    return InputError


def read_table(path: str, required: tuple[str, ...], what: str) -> pd.DataFrame:
    """A CSV or JSONL file as a frame of strings with the `required` columns (one-line errors)."""
    InputError = _input_error()
    file = Path(path)
    if not file.is_file():
        raise InputError(f"{path}: no such file")
    text = file.read_text(encoding="utf-8")
    if file.suffix.lower() in (".jsonl", ".json") or text.lstrip().startswith(("{", "[")):
        stripped = text.strip()
        if file.suffix.lower() == ".json" or stripped.startswith("["):
            try:
                data = json.loads(stripped)
            except json.JSONDecodeError as error:
                raise InputError(f"{path}: not valid JSON ({error.msg}, line {error.lineno})") from None
            if isinstance(data, dict):
                rows = [{"id": k, required[1]: v} for k, v in data.items()]
            elif isinstance(data, list):
                rows = data
            else:
                raise InputError(f"{path}: expected a list of objects or an object id -> text")
        else:
            rows = []
            for number, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as error:
                    raise InputError(f"{path}: line {number}: not valid JSON ({error.msg})") from None
        for number, row in enumerate(rows, 1):
            if not isinstance(row, dict):
                raise InputError(f"{path}: item {number}: expected an object")
        frame = pd.DataFrame(rows)
    else:
        frame = read_csv_strings(path)
    for number, row in enumerate(frame.to_dict("records"), 1):
        for column in required:
            if column not in frame.columns:
                raise InputError(f"{path}: {what} lack column {column}")
            value = row[column]
            if column == "id" and (value is None or (isinstance(value, float) and math.isnan(value))):
                raise InputError(f"{path}: row {number}: field id: missing")
    frame = frame.astype(object).where(frame.notna(), "")
    for column in frame.columns:
        frame[column] = frame[column].map(lambda v: v if isinstance(v, str) else str(v))
    if frame.empty:
        raise InputError(f"{path}: no {what}")
    return frame


def _replies(path: str, columns=("id", "reply")) -> pd.DataFrame:
    frame = read_table(path, columns, "replies")
    for column in ("model", "modality"):
        if column not in frame.columns:
            frame[column] = ""
    return frame.rename(columns={"id": "item_id"})


def _check_ids(replies: pd.DataFrame, items: pd.DataFrame, path: str) -> None:
    unknown = sorted(set(replies["item_id"]) - set(items["item_id"].astype(str)))
    if unknown:
        raise _input_error()(f"{path}: item {unknown[0]}: field id: not in the items file")
    duplicated = replies.duplicated(["model", "modality", "item_id"])
    if duplicated.any():
        raise _input_error()(
            f"{path}: item {replies[duplicated].iloc[0]['item_id']}: field id: several replies"
        )


def _load(reader, path: str, timestamps: str):
    from omnisocial.socialomni.importers import ReadOptions

    try:
        return reader(path, max_time_s=ReadOptions(timestamps=timestamps))
    except ImportErrorWithItem as error:
        raise _input_error()(str(error)) from None


def run_who(args) -> int:
    from omnisocial.socialomni.importers import load_who_items
    from omnisocial.socialomni.who import score_who

    items = _load(load_who_items, args.items, args.timestamps)
    replies = _replies(args.replies)
    _check_ids(replies, items, args.replies)
    scores = score_who(items, replies[["model", "modality", "item_id", "reply"]], args.parser)
    ACCURACY_BREAKDOWN.write(args.output, scores.breakdown)
    return 0


def _when_scores(items, replies, parser, how_replies=None):
    from omnisocial.socialomni.when import score_when_single

    return score_when_single(items, replies[["model", "modality", "item_id", "reply"]], parser, how_replies)


def run_when(args) -> int:
    from omnisocial.socialomni.importers import load_when_items

    items = _load(load_when_items, args.annotations, args.timestamps)
    replies = _replies(args.replies)
    _check_ids(replies, items, args.replies)
    ACCURACY_BREAKDOWN.write(args.output, _when_scores(items, replies, args.parser)[1])
    return 0


def run_how(args) -> int:
    from omnisocial.socialomni.how import parse_judge_score, released_averages
    from omnisocial.socialomni.importers import load_when_items

    items = _load(load_when_items, args.annotations, args.timestamps)
    replies = _replies(args.replies, ("id", "reply", "candidate"))
    _check_ids(replies, items, args.replies)
    how = {(r["model"], r["modality"], r["item_id"]): r["candidate"] for r in replies.to_dict("records")}
    scored, _ = _when_scores(items, replies, args.parser, how)
    judged = read_table(args.judge_replies, ("id", _judge_column(args.judge_replies)), "judge replies")
    text_column = _judge_column(args.judge_replies)
    if "judge" not in judged.columns:
        judged["judge"] = "judge"
    texts: dict[str, list[tuple[str, str]]] = {}
    for r in judged.to_dict("records"):
        texts.setdefault(r["id"], []).append((r["judge"], r[text_column]))
    unknown = sorted(set(texts) - set(items["item_id"].astype(str)))
    if unknown:
        raise _input_error()(f"{args.judge_replies}: item {unknown[0]}: field id: not in the annotations")
    lookup = {r["item_id"]: r for r in items.to_dict("records")}
    judges = sorted({judge for pairs in texts.values() for judge, _ in pairs}) or ["judge"]
    rows = []
    for r in scored.to_dict("records"):
        item = lookup[r["item_id"]]
        candidate = how.get((r["model"], r["modality"], r["item_id"]), "")
        by_judge = dict(texts.get(r["item_id"], []))
        for judge in judges:
            if r["item_id"] in texts:
                score = parse_judge_score(by_judge.get(judge, ""), candidate, args.parser).score
            else:
                score = 0.0 if not str(candidate).strip() else None
            rows.append(
                {
                    "model": r["model"],
                    "judge": judge,
                    "item_id": r["item_id"],
                    "gold": r["gold"],
                    "when_correct": bool(r["correct"]),
                    "has_reference": bool(str(item["how_reference"]).strip()),
                    "candidate": candidate,
                    "score": math.nan if score is None else score,
                    "domain": item["domain"],
                }
            )
    averages = released_averages(pd.DataFrame(rows))
    averages.insert(2, "parser", args.parser)
    write_csv(args.output, averages)
    return 0


def _judge_column(path: str) -> str:
    file = Path(path)
    if not file.is_file():
        raise _input_error()(f"{path}: no such file")
    head = file.read_text(encoding="utf-8")[:4000]
    for name in ("judge_reply", "text", "reply"):
        if name in head:
            return name
    return "judge_reply"


def add_cli(subparsers) -> None:
    """Register `omnisocial socialomni who|when|how` (the plugin hook of `omnisocial.cli`)."""
    parser = subparsers.add_parser(
        "socialomni",
        help="score SocialOmni who / when / how replies made elsewhere (no workflow, no network)",
    )
    tasks = parser.add_subparsers(dest="task", metavar="TASK")
    tasks.required = True

    def common(sub) -> None:
        sub.add_argument("-o", "--output", required=True, help="metrics CSV to write")
        sub.add_argument("--parser", choices=PARSERS, default="released", help="reply parser (%(default)s)")
        sub.add_argument(
            "--timestamps",
            choices=TIMESTAMP_MODES,
            default="excel",
            help="reading of three-field times: excel (00:17:00 = 17 s, as released) or clock",
        )

    who = tasks.add_parser("who", help="who accuracy from level-1 items and replies")
    who.add_argument("items", help="released data/level_1/dataset.json")
    who.add_argument("replies", help="CSV or JSONL with id, reply")
    common(who)
    who.set_defaults(func=run_who)
    when = tasks.add_parser("when", help="single-cut when accuracy from level-2 annotations and replies")
    when.add_argument("annotations", help="released data/level_2/annotations.json")
    when.add_argument("replies", help="CSV or JSONL with id, reply")
    common(when)
    when.set_defaults(func=run_when)
    how = tasks.add_parser("how", help="how averages from level-2 annotations, replies and raw judge texts")
    how.add_argument("annotations", help="released data/level_2/annotations.json")
    how.add_argument(
        "replies", help="CSV or JSONL with id, reply (the when reply), candidate (the how answer)"
    )
    how.add_argument("--judge-replies", required=True, help="CSV / JSONL with id, judge_reply[, judge]")
    common(how)
    how.set_defaults(func=run_how)

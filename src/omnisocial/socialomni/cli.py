"""`omnisocial socialomni who|when|how`: score SocialOmni replies made elsewhere (no workflow, no network).

    omnisocial socialomni who ITEMS.json REPLIES -o METRICS.csv
    omnisocial socialomni when ANNOTATIONS.json REPLIES -o METRICS.csv
    omnisocial socialomni how ANNOTATIONS.json REPLIES --judge-replies JUDGED -o METRICS.csv

ITEMS.json / ANNOTATIONS.json: the released `data/level_1/dataset.json` and
`data/level_2/annotations.json` (read by `socialomni.importers`, with `--timestamps`).
REPLIES: CSV, JSONL (one object a line) or JSON (a list of objects) with `id` (or
`item_id`) and `reply`; when and how also read `candidate`, the item's how answer (how
needs it). The released level-2 results file (`{"results": [{"video_id", "q1_response",
"q2_response", ...}]}`) is read as such (video_id = id, q1_response = reply, q2_response =
candidate). Optional `model`, `modality` columns; `--model` and `--modality` fill them where the
file leaves them out or empty. JUDGED: CSV, JSONL or JSON with `id`
(or `item_id`) and the raw judge text in the column `--judge-column` names (default
`judge_reply`), optional `judge`; or a JSON object {id: text}. `--parser
released|strict` (`socialomni.parsing`).

when, released: the released pipeline fails an item whose how answer comes back empty
(`level2_pipeline.run`: the Q2 call raises, the item is recorded with q1_correct False),
so with a `candidate` column a right when answer to a gold-YES item whose candidate is
empty counts wrong; strict leaves it alone. how applies the same rule.

who and when write the ACCURACY_BREAKDOWN table (fractions with counts; overall, per
consistency split, correct option, domain, subcategory / per gold answer; the parser and
how many replies the other parser reads differently). how writes `how.released_averages`
(each released average under its own name, coverage, large-gap rate; overall and per
domain) after scoring the when replies, so the when-gated averages are the released ones;
its `n_parser_differs` counts the items of the row whose when reply or judge reply the
other parser reads differently. Replies (and judge replies) for items the annotations do
not hold are left out, counted and named on stderr; a file with none left is an error.
A bad item never costs the whole file: with `--parser released` it is read as the released
pipelines read it (an answer written "B.", an unreadable timestamp, a duplicated id), with
`strict` it is left out; either way each reason's item count is printed on stderr and
written to METRICS.item_reasons.csv (`omnisocial.item_reasons`, docs/released-mode.md).
An empty reply or judge file is a one-line error. Each command ends with one summary line
on stderr.
Registered through `omnisocial.cli.COMMANDS` (this module's `add_cli`).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pandas as pd

from omnisocial.importing import TIMESTAMP_MODES, ImportErrorWithItem
from omnisocial.io import read_csv_strings, write_csv
from omnisocial.socialomni.contracts import ACCURACY_BREAKDOWN
from omnisocial.socialomni.parsing import PARSERS


def _input_error():
    from omnisocial.errors import InputError

    return InputError


ID_COLUMNS = ("id", "item_id")
# The released level-2 results rows (`level2_pipeline._evaluate_one`) under our column names.
RELEASED_LEVEL2 = {"id": "video_id", "reply": "q1_response", "candidate": "q2_response"}


def read_table(path: str, required: tuple[str, ...], what: str, hint: str = "") -> pd.DataFrame:
    """A CSV, JSONL or JSON file as a frame of strings with the `required` columns (one-line errors).

    `id` may be spelled `item_id`; a JSON object with a `results` list is the released
    level-2 results file (RELEASED_LEVEL2 names its columns); a JSON object of strings is
    {id: text} (the text in `required[1]`); JSONL in a `.json` file is read as JSONL."""
    InputError = _input_error()
    file = Path(path)
    if not file.is_file():
        raise InputError(f"{path}: no such file")
    text = file.read_text(encoding="utf-8")
    if not text.strip():
        raise InputError(f"{path}: empty file, no {what}")
    released = False
    suffix = file.suffix.lower()
    if suffix in (".jsonl", ".json") or text.lstrip().startswith(("{", "[")):
        stripped, data = text.strip(), None
        if suffix != ".jsonl":
            try:
                data = json.loads(stripped)
            except json.JSONDecodeError as error:
                if error.msg != "Extra data" or stripped.startswith("["):
                    raise InputError(f"{path}: not valid JSON ({error.msg}, line {error.lineno})") from None
                # "Extra data" after the first object: JSONL in a .json file
        if data is None:  # JSONL: one object a line
            rows = []
            for number, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as error:
                    raise InputError(f"{path}: line {number}: not valid JSON ({error.msg})") from None
        elif isinstance(data, dict) and isinstance(data.get("results"), list):
            rows, released = data["results"], True
        elif isinstance(data, dict) and all(isinstance(v, str) for v in data.values()):
            rows = [{"id": k, required[1]: v} for k, v in data.items()]
        elif isinstance(data, list):
            rows = data
        else:
            raise InputError(f"{path}: expected a list of objects, an object id -> text or released results")
        for number, row in enumerate(rows, 1):
            if not isinstance(row, dict):
                raise InputError(f"{path}: item {number}: expected an object")
        frame = pd.DataFrame(rows)
    else:
        frame = read_csv_strings(path)
    if frame.empty:
        raise InputError(f"{path}: no {what}")
    if released:
        frame = frame.rename(columns={v: k for k, v in RELEASED_LEVEL2.items() if k not in frame.columns})
    has = ", ".join(map(str, frame.columns))  # as the file spells them
    frame = _id_column(frame, path)
    for column in required:
        if column not in frame.columns:
            raise InputError(f"{path}: {what} lack column {column} (has {has}){hint}")
    for number, value in enumerate(frame["id"], 1):
        if value is None or (isinstance(value, float) and math.isnan(value)) or not str(value).strip():
            raise InputError(f"{path}: row {number}: field id: missing")
    frame = frame.astype(object).where(frame.notna(), "")
    for column in frame.columns:
        frame[column] = frame[column].map(lambda v: v if isinstance(v, str) else str(v))
    frame["id"] = frame["id"].str.strip()
    return frame


def _id_column(frame: pd.DataFrame, path: str) -> pd.DataFrame:
    """The item id under `id`, whichever of ID_COLUMNS the file uses (both: an error)."""
    present = [c for c in ID_COLUMNS if c in frame.columns]
    if len(present) > 1:
        raise _input_error()(f"{path}: both id and item_id columns; keep one")
    return frame.rename(columns={present[0]: "id"}) if present else frame


def _replies(args, columns=("id", "reply")) -> pd.DataFrame:
    """The replies file; `--model` / `--modality` fill the `model` / `modality` of the rows that
    leave them empty (a file without the column: every row), so the metrics name the model."""
    frame = read_table(args.replies, columns, "replies")
    for column in ("model", "modality"):
        given = getattr(args, column, "") or ""
        if column not in frame.columns:
            frame[column] = given
        elif given:
            frame[column] = frame[column].fillna("").astype(str).replace("", given)
    return frame.rename(columns={"id": "item_id"})


def _known(
    frame: pd.DataFrame, items: pd.DataFrame, path: str, what: str, key: str = "item_id", reasons=None
):
    """The rows of `frame` whose item the items file holds; the others are counted and named on
    stderr (the released scorers loop over their items and never see them); none left: an error."""
    known = frame[key].isin(set(items["item_id"].astype(str)))
    if not known.any():
        raise _input_error()(f"{path}: item {frame[key].iloc[0]}: field id: not in the items file")
    excluded = frame[key].isin(reasons.items("excluded")) & ~known if reasons is not None else known & False
    for item_id in frame.loc[excluded, key]:
        reasons.add("excluded", f"{what} for an excluded item", item_id, path)
    known_or_excluded = known | excluded
    if not known_or_excluded.all():
        unknown = frame.loc[~known_or_excluded, key]
        print(
            f"omnisocial socialomni: {path}: {len(unknown)} {what} for items not in the items file "
            f"left out (e.g. item {unknown.iloc[0]})",
            file=sys.stderr,
        )
        for item_id in unknown:
            if reasons is not None:
                reasons.add("excluded", f"{what} for an item not in the items file", item_id, path)
    return frame[known].reset_index(drop=True)


def _check_ids(replies: pd.DataFrame, items: pd.DataFrame, path: str, reasons) -> pd.DataFrame:
    """Replies of known items, one per (model, modality, item): a repeated one is left out, counted."""
    replies = _known(replies, items, path, "replies", reasons=reasons)
    duplicated = replies.duplicated(["model", "modality", "item_id"])
    for item_id in replies.loc[duplicated, "item_id"]:
        reasons.add("excluded", "several replies for one item (the first kept)", item_id, path)
    return replies[~duplicated].reset_index(drop=True)


def _load(reader, path: str, timestamps: str, parser: str, reasons):
    """(items, read options): bad items left out and counted per field in `reasons` (strict: and
    whatever the released pipelines read differently is read as released, counted too)."""
    from omnisocial.socialomni.importers import ReadOptions

    opts = ReadOptions(timestamps=timestamps, released=parser == "released")
    try:
        items, errors = reader(path, collect_errors=True, max_time_s=opts)
    except ImportErrorWithItem as error:
        raise _input_error()(str(error)) from None
    for error in errors.to_dict("records"):
        reasons.add("excluded", f"field {error['field']}", error["item_id"] or "?", error["message"])
    for note in opts.released_notes:
        reasons.add("scored as released", note["reason"], note["item_id"], note["message"])
    if items.empty:
        first = errors.iloc[0] if len(errors) else None
        detail = (
            f" (e.g. item {first['item_id']}: field {first['field']}: {first['message']})"
            if first is not None
            else ""
        )
        raise _input_error()(f"{path}: no item could be read{detail}")
    return items, opts


def _reasons(task: str, parser: str):
    from omnisocial.item_reasons import ItemReasons

    return ItemReasons(f"socialomni {task}", parser)


def _summary(task: str, parser: str, n: int, differ: int, output: str, extra: str = "") -> None:
    print(
        f"socialomni {task}: {n} replies scored, parser {parser}; {differ} read differently by the "
        f"released and strict parsers{extra}; wrote {output}",
        file=sys.stderr,
    )


def run_who(args) -> int:
    from omnisocial.socialomni.importers import load_who_items
    from omnisocial.socialomni.who import score_who

    reasons = _reasons("who", args.parser)
    items, opts = _load(load_who_items, args.items, args.timestamps, args.parser, reasons)
    replies = _check_ids(_replies(args), items, args.replies, reasons)
    columns = ["model", "modality", "item_id", "reply"]
    scores = score_who(items, replies[columns], args.parser, opts.raw_answers, opts.duplicate_copies)
    ACCURACY_BREAKDOWN.write(args.output, scores.breakdown)
    reasons.report(args.output)
    overall = scores.breakdown[scores.breakdown["breakdown"] == "overall"]
    _summary("who", args.parser, len(replies), int(overall["n_parser_differs"].sum()), args.output)
    return 0


def _how_answers(replies: pd.DataFrame) -> dict | None:
    """{(model, modality, item_id): how answer} from the `candidate` column; None without one."""
    if "candidate" not in replies.columns:
        return None
    keys = zip(replies["model"], replies["modality"], replies["item_id"], strict=True)
    return dict(zip(keys, replies["candidate"], strict=True))


def _when_scores(items, replies, parser, how_replies=None, raw_answers=None):
    from omnisocial.socialomni.when import score_when_single

    columns = ["model", "modality", "item_id", "reply"]
    return score_when_single(items, replies[columns], parser, how_replies, raw_answers)


def _failed_for_empty_how(scored: pd.DataFrame, without_how: pd.DataFrame) -> int:
    """Right when answers counted wrong because the how answer was empty (`without_how`: the
    same replies scored without the how answers)."""
    return int((without_how["correct"].astype(bool) & ~scored["correct"].astype(bool)).sum())


def run_when(args) -> int:
    from omnisocial.socialomni.importers import load_when_items

    reasons = _reasons("when", args.parser)
    items, opts = _load(load_when_items, args.annotations, args.timestamps, args.parser, reasons)
    replies = _check_ids(_replies(args), items, args.replies, reasons)
    scored, breakdown = _when_scores(items, replies, args.parser, _how_answers(replies), opts.raw_answers)
    ACCURACY_BREAKDOWN.write(args.output, breakdown)
    reasons.report(args.output)
    overall = breakdown[breakdown["breakdown"] == "overall"]
    failed = _failed_for_empty_how(
        scored, _when_scores(items, replies, args.parser, None, opts.raw_answers)[0]
    )
    extra = f"; {failed} right answers counted wrong for an empty how answer, as released" if failed else ""
    _summary("when", args.parser, len(replies), int(overall["n_parser_differs"].sum()), args.output, extra)
    return 0


def run_how(args) -> int:
    from omnisocial.socialomni.how import parse_judge_score, released_averages
    from omnisocial.socialomni.importers import load_when_items

    reasons = _reasons("how", args.parser)
    items, opts = _load(load_when_items, args.annotations, args.timestamps, args.parser, reasons)
    replies = _check_ids(_replies(args, ("id", "reply", "candidate")), items, args.replies, reasons)
    how = _how_answers(replies)
    raw = opts.raw_answers
    scored, _ = _when_scores(items, replies, args.parser, how, raw)
    other = "strict" if args.parser == "released" else "released"
    other_scored, _ = _when_scores(items, replies, other, how, raw)
    keys = zip(scored["model"], scored["modality"], scored["item_id"], strict=True)
    when_differs = dict(zip(keys, scored["correct"] != other_scored["correct"], strict=True))
    column = args.judge_column
    hint = "; --judge-column names the column of the judge's text"
    judged = read_table(args.judge_replies, ("id", column), "judge replies", hint)
    if "judge" not in judged.columns:
        judged["judge"] = "judge"
    judged = _known(judged, items, args.judge_replies, "judge replies", key="id", reasons=reasons)
    duplicated = judged.duplicated(["id", "judge"])
    for item_id in judged.loc[duplicated, "id"]:
        reasons.add("excluded", "several judge replies for one item and judge (the first kept)", item_id, "")
    judged = judged[~duplicated]
    texts: dict[str, list[tuple[str, str]]] = {}
    for r in judged.to_dict("records"):
        texts.setdefault(r["id"], []).append((r["judge"], r[column]))
    lookup = {r["item_id"]: r for r in items.to_dict("records")}
    judges = sorted({judge for pairs in texts.values() for judge, _ in pairs}) or ["judge"]
    rows = []
    from omnisocial.socialomni.when import released_asks_how

    released = args.parser == "released"
    for r in scored.to_dict("records"):
        item = lookup[r["item_id"]]
        key = (r["model"], r["modality"], r["item_id"])
        candidate = how.get(key, "")
        gold = r["gold"]
        if released:  # gated on the letter A; the how question is asked only after a right when answer
            asked = released_asks_how(item, raw.get(r["item_id"]))
            gold = "YES" if asked else "NO"
            if str(candidate).strip() and not (asked and r["correct"]):
                reasons.add(
                    "scored as released",
                    "how answer to an item the released pipeline never asks it of (0 when re-scored)",
                    r["item_id"],
                    f"gold {raw.get(r['item_id'], item['correct_answer'])!r}, when right: {r['correct']}",
                )
                candidate = ""
        by_judge = dict(texts.get(r["item_id"], []))
        for judge in judges:
            if r["item_id"] in texts:
                text = by_judge.get(judge, "")
                score = parse_judge_score(text, candidate, args.parser).score
                differs = score != parse_judge_score(text, candidate, other).score
            else:
                score = 0.0 if not str(candidate).strip() else None
                differs = False
            rows.append(
                {
                    "model": r["model"],
                    "judge": judge,
                    "item_id": r["item_id"],
                    "gold": gold,
                    "when_correct": bool(r["correct"]),
                    "has_reference": bool(str(item["how_reference"]).strip()),
                    "candidate": candidate,
                    "score": math.nan if score is None else score,
                    "domain": item["domain"],
                    "parser_differs": bool(differs or when_differs[key]),
                }
            )
    averages = released_averages(pd.DataFrame(rows), args.parser)
    averages.insert(2, "parser", args.parser)
    write_csv(args.output, averages)
    reasons.report(args.output)
    overall = averages[averages["breakdown"] == "overall"]
    _summary("how", args.parser, len(replies), int(overall["n_parser_differs"].sum()), args.output)
    return 0


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
        sub.add_argument(
            "--model", default="", help="the model that made the replies (rows without a model column value)"
        )
        sub.add_argument(
            "--modality", default="", help="the input the model saw, e.g. video (rows without a modality)"
        )

    who = tasks.add_parser("who", help="who accuracy from level-1 items and replies")
    who.add_argument("items", help="released data/level_1/dataset.json")
    who.add_argument("replies", help="CSV, JSONL or JSON with id (or item_id), reply")
    common(who)
    who.set_defaults(func=run_who)
    when = tasks.add_parser("when", help="single-cut when accuracy from level-2 annotations and replies")
    when.add_argument("annotations", help="released data/level_2/annotations.json")
    when.add_argument(
        "replies", help="CSV, JSONL or JSON with id, reply[, candidate: the how answer]; or released results"
    )
    common(when)
    when.set_defaults(func=run_when)
    how = tasks.add_parser("how", help="how averages from level-2 annotations, replies and raw judge texts")
    how.add_argument("annotations", help="released data/level_2/annotations.json")
    how.add_argument(
        "replies", help="CSV or JSONL with id, reply (the when reply), candidate (the how answer)"
    )
    how.add_argument(
        "--judge-replies", required=True, help="CSV / JSONL / JSON with id, the judge text[, judge]"
    )
    how.add_argument(
        "--judge-column", default="judge_reply", help="the column holding the judge's raw text (%(default)s)"
    )
    common(how)
    how.set_defaults(func=run_how)

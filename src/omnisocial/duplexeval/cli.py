"""`omnisocial duplexeval rtd|pr`: re-score streaming judge replies made elsewhere (no workflow, no API).

    omnisocial duplexeval rtd ITEMS RESPONSES_DIR --judge-replies JUDGED -o METRICS.csv
    omnisocial duplexeval pr  ITEMS RESPONSES_DIR --judge-replies JUDGED -o METRICS.csv

ITEMS: the Omni-DuplexEval items (JSON, CSV, parquet or a Hugging Face `datasets` folder;
`duplexeval.importers.load_stream_items`). RESPONSES_DIR: one model's responses in the
released per-item layout (`{dir}/{split}/{id}.json`, `{dir}/{id}.json`). JUDGED: the raw
judge replies keyed by item (`item_id` or `id`) and sentence / event index, CSV, JSONL or
JSON (`duplexeval.judged`). METRICS: per split and 'all', counts and fractions
(RTD_REPLY_METRICS / PR_REPLY_METRICS; rtd with the first relevant time). Items whose
response file is missing or malformed are left out with one line each on stderr, as the
released batch scripts skip them. Judge replies no judgement reads (an unknown item, kind
or index; `judged.unmatched_replies`) are counted on stderr and listed in `--notes`.
`--parser released` also reads reminder times as the released scorer does: one it cannot
read ("0:15") is dropped, and an item left without reminders is judged once on the whole
response, each noted in `--notes`; `strict` reads "0:15" as 15 s. A bad item or response
file never costs the whole run: released mode scores it as the released scorers do, strict
leaves it out; each reason's item count goes to stderr and METRICS.item_reasons.csv
(docs/released-mode.md). The rtd judge windows use the clip's probed length when the clip
is readable, as released. An empty judge file is a one-line error. Only argparse is
imported here; the work is imported when the command runs, so `omnisocial score` stays
light.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _note_reason(message: str) -> str:
    """The generic tail of an import note ("text is null: sentence without text skipped, as
    released" -> "sentence without text skipped, as released"), the reason its items are
    counted under."""
    return message.rsplit(": ", 1)[-1]


def _run(args: argparse.Namespace) -> int:
    from omnisocial.duplexeval import judged
    from omnisocial.duplexeval.contracts import RTD_SPLITS, STREAM_IMPORT_NOTES, STREAM_RESPONSES
    from omnisocial.duplexeval.importers import clip_durations, load_stream_items
    from omnisocial.errors import EXIT_OK, InputError
    from omnisocial.importing import ImportErrorWithItem, concat_frames
    from omnisocial.io import write_csv
    from omnisocial.item_reasons import ItemReasons

    output = Path(args.output)
    media_dir = Path(args.media_dir) if args.media_dir else output.parent / "media"
    released = args.parser == "released"
    reasons = ItemReasons(f"duplexeval {args.task}", args.parser)
    item_notes: list[dict] = []
    try:
        items, errors = load_stream_items(
            args.items,
            default_split=args.split,
            media_dir=media_dir,
            reminders="released" if released else "strict",
            notes=item_notes,
            collect_errors=True,
        )
        for error in errors.to_dict("records"):
            reasons.add("excluded", f"field {error['field']}", error["item_id"] or "?", error["message"])
        is_rtd = items["split"].isin(RTD_SPLITS)
        items = items[is_rtd] if args.task == "rtd" else items[~is_rtd]
        if items.empty:
            raise InputError(f"{args.items}: no {args.task} items")
        responses_dir = Path(args.responses_dir)
        if not responses_dir.is_dir():
            raise InputError(f"{responses_dir}: not a folder of response files")
        kind = "temporal" if args.task == "rtd" else "reminder"
        replies = judged.read_judge_replies(args.judge_replies, kind)
        model = args.model or responses_dir.resolve().name
        frames, notes, left_out = _read_responses(items, responses_dir, model, released, reasons)
    except ImportErrorWithItem as error:
        raise InputError(str(error)) from None
    kept_ids = set(items["item_id"])
    for note in item_notes + notes:
        if note["item_id"] in kept_ids:
            reasons.add("scored as released", _note_reason(note["message"]), note["item_id"], note["message"])
    responses = concat_frames(frames, STREAM_RESPONSES)
    keep = [key not in set(left_out) for key in zip(items["split"], items["item_id"], strict=True)]
    scored_items = items[keep].copy()
    if args.task == "rtd" and len(scored_items):
        root = Path(args.items) if Path(args.items).is_dir() else Path(args.items).parent

        def note(item_id: str, reason: str, message: str = "") -> None:
            reasons.add("scored as released", reason, item_id, message)

        scored_items["video_duration"] = clip_durations(scored_items, root, note)
    if not len(responses):  # every file empty: still one row per item, for the model named
        responses = STREAM_RESPONSES.empty()
    score = judged.score_rtd_replies if args.task == "rtd" else judged.score_pr_replies
    per_item = score(responses, scored_items, replies, parser=args.parser, models=[model])
    if args.task == "pr" and released:
        _note_whole_response_scores(per_item, reasons)
    unmatched = judged.unmatched_replies(replies, items, responses, args.task, model, left_out)
    if unmatched:
        first = unmatched[0]
        print(
            f"omnisocial duplexeval: {args.judge_replies}: {len(unmatched)} judge replies not scored "
            f"(e.g. item {first['item_id']}: {first['message']}); listed in --notes",
            file=sys.stderr,
        )
    metrics = judged.split_metrics(per_item, args.task)
    write_csv(output, metrics)
    if args.per_item:
        write_csv(args.per_item, per_item)
    if args.notes:
        reply_notes = [{"source": str(args.judge_replies), **note} for note in unmatched]
        STREAM_IMPORT_NOTES.write(args.notes, _notes_frame(item_notes + notes + reply_notes))
    reasons.report(output)
    total = metrics[metrics["split"] == "all"]
    differ = int(total["n_parse_differ"].sum()) if len(total) else 0
    dropped = sum(1 for note in item_notes if "reminder dropped" in note["message"])
    print(
        f"duplexeval {args.task}: {len(per_item)} items scored ({len(left_out)} left out), "
        f"parser {args.parser}; "
        f"{differ} replies read differently by the released and strict parsers; "
        f"{len(notes)} response sentences skipped or put at 0 s as released; "
        + (f"{dropped} reminder times the released scorer cannot read dropped; " if dropped else "")
        + f"{len(unmatched)} judge replies not scored; wrote {output}",
        file=sys.stderr,
    )
    return EXIT_OK


def _read_responses(items, responses_dir: Path, model: str, released: bool, reasons):
    """(response frames, the notes of sentences read as released, the (split, item_id) left
    out): each item's response file; a missing or unreadable one is left out with its reason."""
    from omnisocial.duplexeval.importers import read_item_response
    from omnisocial.importing import ImportErrorWithItem

    notes, frames, left_out = [], [], []
    for split, item_id in items[["split", "item_id"]].itertuples(index=False):
        try:
            frames.append(read_item_response(responses_dir, split, item_id, model, notes, released))
        except ImportErrorWithItem as error:
            left_out.append((split, item_id))
            reasons.add("excluded", f"response file field {error.field}", item_id, error.message)
            print(f"omnisocial duplexeval: left out: {error}", file=sys.stderr)
    return frames, notes, left_out


def _note_whole_response_scores(per_item, reasons) -> None:
    """Released pr: an item whose sample score is the whole-response judgement's success_score
    (not 0 or 1) is noted as scored as released."""
    odd = per_item[per_item["sample_score"].notna() & ~per_item["sample_score"].isin([0, 1])]
    for item_id, value in zip(odd["item_id"], odd["sample_score"], strict=True):
        reasons.add(
            "scored as released",
            "whole-response judgement's success_score taken as the sample score, as released",
            item_id,
            f"sample score {value:g}",
        )


def _notes_frame(notes: list):
    import pandas as pd

    from omnisocial.duplexeval.contracts import STREAM_IMPORT_NOTES

    return pd.DataFrame(notes, columns=STREAM_IMPORT_NOTES.names)


def add_cli(subparsers) -> None:
    """Add `omnisocial duplexeval rtd|pr` to the top-level subparsers."""
    parser = subparsers.add_parser(
        "duplexeval",
        help="re-score Omni-DuplexEval streaming judge replies (no API)",
        description="Score released-format streaming responses from raw judge replies made elsewhere.",
    )
    tasks = parser.add_subparsers(dest="task", metavar="TASK")
    tasks.required = True
    for task, what in (("rtd", "real-time description"), ("pr", "proactive reminders")):
        sub = tasks.add_parser(task, help=f"{what}: per-split metrics from judge replies")
        sub.add_argument("items", help="items: JSON, CSV, parquet or a Hugging Face datasets folder")
        sub.add_argument("responses_dir", help="one model's responses: {dir}/{split}/{id}.json")
        sub.add_argument(
            "--judge-replies",
            required=True,
            help="raw judge replies, CSV, JSONL or JSON: item_id (or id), index, reply[, split, kind]",
        )
        sub.add_argument("-o", "--output", required=True, help="metrics CSV (per split and 'all')")
        sub.add_argument(
            "--parser", choices=("released", "strict"), default="released", help="default: %(default)s"
        )
        sub.add_argument("--split", default=None, help="split of items that have no split field")
        sub.add_argument("--model", default=None, help="model name (default: the responses folder's name)")
        sub.add_argument(
            "--media-dir", default=None, help="where media given as bytes go (default: OUTPUT's folder/media)"
        )
        sub.add_argument("--per-item", default=None, help="also write the per-item scores here")
        sub.add_argument(
            "--notes",
            default=None,
            help="also write the notes: sentences skipped or at 0 s, reminders dropped, replies not scored",
        )
        sub.set_defaults(func=_run, command="duplexeval")

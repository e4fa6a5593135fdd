"""Rule social_import: who / when / how and streaming items (and any model responses) as tables."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.duplexeval.contracts import RTD_SPLITS, STREAM_EVENTS, STREAM_ITEMS, STREAM_RESPONSES
from omnisocial.duplexeval.importers import clip_durations, import_duplexeval, import_stream_responses
from omnisocial.importing import IMPORT_ERRORS
from omnisocial.item_reasons import ItemReasons
from omnisocial.socialomni.contracts import (
    HOW_REFERENCES,
    PANELS,
    TIMESTAMP_READINGS,
    TURNS,
    WHEN_ITEMS,
    WHEN_STREAM_ITEMS,
    WHO_COPIES,
    WHO_ITEMS,
    WRITTEN_ANSWERS,
)
from omnisocial.socialomni.importers import import_socialomni
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
social = import_socialomni(
    params.socialomni_root,
    params.skip_bad_items,
    params.max_time_s,
    timestamps=params.timestamps,
    consistency_map=dict(params.consistency_map),
    released=params.parser == "released",
)
for note in social["released_notes"].itertuples():  # read as the released pipelines read it
    log.warning("as released: item %s: %s (%s)", note.item_id, note.reason, note.message)
notes = []
# the released reminder scorer drops a reminder time it cannot read ("0:15"); strict reads 15 s
duplex = import_duplexeval(
    params.duplexeval_root,
    params.duplexeval_items,
    params.skip_bad_items,
    default_split=params.duplexeval_split,
    media_dir=params.duplexeval_media,
    reminders="released" if params.parser == "released" else "strict",
    notes=notes,
)
if params.duplexeval_root and len(duplex["stream_items"]):
    # the description judge windows end at the clip's probed length, as the released scorer's do
    stream_items = duplex["stream_items"]
    rtd = stream_items["split"].isin(RTD_SPLITS)

    def length_note(item_id, reason, message=""):
        log.warning("clip length: item %s: %s %s", item_id, reason, message)

    lengths = clip_durations(stream_items[rtd], Path(params.duplexeval_root), length_note)
    stream_items.loc[rtd, "video_duration"] = pd.Series(lengths, index=stream_items.index[rtd], dtype=float)
responses, response_errors = import_stream_responses(
    params.responses_root,
    duplex["stream_items"],
    params.skip_bad_items,
    notes=notes,
    released=params.parser == "released",
)
for note in notes:  # what the released scorers do silently: reminders dropped, sentences skipped or at 0 s
    log.warning(
        "as released: %s item %s field %s: %s",
        note["source"],
        note["item_id"],
        note["field"],
        note["message"],
    )
errors = [frame for frame in (social["errors"], duplex["errors"], response_errors) if len(frame)]
for frame in errors:
    for row in frame.itertuples():
        log.warning("left out: %s item %s field %s: %s", row.source, row.item_id, row.field, row.message)
# how many items each reason touched, as the scoring commands print it (docs/released-mode.md)
reasons = ItemReasons("social import", params.parser)
for note in social["released_notes"].itertuples():
    reasons.add("scored as released", note.reason, note.item_id, note.message)
for note in notes:
    reasons.add("scored as released", note["message"].rsplit(": ", 1)[-1], note["item_id"], note["message"])
for frame in errors:
    for row in frame.itertuples():
        reasons.add("excluded", f"field {row.field}", row.item_id or "?", row.message)
for line in reasons.lines():
    log.info(line)
out = snakemake.output
WHO_ITEMS.write(out.who_items, social["who_items"])
WHO_COPIES.write(out.who_copies, social["who_copies"])  # released: a duplicated id's earlier copies
WRITTEN_ANSWERS.write(out.written_answers, social["written_answers"])
WHEN_ITEMS.write(out.when_items, social["when_items"])
HOW_REFERENCES.write(out.how_references, social["how_references"])
WHEN_STREAM_ITEMS.write(out.when_stream_items, social["when_stream_items"])
TURNS.write(out.turns, social["turns"])
PANELS.write(out.panels, social["panels"])
STREAM_ITEMS.write(out.stream_items, duplex["stream_items"])
STREAM_EVENTS.write(out.stream_events, duplex["stream_events"])
STREAM_RESPONSES.write(out.stream_responses, responses)
TIMESTAMP_READINGS.write(out.timestamp_readings, social["timestamp_readings"])
for row in social["timestamp_readings"].itertuples():
    log.info("%s item %s %s: %s", row.source, row.item_id, row.field, row.note)
IMPORT_ERRORS.write(out.errors, pd.concat(errors, ignore_index=True) if errors else IMPORT_ERRORS.empty())
log.info(
    "%d who, %d when, %d streaming-when, %d streaming items; %d imported response sentences "
    "(%d reminders dropped, sentences skipped or put at 0 s as released); %d errors",
    len(social["who_items"]),
    len(social["when_items"]),
    len(social["when_stream_items"]),
    len(duplex["stream_items"]),
    len(responses),
    len(notes),
    sum(len(frame) for frame in errors),
)

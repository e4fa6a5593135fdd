"""Table contracts of the Omni-DuplexEval-style benchmark (streaming): items, responses, scores.

Splits: real-time description (`RTD_SPLITS`) and proactive reminders (`PR_SPLITS`).
`STREAM_ITEMS` and `STREAM_RESPONSES` come from the released files through
`duplexeval.importers`, `STREAM_EVENTS` from the demo's `truth/events.csv`.
"""

from __future__ import annotations

from omnisocial.tables import Column, Contract

RTD_SPLITS = (
    "RTD_world_knowledge",
    "RTD_counting",
    "RTD_fine_grained_movement",
    "RTD_interaction_relation",
    "RTD_OCR",
    "RTD_Omni",
)


PR_SPLITS = ("PR_correction", "PR_event_reminder", "PR_post_event_reminder")


STREAM_SPLITS = RTD_SPLITS + PR_SPLITS


STREAM_ITEMS = Contract(
    "stream_items",
    (
        Column("split", allowed=STREAM_SPLITS),
        Column("item_id"),
        Column("task", allowed=("RTD", "PR")),
        Column("question_text"),
        Column("answer1"),
        Column("answer2"),
        Column("reminder1", "float", nullable=True, doc="event time (s) of a reminder, empty when none"),
        Column("reminder2", "float", nullable=True),
        Column("video_type"),
        Column("video_duration", "float", nullable=True),
        Column("video"),
        Column("question_audio"),
    ),
    key=("split", "item_id"),
)


STREAM_RESPONSES = Contract(
    "stream_responses",
    (
        Column("model"),
        Column("split", allowed=STREAM_SPLITS),
        Column("item_id"),
        Column("sentence_index", "int", doc="0-based order in the response file (blank texts skipped)"),
        Column("text"),
        Column("start", "float"),
        Column("end", "float"),
        Column("is_point", "bool", doc="time given as current_time/time: start = end = that time"),
    ),
    key=("model", "split", "item_id", "sentence_index"),
)


STREAM_EVENTS = Contract(
    "stream_events",
    (
        Column("split", allowed=STREAM_SPLITS),
        Column("item_id"),
        Column("event_index", "int"),
        Column("t", "float"),
        Column("kind"),
        Column("text", doc="ground-truth caption of the change"),
        Column("reminder", "int", doc="1 or 2 when the item's reminder1/2 is this event, else 0"),
    ),
    key=("split", "item_id", "event_index"),
)


DETECTIONS = Contract(
    "stream_detections",
    (Column("split", allowed=STREAM_SPLITS), Column("item_id"), Column("t", "float")),
    key=("split", "item_id", "t"),
)


RTD_SENTENCES = Contract(
    "rtd_sentences",
    (
        Column("model"),
        Column("split", allowed=STREAM_SPLITS),
        Column("item_id"),
        Column("sentence_index", "int"),
        Column("text"),
        Column("start", "float"),
        Column("end", "float"),
        Column("window_start", "float", nullable=True),
        Column("window_end", "float", nullable=True),
        Column("judged_ok", "bool", doc="the window lies inside the video"),
        Column("n_frames", "int", doc="frames a frame-seeing judge would get (2 fps)"),
        Column("event_index", "int", nullable=True, doc="the event that gave the temporal score"),
        Column("temporal_score", "float", nullable=True, doc="0-3"),
        Column("is_relevant", "int"),
        Column("relevance", "float", nullable=True, doc="best similarity to any caption / answer"),
    ),
    key=("model", "split", "item_id", "sentence_index"),
)


RTD_SCORES = Contract(
    "rtd_scores",
    (
        Column("model"),
        Column("split", allowed=STREAM_SPLITS),
        Column("item_id"),
        Column("n_sentences", "int"),
        Column("n_judged", "int"),
        Column("n_relevant", "int"),
        Column("temporal_score", "float"),
        Column("temporal_100", "float"),
        Column("irrelevant_duration_ratio", "float"),
        Column("first_relevant_time", "float", nullable=True),
        Column("first_event_time", "float", nullable=True),
        Column("first_relevant_offset", "float", nullable=True, doc="first relevant time - first event"),
        Column("content_score", "float", nullable=True, doc="0-3"),
        Column("content_100", "float", nullable=True),
    ),
    key=("model", "split", "item_id"),
)


PR_EVENT_SCORES = Contract(
    "pr_event_scores",
    (
        Column("model"),
        Column("split", allowed=STREAM_SPLITS),
        Column("item_id"),
        Column("event_index", "int"),
        Column("time", "float", nullable=True, doc="event time; empty = the whole response was judged"),
        Column("text", doc="the response text inside [t, t + 10]"),
        Column("judged", "bool"),
        Column("score", "int"),
    ),
    key=("model", "split", "item_id", "event_index"),
)


PR_SCORES = Contract(
    "pr_scores",
    (
        Column("model"),
        Column("split", allowed=STREAM_SPLITS),
        Column("item_id"),
        Column("n_events", "int"),
        Column("n_passed", "int"),
        Column("sample_score", "int", doc="1 only if every event passed"),
    ),
    key=("model", "split", "item_id"),
)


STREAM_IMPORT_NOTES = Contract(
    "stream_import_notes",
    (
        Column("source", doc="the response file"),
        Column("item_id"),
        Column("field"),
        Column("message", doc="what the released scorers do silently: a sentence skipped or put at 0 s"),
    ),
)


JUDGE_REPLIES = Contract(
    "judge_replies",
    (
        Column("split", doc="empty: the reply serves the item in any split"),
        Column("item_id"),
        Column("kind", allowed=("temporal", "content", "reminder")),
        Column("index", "int", nullable=True, doc="sentence_index (temporal) or event index (reminder)"),
        Column("reply", doc="the judge's raw reply text"),
    ),
    key=("split", "item_id", "kind", "index"),
)


_REPLY_COUNTS = (
    Column(
        "n_missing_replies", "int", doc="judgements the replies file lacks (counted as released API failures)"
    ),
    Column("n_unparsed", "int", doc="replies from which no score could be read"),
    Column("n_parse_differ", "int", doc="replies the released and strict parsers read differently"),
    Column("n_judge_failed", "int", doc="judge calls that failed (an LLM judge run): counted, never a score"),
)


RTD_REPLY_ITEMS = Contract(
    "rtd_reply_items",
    (
        Column("model"),
        Column("split", allowed=STREAM_SPLITS),
        Column("item_id"),
        Column("n_sentences", "int"),
        Column("n_judged", "int"),
        Column("n_relevant", "int"),
        Column("n_no_window", "int", doc="sentences whose judge window passes the video's end"),
        *_REPLY_COUNTS,
        Column("temporal_score", "float", doc="0-3, mean over judged relevant sentences (0 when none)"),
        Column("irrelevant_duration_ratio", "float"),
        Column(
            "first_relevant_time",
            "float",
            nullable=True,
            doc="s, the earliest start of a judged relevant sentence; empty without one",
        ),
        Column("content_score", "float", nullable=True, doc="0-3; empty without a (parseable) reply"),
    ),
    key=("model", "split", "item_id"),
)


RTD_REPLY_METRICS = Contract(
    "rtd_reply_metrics",
    (
        Column("model"),
        Column("split"),
        Column("n_items", "int"),
        *RTD_REPLY_ITEMS.columns[3:7],
        *_REPLY_COUNTS,
        Column("temporal_score", "float", nullable=True, doc="mean of the items' 0-3 scores"),
        Column("temporal_fraction", "float", nullable=True, doc="temporal_score / 3"),
        Column("irrelevant_duration_ratio", "float", nullable=True),
        Column("n_first_relevant", "int", doc="items with a judged relevant sentence"),
        Column("first_relevant_time", "float", nullable=True, doc="s, mean over those items"),
        Column("n_content", "int", doc="items with a content score"),
        Column("content_score", "float", nullable=True),
        Column("content_fraction", "float", nullable=True, doc="content_score / 3"),
    ),
    key=("model", "split"),
)


PR_REPLY_ITEMS = Contract(
    "pr_reply_items",
    (
        Column("model"),
        Column("split", allowed=STREAM_SPLITS),
        Column("item_id"),
        Column("n_events", "int", doc="reminder times (0: the whole response is judged once)"),
        Column("n_judgements", "int"),
        Column("n_scored", "int"),
        Column("n_passed", "int"),
        Column("n_no_text", "int", doc="events with no response text in [t, t + 10]: 0 without a judge"),
        *_REPLY_COUNTS,
        Column(
            "sample_score",
            "float",
            nullable=True,
            doc="1 only if every judgement passed; empty if one has none (released: an item judged "
            "once on its whole response scores that judgement's success_score, a 2 as 2)",
        ),
    ),
    key=("model", "split", "item_id"),
)


PR_REPLY_METRICS = Contract(
    "pr_reply_metrics",
    (
        Column("model"),
        Column("split"),
        Column("n_items", "int"),
        *PR_REPLY_ITEMS.columns[3:8],
        *_REPLY_COUNTS,
        Column("n_samples_scored", "int"),
        Column("n_samples_passed", "int"),
        Column("success_fraction", "float", nullable=True, doc="samples passed / samples scored"),
        Column("event_success_fraction", "float", nullable=True, doc="judgements passed / scored"),
    ),
    key=("model", "split"),
)

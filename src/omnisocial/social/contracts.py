"""Table contracts of the who / when / how and streaming benchmarks (benchmarks.md 2, 3).

Written in the style of `omnisocial.tables`: one contract per table, validated at every
boundary. Times are seconds from the start of the item's video.
"""

from __future__ import annotations

from omnisocial.tables import Column, Contract

LETTERS = ("A", "B", "C", "D")
CONSISTENCY = ("consistent", "inconsistent", "unknown")
REVIEW_STATUS = ("released", "unreviewed", "accepted", "rejected")
OPTION_KINDS = (
    "",
    "target",
    "right_speaker_wrong_content",
    "wrong_speaker_right_content",
    "wrong_speaker_wrong_content",
)
YES_NO = ("YES", "NO")

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

# --- items ---------------------------------------------------------------------------

WHO_ITEMS = Contract(
    "who_items",
    (
        Column("item_id"),
        Column("source", doc="'socialomni' (released level 1) or 'built' (build_who_items)"),
        Column("video_path"),
        Column("question"),
        Column("query_start", "float", doc="start of the asked interval (= query_time for a point)"),
        Column("query_time", "float", doc="t: end of the asked interval, where the released code cuts"),
        Column("option_a", doc="option text without its 'A. ' prefix: '<speaker> said <utterance>'"),
        Column("option_b"),
        Column("option_c"),
        Column("option_d"),
        Column("correct_answer", allowed=LETTERS),
        Column("speaker", doc="true speaker: the '<speaker>' part of the correct option"),
        Column("consistency", allowed=CONSISTENCY, doc="audio-visual consistency of the item"),
        Column("domain", doc="metadata domain, empty when absent"),
        Column("subcategory", doc="metadata subcategory, empty when absent"),
        Column("asr_content"),
        Column("kind_a", allowed=OPTION_KINDS, doc="what option A varies (built items; empty when released)"),
        Column("kind_b", allowed=OPTION_KINDS),
        Column("kind_c", allowed=OPTION_KINDS),
        Column("kind_d", allowed=OPTION_KINDS),
        Column("clip_start", "float", nullable=True, doc="built items: clip start in the source transcript"),
        Column("clip_end", "float", nullable=True),
        Column("review_status", allowed=REVIEW_STATUS),
        Column("metadata_json", doc="the item's metadata object as sorted JSON"),
    ),
    key=("item_id",),
)

WHEN_ITEMS = Contract(
    "when_items",
    (
        Column("item_id", doc="video_id"),
        Column("video_path", doc="video_file"),
        Column("question", doc="question_1.question"),
        Column("timestamp_raw", doc="question_1.timestamp as written"),
        Column("cut_time", "float", doc="question_1.timestamp as clock time in seconds"),
        Column("option_a"),
        Column("option_b"),
        Column("correct_answer", allowed=("A", "B")),
        Column("gold", allowed=YES_NO, doc="the correct option's text: should the target speak now?"),
        Column("target", doc="participant named in question_2 ('What should X say?'), empty if not found"),
        Column("how_question", doc="question_2.question, empty when absent"),
        Column("how_reference", doc="question_2.answer, empty when absent"),
        Column("full_asr"),
        Column("domain"),
        Column("subcategory"),
        Column("metadata_json"),
    ),
    key=("item_id",),
)

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

IMPORT_ERRORS = Contract(
    "import_errors",
    (
        Column("source", doc="the file"),
        Column("item_id", doc="empty when the item has no readable id"),
        Column("field"),
        Column("message"),
    ),
)

# --- scores --------------------------------------------------------------------------

WHO_SCORES = Contract(
    "who_scores",
    (
        Column("model"),
        Column("modality"),
        Column("item_id"),
        Column("correct_answer", allowed=LETTERS),
        Column("prediction", allowed=("", *LETTERS), doc="empty = unparseable reply"),
        Column("parsed", "bool"),
        Column("correct", "bool", doc="unparseable counts as wrong"),
        Column("error_type", allowed=("none", "speaker", "content", "both", "unparsed", "unknown")),
        Column("consistency", allowed=CONSISTENCY),
        Column("domain"),
        Column("subcategory"),
    ),
    key=("model", "modality", "item_id"),
)

ACCURACY_BREAKDOWN = Contract(
    "accuracy_breakdown",
    (
        Column("model"),
        Column("modality"),
        Column("breakdown", doc="overall / consistency / correct_option / domain / subcategory / gold"),
        Column("level", doc="the group within the breakdown, 'all' for overall"),
        Column("n", "int"),
        Column("n_correct", "int"),
        Column("n_unparsed", "int"),
        Column("accuracy", "float", nullable=True),
        Column("ci_low", "float", nullable=True, doc="95% Wilson"),
        Column("ci_high", "float", nullable=True),
    ),
    key=("model", "modality", "breakdown", "level"),
)

WHEN_SCORES = Contract(
    "when_scores",
    (
        Column("model"),
        Column("modality"),
        Column("item_id"),
        Column("gold", allowed=YES_NO),
        Column("prediction", allowed=("", *YES_NO), doc="empty = unparseable reply"),
        Column("parsed", "bool"),
        Column("correct", "bool"),
    ),
    key=("model", "modality", "item_id"),
)

TIMING_LABELS = ("Interrupted", "Perfect", "Delayed", "TooLate", "NoResponse")

WHEN_STREAM_SCORES = Contract(
    "when_stream_scores",
    (
        Column("model"),
        Column("item_id"),
        Column("turn_end", "float"),
        Column("response_time", "float", nullable=True, doc="first speak-now; empty = none in the clip"),
        Column("offset", "float", nullable=True, doc="response_time - turn_end"),
        Column("label", allowed=TIMING_LABELS),
    ),
    key=("model", "item_id"),
)

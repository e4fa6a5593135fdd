"""Table contracts of the SocialOmni-style benchmark (who / when / how): items, replies, scores.

The who / when item tables (`WHO_ITEMS`, `WHEN_ITEMS`) come from the released files through
`socialomni.importers`; `TURNS`, `PANELS`, `HOW_REFERENCES`, `WHEN_STREAM_ITEMS` from the
demo's `truth/` folder (or derived from the released items); `REPLIES` holds every model's
and baseline's answers (`reply_row` builds one row, `answered` keeps the successful calls);
`WHO_COPIES` and `WRITTEN_ANSWERS` carry what the released scorers read beyond the item
tables (a duplicated id's earlier copies, the answers as written); `SOCIAL_PROFILE` is the
per-model who / when / how profile with its counts and 95% bounds.
"""

from __future__ import annotations

import logging

import pandas as pd

from omnisocial.tables import Column, Contract

log = logging.getLogger(__name__)


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


WHO_ITEMS = Contract(
    "who_items",
    (
        Column("item_id"),
        Column("source", doc="'socialomni' (released level 1) or 'built' (build_who_items)"),
        Column("video_path"),
        Column("question"),
        Column(
            "query_start",
            "float",
            nullable=True,
            doc="start of the asked interval (= query_time for a point); empty: no time (the whole clip)",
        ),
        Column(
            "query_time",
            "float",
            nullable=True,
            doc="t: end of the asked interval (the causal protocol cuts there); empty: no time",
        ),
        Column("option_a", doc="option text without its 'A. ' prefix: '<speaker> said <utterance>'"),
        Column("option_b"),
        Column("option_c", doc="empty for a 2-option item"),
        Column("option_d", doc="empty for a 2- or 3-option item"),
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


WHO_COPIES = Contract(
    "who_copies",
    (
        *WHO_ITEMS.columns,
        Column("written", doc="the copy's correct_answer as written in dataset.json"),
    ),
)
"""Released mode: the earlier copies of a who item id written more than once in dataset.json
(the item table holds the last copy). The released pipeline scores and counts every copy, so
`who.score_who` counts these in the overall accuracy (its `copies`). No key: an id written
three times has two earlier copies."""


WRITTEN_ANSWERS = Contract(
    "written_answers",
    (
        Column("task", allowed=("who", "when")),
        Column("item_id"),
        Column("written", doc="correct_answer as written in the released file (e.g. 'B.', '(A)')"),
    ),
    key=("task", "item_id"),
)
"""Each imported item's correct answer as written: the released scorers compare it raw, so
"B." never matches a reply's letter (`who.score_who`'s and `when.score_when_single`'s
`raw_answers`, released mode only)."""


TIMESTAMP_READINGS = Contract(
    "timestamp_readings",
    (
        Column("source", doc="the file"),
        Column("item_id"),
        Column("field"),
        Column("raw", doc="the time as written"),
        Column("seconds", "float", doc="how it was read"),
        Column("note", doc="the reading rule (importing.read_timestamp)"),
    ),
)


WHEN_ITEMS = Contract(
    "when_items",
    (
        Column("item_id", doc="video_id"),
        Column("video_path", doc="video_file"),
        Column("question", doc="question_1.question"),
        Column("timestamp_raw", doc="question_1.timestamp as written"),
        Column("cut_time", "float", doc="question_1.timestamp in seconds (social.timestamps reading)"),
        Column("option_a"),
        Column("option_b"),
        Column("correct_answer", allowed=("A", "B")),
        Column("gold", allowed=YES_NO, doc="should the target speak now? (the correct option's meaning)"),
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
        Column("other_prediction", allowed=("", *LETTERS), doc="the other parser's reading (audit)"),
    ),
    key=("model", "modality", "item_id"),
)


ACCURACY_BREAKDOWN = Contract(
    "accuracy_breakdown",
    (
        Column("model"),
        Column("modality"),
        Column(
            "breakdown",
            doc="overall / analysis (released: the released analysis's accuracy, one row per id) / "
            "consistency / correct_option / domain / subcategory / gold",
        ),
        Column("level", doc="the group within the breakdown, 'all' for overall"),
        Column("n", "int"),
        Column("n_correct", "int"),
        Column("n_unparsed", "int"),
        Column("accuracy", "float", nullable=True),
        Column("ci_low", "float", nullable=True, doc="95% Wilson"),
        Column("ci_high", "float", nullable=True),
        Column("parser", allowed=("", "released", "strict"), doc="the reply parser (social.parser)"),
        Column("n_parser_differs", "int", doc="replies of the group the other parser reads differently"),
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
        Column("other_prediction", allowed=("", *YES_NO), doc="the other parser's reading (audit)"),
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


TASKS = ("who", "when", "how")


TURNS = Contract(
    "social_turns",
    (Column("clip_id"), Column("speaker"), Column("start", "float"), Column("end", "float"), Column("text")),
    key=("clip_id", "speaker", "start"),
)


PANELS = Contract(
    "social_panels",
    (
        Column("clip_id"),
        Column("speaker"),
        Column("on_screen", "bool"),
        Column("x0", "int", doc="panel box in video pixels; -1 when off-screen"),
        Column("y0", "int"),
        Column("x1", "int"),
        Column("y1", "int"),
    ),
    key=("clip_id", "speaker"),
)


HOW_REFERENCES = Contract(
    "how_references",
    (
        Column("item_id"),
        Column("ref_index", "int"),
        Column("kind", doc="true / paraphrase (demo) or released (question_2.answer)"),
        Column("text"),
    ),
    key=("item_id", "ref_index"),
)


WHEN_STREAM_ITEMS = Contract(
    "when_stream_items",
    (
        Column("item_id"),
        Column("clip_id"),
        Column("video_path"),
        Column("target", doc="who should speak next (excluded from the speech in truth mode)"),
        Column("previous_speaker"),
        Column("stream_start", "float", doc="first query time"),
        Column("turn_end", "float"),
        Column("next_start", "float", nullable=True, doc="when the next turn really starts"),
        Column("stream_end", "float", nullable=True, doc="last query time; empty = end of the audio"),
    ),
    key=("item_id",),
)


REPLIES = Contract(
    "social_replies",
    (
        Column("model"),
        Column("modality"),
        Column("task", allowed=TASKS),
        Column("item_id"),
        Column("reply", doc="letter (who), YES/NO (when) or the next utterance (how); empty when failed"),
        Column("ok", "bool"),
        Column("error"),
    ),
    key=("model", "modality", "task", "item_id"),
)


WHO_EVIDENCE = Contract(
    "who_panel_evidence",
    (
        Column("item_id"),
        Column("speaker", doc="the speaker the baseline chose"),
        Column("true_speaker"),
        Column("motion", "float", nullable=True, doc="the chosen speaker's mean panel motion"),
        Column("fallback", "bool", doc="no option speaker moved enough: speaker drawn at random"),
        Column("motion_json", doc="mean panel motion of every option speaker with a panel"),
    ),
    key=("item_id",),
)


WHEN_STREAM_RESPONSES = Contract(
    "when_stream_responses",
    (
        Column("model"),
        Column("item_id"),
        Column("turn_end", "float"),
        Column("response_time", "float", nullable=True),
    ),
    key=("model", "item_id"),
)


HOW_JUDGEMENTS = Contract(
    "how_judgements",
    (
        Column("model"),
        Column("modality"),
        Column("item_id"),
        Column("judge"),
        Column("score", "float", nullable=True, doc="0/25/50/75/100; empty = not scored"),
        Column("similarity", "float", nullable=True, doc="the judge's best similarity to a reference"),
        Column("reason"),
        Column("judge_failed", "bool", doc="the LLM judge's call failed: no score, counted, never 0"),
    ),
    key=("model", "modality", "item_id", "judge"),
)


def _rate(name: str, doc: str = "") -> Column:
    return Column(name, "float", nullable=True, bounds=(0.0, 1.0), doc=doc)


def _count(name: str, doc: str = "") -> Column:
    return Column(name, "int", nullable=True, doc=doc)


def _score(name: str, doc: str = "") -> Column:
    return Column(name, "float", nullable=True, bounds=(0.0, 100.0), doc=doc)


SOCIAL_PROFILE = Contract(
    "social_profile",
    (
        Column("model"),
        _rate("who_accuracy", "who_metrics: accuracy (unparseable replies count wrong)"),
        _count("who_n", "who items scored"),
        _count("who_correct"),
        _rate("who_accuracy_low", "95% Wilson"),
        _rate("who_accuracy_high"),
        Column("who_consistency_gap", "float", nullable=True, bounds=(-1.0, 1.0)),
        _rate("when_accuracy", "single-cut accuracy (overall)"),
        _count("when_n", "single-cut items scored"),
        _count("when_correct"),
        _rate("when_accuracy_low", "95% Wilson"),
        _rate("when_accuracy_high"),
        _rate("when_on_time", "streaming: Perfect / items"),
        _count("when_stream_n", "streaming items, NoResponse included"),
        _count("when_on_time_count", "streaming items labelled Perfect"),
        _rate("when_on_time_low", "95% Wilson"),
        _rate("when_on_time_high"),
        _rate("when_early"),
        _rate("when_late"),
        _rate("when_f1", "tolerance-window F1 at social.when.profile_delta"),
        _score("how_mean", "judged, mean over judges per item, zeros kept, then over items"),
        _count("how_n", "items with a judged score"),
        Column("how_sd", "float", nullable=True, doc="sample SD of the per-item scores"),
        _score("how_mean_low", "95% t interval over items, clipped to [0, 100]"),
        _score("how_mean_high"),
        _score("how_mean_without_zeros"),
        Column("perception_rank", "float", nullable=True, doc="by who accuracy; 1 = best, ties averaged"),
        Column("generation_rank", "float", nullable=True, doc="by how_mean; 1 = best, ties averaged"),
    ),
    key=("model",),
)


def reply_row(model: str, modality: str, task: str, item_id: str, text: str, error: str = "") -> dict:
    return {
        "model": model,
        "modality": modality,
        "task": task,
        "item_id": str(item_id),
        "reply": text,
        "ok": not error,
        "error": error,
    }


def answered(replies: pd.DataFrame, task: str) -> pd.DataFrame:
    """The task's answered replies; failed calls (ok false) are left out (module doc)."""
    own = replies[replies["task"] == task]
    failed = own[~own["ok"].astype(bool)]
    if len(failed):
        counts = failed.groupby("model").size().to_dict()
        log.warning("%s: failed calls left out of scoring (rerun to retry them): %s", task, counts)
    return own[own["ok"].astype(bool)]

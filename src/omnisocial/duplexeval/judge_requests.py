"""The streaming judges' requests for Omni-DuplexEval responses, as the released scorers ask them.

`judge_specs` prepares one `judges.llm.StreamSpec` per judgement (the judge layer knows no
benchmark; it turns the specs into requests for each judge):

- ``rtd_temporal``: one response sentence against the frames of its judge window
  (`description.judge_window` with the item's video_duration), sampled at `fps`
  (`description.frame_times`, 2 fps as released); a sentence without a valid window is not
  judged (no spec);
- ``rtd_content``: the whole response against answer1 / answer2 (and the video); an empty
  response has no content call;
- ``pr``: the response text whose sentences start in [t, t + window_s] for each reminder time
  t (`judged.reminder_texts`); an event window without text scores 0 with no call; the
  correction split (no reminder times) is judged once on the whole response against answer1.
Replies are parsed by `judged.parse_reply` under `social.parser` (`judged.score_judge_runs`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from omnisocial.duplexeval.contracts import RTD_SPLITS
from omnisocial.duplexeval.description import frame_times, judge_window
from omnisocial.duplexeval.judged import reminder_texts
from omnisocial.duplexeval.reminders import REMINDER_WINDOW_S
from omnisocial.importing import nan_to_none, resolve
from omnisocial.judges.llm import StreamSpec

POST_EVENT_NOTE = "The text is judged right after the target event has happened."
EVENT_NOTE = "The text is judged at the time of the target event or right after it."


def _video_of(item: dict, root):
    value = str(item.get("video") or "").strip()
    return resolve(root, value) if value else None


def temporal_specs(model: str, item: dict, own: pd.DataFrame, video, fps: float) -> list[StreamSpec]:
    """One spec per response sentence with a valid judge window, in the order of `own`."""
    duration = nan_to_none(item["video_duration"])
    specs = []
    for sentence in own.to_dict("records"):
        window = judge_window(sentence["start"], sentence["end"], duration)
        if window is None:
            continue
        fields = {
            "window_start": f"{window[0]:.2f}",
            "window_end": f"{window[1]:.2f}",
            "fps": f"{fps:g}",
            "question": str(item["question_text"]).strip(),
            "sentence": str(sentence["text"]).strip(),
        }
        times = tuple(float(t) for t in frame_times(window, fps))
        index = int(sentence["sentence_index"])
        key = (model, item["split"], item["item_id"], index)
        specs.append(StreamSpec("rtd_temporal", *key, "rtd_temporal", fields, video, times))
    return specs


def content_spec(model: str, item: dict, own: pd.DataFrame, video) -> StreamSpec | None:
    """The whole response against the references; None for an empty response (no call)."""
    text = " ".join(str(t).strip() for t in own["text"] if str(t).strip()).strip()
    if not text:
        return None
    answers = [str(item[k]).strip() for k in ("answer1", "answer2") if str(item[k] or "").strip()]
    block = ""
    if answers:
        block = "- Reference annotations (guidance only):\n" + "\n".join(
            f"  {k}. {a}" for k, a in enumerate(answers, 1)
        )
    fields = {"question": str(item["question_text"]).strip(), "response": text, "references": block}
    key = (model, item["split"], item["item_id"], None)
    return StreamSpec("rtd_content", *key, "rtd_content", fields, video, whole_video=True)


def reminder_specs(model: str, item: dict, own: pd.DataFrame, window_s: float) -> list[StreamSpec]:
    """One spec per reminder event with text (the correction split: one on the whole response)."""
    specs = []
    instruction = str(item["question_text"]).strip()
    for index, window, text in reminder_texts(own, item, window_s):
        if not text:
            continue
        if window is None:  # the correction split
            template = "pr_correction"
            reference = str(item["answer1"] or "").strip()
            fields = {"instruction": instruction, "reference": reference, "text": text}
        else:
            template = "pr_reminder"
            note = POST_EVENT_NOTE if item["split"] == "PR_post_event_reminder" else EVENT_NOTE
            fields = {"timing_note": note, "instruction": instruction, "text": text}
        specs.append(StreamSpec("pr", model, item["split"], item["item_id"], index, template, fields))
    return specs


def judge_specs(
    tasks: Sequence[str],
    responses: pd.DataFrame,
    items: pd.DataFrame,
    root,
    fps: float = 2.0,
    window_s: float | None = None,
) -> list[StreamSpec]:
    """The specs of the streaming tasks a judge serves (module doc), for every model's responses:
    per model and item the temporal sentences, then the content, then the reminder events."""
    window_s = REMINDER_WINDOW_S if window_s is None else float(window_s)
    specs: list[StreamSpec] = []
    for model in sorted(responses["model"].unique()):
        mine = responses[responses["model"] == model]
        for item in items.to_dict("records"):
            own = mine[(mine["split"] == item["split"]) & (mine["item_id"] == item["item_id"])]
            own = own.sort_values("start", kind="stable")
            video = _video_of(item, root)
            rtd = item["split"] in RTD_SPLITS
            if rtd and "rtd_temporal" in tasks:
                specs += temporal_specs(model, item, own, video, fps)
            if rtd and "rtd_content" in tasks:
                content = content_spec(model, item, own, video)
                specs += [content] if content is not None else []
            if not rtd and "pr" in tasks:
                specs += reminder_specs(model, item, own, window_s)
    return specs

"""Registry models on the who / when / how items: modality, media cutting, requests, replies.

`cut_all_media` prepares each item's clip once per input modality (rule
socialomni_cut_media, declared
outputs, so any number of model jobs read them side by side): when / how are cut at the
cut time, as the released level-2 pipeline does; who follows `social.who.protocol`:
`whole_clip` (default, the released level-1 evaluator): the whole clip, not shortened (only
converted to the model's modality), with the time in the question; `causal`: cut at the
end of the asked interval (query_time; a question without a time keeps the whole clip).
`social_requests` builds
one `Request` per task and item on those clips;
`replies_from_results` turns `run_inference`'s results into REPLIES rows. Failed model
calls (ok false) become replies with ok false and are left out of every score.

Modality ablation (`social.ablations`, paper appendix A.12): the same registry entry run
again on one input only, as its own run named `<name>@<ablation>` (`run_name`; replies
table replies/models/<name>@<ablation>.csv, its own result cache), so every scorer, the
profile and the figures list it beside the full-input `<name>`; its replies carry the
ablation as their `modality` (audio, video or transcript), a column of every metrics table.
`audio` / `video`: the clips cut for that modality (an audio-only clip, or video frames
without audio), with the prompt sentence of that modality (`MODALITY_INPUTS`). `transcript`:
no media at all; the prompt says the model gets only the automatic transcript and carries
it: who the item's `asr_content` (the released clip transcript, not cut at the asked time,
so under the causal who protocol it may run past it), when and how the item's `full_asr`
(the conversation before the cut). An entry that cannot take the ablation's input (audio
for an entry without audio, video without video) gets no requests for it, with a log line,
and so does an ablation that is already the entry's full input (audio for an audio-only
entry): its replies table is empty. Every entry takes a transcript (a text prompt).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from omnisocial.importing import resolve
from omnisocial.media.cut import cut_clip
from omnisocial.models.base import Request
from omnisocial.socialomni.contracts import REPLIES, reply_row
from omnisocial.socialomni.runs import MEDIA_SUFFIX, model_modality, run_modality, run_name
from omnisocial.socialomni.who import MODALITY_INPUTS, who_prompt

log = logging.getLogger(__name__)


WHEN_INSTRUCTION = "Options:\nA. YES\nB. NO\nAnswer with YES or NO only."


WHO_PROTOCOLS = ("whole_clip", "causal")


def cut_media(
    source: str | os.PathLike, end_s: float | None, destination: str | os.PathLike, modality: str
) -> Path:
    """The first `end_s` seconds of a clip (None: all of it), as a model of `modality` may see it.

    audio_video: video and audio (mp4); video: video only (mp4, audio dropped); audio: a
    16 kHz mono wav. Re-encoded, so the cut is exact. Written through a unique temporary
    name and renamed, so jobs that cut side by side never trip over each other's files.
    """
    return cut_clip(source, None, end_s, destination, modality)


def media_cuts(
    who_items: pd.DataFrame, when_items: pd.DataFrame, who_protocol: str = "whole_clip"
) -> dict[tuple[str, str], tuple[str, float | None]]:
    """(task, item_id) -> (video path, cut time or None for the whole clip) (module doc)."""
    if who_protocol not in WHO_PROTOCOLS:
        raise ValueError(f"unknown who protocol {who_protocol!r}; expected one of {', '.join(WHO_PROTOCOLS)}")

    def who_end(item) -> float | None:
        end = item["query_time"]
        return None if who_protocol == "whole_clip" or pd.isna(end) else float(end)

    cuts = {("who", i["item_id"]): (i["video_path"], who_end(i)) for i in who_items.to_dict("records")}
    cuts.update(
        {("when", i["item_id"]): (i["video_path"], i["cut_time"]) for i in when_items.to_dict("records")}
    )
    return cuts


def cut_path(media_root: str | os.PathLike, modality: str, task: str, item_id: str) -> Path:
    """Where `cut_all_media` puts a clip for models of `modality`: <root>/<modality>/<task>/<item>."""
    return Path(media_root) / modality / task / f"{item_id}{MEDIA_SUFFIX[modality]}"


def cut_all_media(
    who_items: pd.DataFrame,
    when_items: pd.DataFrame,
    root: str | os.PathLike,
    media_root: str | os.PathLike,
    modality: str,
    threads: int = 1,
    who_protocol: str = "whole_clip",
) -> int:
    """Cut every item's clip for models of `modality` under `media_root/modality`; the number of clips."""
    cuts = media_cuts(who_items, when_items, who_protocol)
    (Path(media_root) / modality).mkdir(parents=True, exist_ok=True)

    def cut(item: tuple[tuple[str, str], tuple[str, float]]) -> Path:
        (task, item_id), (video, end) = item
        return cut_media(resolve(root, video), end, cut_path(media_root, modality, task, item_id), modality)

    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        return len(list(pool.map(cut, sorted(cuts.items()))))


def social_requests(
    entry: Mapping,
    who_items: pd.DataFrame,
    when_items: pd.DataFrame,
    media_root: str | os.PathLike,
    include_asr: bool = False,
    ablation: str | None = None,
) -> list[tuple[str, str, Request]]:
    """(task, item_id, Request) of one registry model on the clips `cut_all_media` prepared.

    Request ids are '<task>:<item_id>' so the result cache keeps the tasks apart. A
    text-only model gets no requests (it can neither see nor hear the clip). The clips are
    read from `media_root`, where `cut_all_media` put them for the model's modality (rule
    socialomni_cut_media): a clip that is missing is a failed request, never a new cut.
    `ablation` (audio, video or transcript): the run on that input only (module doc).
    """
    modality = run_modality(entry, ablation)
    if modality is None:
        if ablation is None:
            log.warning("model %s is text-only: no who / when / how requests", entry.get("name"))
        elif ablation == model_modality(entry):
            log.warning(
                "model %s: ablation %s is its full input already: no requests for %s",
                entry.get("name"),
                ablation,
                run_name(str(entry.get("name")), ablation),
            )
        else:
            log.warning(
                "model %s takes no %s input (modalities %s): no requests for ablation %s",
                entry.get("name"),
                ablation,
                ", ".join(entry.get("modalities") or ()) or "none",
                run_name(str(entry.get("name")), ablation),
            )
        return []
    kind = "audio" if modality == "audio" else "video"
    out = []

    def media(task: str, item_id: str) -> dict[str, Path]:
        if modality == "transcript":
            return {}
        return {kind: cut_path(media_root, modality, task, item_id)}

    def transcript(item) -> str:
        context = str(item["full_asr"] or "").strip() or "(no transcript)"
        return f"Conversation so far (automatic transcript):\n{context}"

    for item in who_items.to_dict("records"):
        prompt = who_prompt(item, modality, include_asr=include_asr)
        request = Request(f"who:{item['item_id']}", prompt, media=media("who", item["item_id"]))
        out.append(("who", item["item_id"], request))
    for item in when_items.to_dict("records"):
        files = media("when", item["item_id"])
        context = f"{transcript(item)}\n\n" if modality == "transcript" else ""
        prompt = f"{MODALITY_INPUTS[modality]}\n\n{context}{item['question']}\n\n{WHEN_INSTRUCTION}"
        out.append(("when", item["item_id"], Request(f"when:{item['item_id']}", prompt, media=files)))
        if item["gold"] == "YES" and item["how_question"]:
            prompt = (
                f"{MODALITY_INPUTS[modality]}\n\n{transcript(item)}\n\n"
                f"{item['how_question']} Reply with exactly the words {item['target'] or 'they'} should say "
                "next, nothing else."
            )
            out.append(("how", item["item_id"], Request(f"how:{item['item_id']}", prompt, media=files)))
    return out


def replies_from_results(
    name: str, modality: str, requests: Sequence[tuple[str, str, Request]], results
) -> pd.DataFrame:
    """REPLIES rows from `run_inference`'s frame (one row per request, in request order)."""
    rows = []
    for (task, item_id, _), record in zip(requests, results.to_dict("records"), strict=True):
        ok = bool(record["ok"])
        rows.append(
            reply_row(
                name,
                modality,
                task,
                item_id,
                str(record["text"] or "") if ok else "",
                "" if ok else str(record["error"]),
            )
        )
    return REPLIES.validate(pd.DataFrame(rows, columns=REPLIES.names))

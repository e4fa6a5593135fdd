"""Registry models on the who / when / how items: modality, media cutting, requests, replies.

`social_requests` builds one `Request` per task and item (who cut at query_time, when /
how at the cut, media cut by `cut_media` as the released evaluators do);
`replies_from_results` turns `run_inference`'s results into REPLIES rows. Failed model
calls (ok false) become replies with ok false and are left out of every score.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from omnisocial.importing import resolve
from omnisocial.media.audio import MediaError
from omnisocial.models.base import Request
from omnisocial.socialomni.contracts import REPLIES, reply_row
from omnisocial.socialomni.who import MODALITY_INPUTS, who_prompt

log = logging.getLogger(__name__)


WHEN_INSTRUCTION = "Options:\nA. YES\nB. NO\nAnswer with YES or NO only."


def model_modality(entry: Mapping) -> str | None:
    """The who/when input modality of a registry entry: audio_video, video or audio; None for text-only."""
    modalities = set(entry.get("modalities") or ())
    if {"audio", "video"} <= modalities:
        return "audio_video"
    if "video" in modalities:
        return "video"
    if "audio" in modalities:
        return "audio"
    return None


def cut_media(source: str | os.PathLike, end_s: float, destination: str | os.PathLike, modality: str) -> Path:
    """The first `end_s` seconds of a clip, as a model may see it (released evaluators cut there).

    audio_video: video and audio (mp4); video: video only (mp4, audio dropped); audio: a
    16 kHz mono wav. Re-encoded, so the cut is exact; an existing output is reused.
    """
    destination = Path(destination)
    if destination.is_file() and destination.stat().st_size:
        return destination
    destination.parent.mkdir(parents=True, exist_ok=True)
    command = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(source), "-t", f"{float(end_s):.3f}"]
    if modality == "audio":
        command += ["-vn", "-ac", "1", "-ar", "16000", "-f", "wav"]
    else:
        command += ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
        command += ["-an"] if modality == "video" else ["-c:a", "aac"]
        command += ["-f", "mp4"]
    tmp = destination.with_name(f".{destination.name}.part")
    result = subprocess.run([*command, str(tmp)], capture_output=True, timeout=600, check=False)
    if result.returncode != 0:
        tmp.unlink(missing_ok=True)
        message = result.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise MediaError(f"cannot cut {source}: {message[-1] if message else 'no message'}")
    os.replace(tmp, destination)
    return destination


def social_requests(
    entry: Mapping,
    who_items: pd.DataFrame,
    when_items: pd.DataFrame,
    root: str | os.PathLike,
    media_dir: str | os.PathLike,
    include_asr: bool = False,
) -> list[tuple[str, str, Request]]:
    """(task, item_id, Request) of one registry model: who cut at query_time, when / how at the cut.

    Request ids are '<task>:<item_id>' so the result cache keeps the tasks apart. A
    text-only model gets no requests (it can neither see nor hear the clip).
    """
    modality = model_modality(entry)
    if modality is None:
        log.warning("model %s is text-only: no who / when / how requests", entry.get("name"))
        return []
    kind = "audio" if modality == "audio" else "video"
    suffix = ".wav" if kind == "audio" else ".mp4"
    media_dir = Path(media_dir)
    out = []

    def media(item_id: str, video: str, end: float) -> dict[str, Path]:
        cut = cut_media(resolve(root, video), end, media_dir / modality / f"{item_id}{suffix}", modality)
        return {kind: cut}

    for item in who_items.to_dict("records"):
        prompt = who_prompt(item, modality, include_asr=include_asr)
        request = Request(
            f"who:{item['item_id']}",
            prompt,
            media=media(item["item_id"], item["video_path"], item["query_time"]),
        )
        out.append(("who", item["item_id"], request))
    for item in when_items.to_dict("records"):
        files = media(item["item_id"], item["video_path"], item["cut_time"])
        prompt = f"{MODALITY_INPUTS[modality]}\n\n{item['question']}\n\n{WHEN_INSTRUCTION}"
        out.append(("when", item["item_id"], Request(f"when:{item['item_id']}", prompt, media=files)))
        if item["gold"] == "YES" and item["how_question"]:
            context = str(item["full_asr"] or "").strip() or "(no transcript)"
            prompt = (
                f"{MODALITY_INPUTS[modality]}\n\nConversation so far (automatic transcript):\n{context}\n\n"
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

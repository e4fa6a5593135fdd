"""LLM judges: registry entries (any backend) asked through the resumable result cache.

Config (`social.judges`): per task a list of model entries (`models/model_entry.schema.json`,
validated by the registry like `social.models`):

- ``how``: a SocialOmni next utterance against its item's references (prompt `how.txt`,
  reply: one number; parsed by `socialomni.how.parse_judge_score` under `social.parser`);
- the streaming tasks ``rtd_temporal``, ``rtd_content`` and ``pr``: the benchmark prepares
  each request (`StreamSpec`: the prompt's fields, the frame times of the judge window or the
  whole video) and `stream_jobs` turns the specs into requests for one judge: frames are cut
  once per item (media keys ``image:000``, ``image:001``, ... in time order) and sent, like
  the video, only when the entry lists ``video`` among its modalities. This layer knows no
  benchmark: Omni-DuplexEval's windows, texts and reply parsing live in `duplexeval.judged`.

No call is made where the released scorers make none: an empty how candidate (0); the
streaming benchmark leaves out of its specs what it scores without a judge. A judge used for
several tasks is one entry (one name, one cache).

`run_judge` sends the requests through `models.runner.run_inference` (cache, retries,
`FailurePolicy`, redaction as for models) and returns LLM_JUDGE_REPLIES: one row per
request, `ok` False with the call's `error` when the call failed. A failed call is never a
score: the scorers count it (`judge_failed` / `n_judge_failed`) and leave it out of every mean.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template

import ffmpeg
import pandas as pd

from omnisocial.judges.replies import FRAME_KEY, JUDGE_TASKS, KIND, LLM_JUDGE_REPLIES, STREAM_TASKS
from omnisocial.models.base import Request
from omnisocial.models.entries import RegistryError, validate_entry

log = logging.getLogger(__name__)


__all__ = ["FRAME_KEY", "JUDGE_TASKS", "KIND", "LLM_JUDGE_REPLIES", "STREAM_TASKS"]


# --- config ---------------------------------------------------------------------------------


def load_judges(config: Mapping | None) -> tuple[dict[str, list[str]], dict[str, dict]]:
    """(task -> judge names, name -> validated entry) from `social.judges`.

    Every entry is validated by the registry; a name listed under several tasks must be the
    same entry each time (one judge, one cache file)."""
    config = dict(config or {})
    unknown = sorted(set(config) - set(JUDGE_TASKS))
    if unknown:
        raise RegistryError(f"social.judges: unknown task {unknown[0]!r}; tasks: {', '.join(JUDGE_TASKS)}")
    tasks: dict[str, list[str]] = {task: [] for task in JUDGE_TASKS}
    entries: dict[str, dict] = {}
    for task in JUDGE_TASKS:
        listed = config.get(task) or []
        if not isinstance(listed, Sequence) or isinstance(listed, (str, bytes)):
            raise RegistryError(f"social.judges.{task}: must be a list of model entries")
        for position, entry in enumerate(listed):
            try:
                valid = validate_entry(entry, position)
            except RegistryError as error:
                raise RegistryError(f"social.judges.{task}: {error}") from None
            name = valid["name"]
            if name in tasks[task]:
                raise RegistryError(f"social.judges.{task}: judge {name!r} listed twice")
            if name in entries and entries[name] != valid:
                raise RegistryError(
                    f"social.judges.{task}: judge {name!r} differs from the entry of that name under "
                    "another task (one name, one judge, one cache)"
                )
            entries[name] = valid
            tasks[task].append(name)
    return tasks, entries


def prompt_template(name: str) -> Template:
    """A judge prompt (`prompts/judges/<name>.txt`, $-placeholders)."""
    node = resources.files("omnisocial").joinpath("prompts", "judges", f"{name}.txt")
    return Template(node.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class JudgeJob:
    """One judge request and the row it fills."""

    task: str
    model: str
    modality: str
    split: str
    item_id: str
    kind: str
    index: int | None
    request: Request


def _takes_video(entry: Mapping) -> bool:
    return "video" in (entry.get("modalities") or ())


# --- how ------------------------------------------------------------------------------------


def how_jobs(candidates: pd.DataFrame, references: pd.DataFrame) -> list[JudgeJob]:
    """One request per non-empty how candidate with references (`candidates`: REPLIES of task how, ok)."""
    refs = references.sort_values(["item_id", "ref_index"]).groupby("item_id")["text"].apply(list).to_dict()
    template = prompt_template("how")
    jobs = []
    for row in candidates.to_dict("records"):
        candidate = str(row["reply"] or "").strip()
        if not candidate or row["item_id"] not in refs:
            continue
        texts = [str(t).strip() for t in refs[row["item_id"]]]
        block = texts[0] if len(texts) == 1 else "\n".join(f"{k}. {t}" for k, t in enumerate(texts, 1))
        prompt = template.substitute(references=block, candidate=candidate)
        request = Request(item_id=f"how/{row['model']}/{row['modality']}/{row['item_id']}", prompt=prompt)
        jobs.append(JudgeJob("how", row["model"], row["modality"], "", row["item_id"], "how", None, request))
    return jobs


# --- streaming ------------------------------------------------------------------------------


def frame_file(video: Path, t: float, folder: Path) -> Path:
    """The JPEG frame of `video` at `t` s, extracted once into `folder` (atomic write)."""
    target = folder / f"{t:010.3f}.jpg"
    if target.is_file() and target.stat().st_size:
        return target
    from omnisocial.media.ffmpeg_run import run_ffmpeg

    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{target.name}.{os.getpid()}.jpg"
    stream = ffmpeg.input(str(video), ss=f"{t:.3f}", nostdin=None, v="error").output(
        str(partial), **{"frames:v": 1, "q:v": 4}
    )
    run_ffmpeg(stream.overwrite_output(), file=video, what="judge frame")
    if not partial.is_file() or not partial.stat().st_size:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"{video}: no frame at {t:.3f} s")
    os.replace(partial, target)
    return target


def window_frames(video: Path, times: Sequence[float], folder: Path) -> dict[str, Path]:
    """Media of a temporal request: the frames of `video` at `times`, in time order."""
    return {FRAME_KEY.format(k): frame_file(video, float(t), folder) for k, t in enumerate(times)}


@dataclass(frozen=True)
class StreamSpec:
    """One streaming judge request as its benchmark prepared it (the judge layer knows no benchmark).

    `template` (a `prompts/judges` name) is filled with `fields`; a temporal request's
    `frame_times` are the frames of `video` sent to a judge that takes video (its `n_frames`
    field is their count, filled here); a request with `whole_video` sends `video` itself."""

    task: str
    model: str
    split: str
    item_id: str
    index: int | None
    template: str
    fields: Mapping[str, str]
    video: Path | None = None
    frame_times: tuple[float, ...] | None = None
    whole_video: bool = False


def stream_jobs(specs: Sequence[StreamSpec], entry: Mapping, frames_dir) -> list[JudgeJob]:
    """The judge's requests for prepared streaming specs, in their order (frames cut once per item)."""
    frames_dir = Path(frames_dir)
    video_ok = _takes_video(entry)
    jobs = []
    for spec in specs:
        kind = KIND[spec.task]
        fields = dict(spec.fields)
        media: dict[str, Path] = {}
        if video_ok and spec.video is not None:
            if spec.frame_times is not None:
                media = window_frames(spec.video, spec.frame_times, frames_dir / spec.split / spec.item_id)
            elif spec.whole_video:
                media = {"video": spec.video}
        if spec.frame_times is not None:
            fields["n_frames"] = str(len(media))
        suffix = "" if spec.index is None else f"/{spec.index}"
        request = Request(
            item_id=f"{kind}/{spec.model}/{spec.split}/{spec.item_id}{suffix}",
            prompt=prompt_template(spec.template).substitute(fields),
            media=media,
        )
        jobs.append(JudgeJob(spec.task, spec.model, "", spec.split, spec.item_id, kind, spec.index, request))
    return jobs


# --- running --------------------------------------------------------------------------------


def run_judge(entry: Mapping, jobs: Sequence[JudgeJob], cache_path, policy=None, progress: bool = False):
    """Every job through `run_inference` (cache, retries, failure policy); LLM_JUDGE_REPLIES rows."""
    from omnisocial.models.registry import build_backend
    from omnisocial.models.runner import run_inference

    entry = validate_entry(entry)
    if not jobs:
        return LLM_JUDGE_REPLIES.empty()
    backend = build_backend(entry)
    try:
        results = run_inference(backend, [job.request for job in jobs], cache_path, progress, policy)
    finally:
        close = getattr(backend, "close", None)
        if callable(close):
            close()
    rows = []
    for job, result in zip(jobs, results.to_dict("records"), strict=True):
        ok = bool(result["ok"])
        rows.append(
            {
                "judge": entry["name"],
                "task": job.task,
                "model": job.model,
                "modality": job.modality,
                "split": job.split,
                "item_id": job.item_id,
                "kind": job.kind,
                "index": job.index,
                "n_media": len(job.request.media),
                "ok": ok,
                "reply": str(result["text"] or "") if ok else "",
                "error": "" if ok else str(result["error"] or "judge call failed"),
                "cached": bool(result["cached"]),
            }
        )
    table = LLM_JUDGE_REPLIES.validate(pd.DataFrame(rows, columns=LLM_JUDGE_REPLIES.names))
    log.info(
        "%s: %d judge calls, %d cached, %d failed",
        entry["name"],
        len(table),
        int(table["cached"].sum()),
        int((~table["ok"]).sum()),
    )
    return table

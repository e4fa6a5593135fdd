"""LLM judges: registry entries (any backend) asked through the resumable result cache.

Config (`social.judges`): per task a list of model entries (`models/model_entry.schema.json`,
validated by the registry like `social.models`):

- ``how``: a SocialOmni next utterance against its item's references (prompt `how.txt`,
  reply: one number; parsed by `socialomni.how.parse_judge_score` under `social.parser`);
- ``rtd_temporal``: one Omni-DuplexEval response sentence against the frames of its judge
  window (`duplexeval.description.judge_window`), sampled at `social.streaming.judge_fps`
  (2 fps, `frame_times` as released) from the item's video and sent as images (media keys
  ``image:000``, ``image:001``, ... in time order) when the entry lists ``video`` among its
  modalities; reply JSON `temporal_score`, `is_relevant`;
- ``rtd_content``: a whole response against answer1 / answer2 (and the video when the entry
  takes video); reply JSON `content_score`;
- ``pr``: the response text whose sentences start in [t, t + 10] s for each reminder time t
  (`duplexeval.judged.reminder_texts`); the correction split (no reminder times) is judged
  once on the whole response against answer1; reply JSON `success_score`.
Streaming replies are parsed by `duplexeval.judged.parse_reply` under `social.parser`, so
the workflow and `omnisocial duplexeval rtd|pr --judge-replies` score the same texts alike.

No call is made where the released scorers make none: an empty how candidate (0), a
sentence without a valid window (not judged), an event window without text (0), an empty
response (no content call). A judge used for several tasks is one entry (one name, one cache).

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


def window_frames(video: Path, window: tuple[float, float], fps: float, folder: Path) -> dict[str, Path]:
    """Media of a temporal request: the frames at `frame_times(window, fps)`, in time order."""
    from omnisocial.duplexeval.description import frame_times

    times = [float(t) for t in frame_times(window, fps)]
    return {FRAME_KEY.format(k): frame_file(video, t, folder) for k, t in enumerate(times)}


def _video_of(item: Mapping, root) -> Path | None:
    from omnisocial.importing import resolve

    value = str(item.get("video") or "").strip()
    return resolve(root, value) if value else None


def stream_jobs(
    tasks: Sequence[str],
    entry: Mapping,
    responses: pd.DataFrame,
    items: pd.DataFrame,
    root,
    frames_dir,
    fps: float = 2.0,
    window_s: float | None = None,
) -> list[JudgeJob]:
    """Requests of the streaming tasks this judge serves (module doc), for every model's responses."""
    from omnisocial.duplexeval.contracts import RTD_SPLITS
    from omnisocial.duplexeval.description import judge_window
    from omnisocial.duplexeval.judged import REMINDER_WINDOW_S, reminder_texts
    from omnisocial.importing import nan_to_none

    window_s = REMINDER_WINDOW_S if window_s is None else float(window_s)
    frames_dir = Path(frames_dir)
    video_ok = _takes_video(entry)
    jobs: list[JudgeJob] = []
    for model in sorted(responses["model"].unique()):
        mine = responses[responses["model"] == model]
        for item in items.to_dict("records"):
            own = mine[(mine["split"] == item["split"]) & (mine["item_id"] == item["item_id"])]
            own = own.sort_values("start", kind="stable")
            video = _video_of(item, root)
            base = f"{model}/{item['split']}/{item['item_id']}"
            rtd = item["split"] in RTD_SPLITS
            if rtd and "rtd_temporal" in tasks:
                template = prompt_template("rtd_temporal")
                duration = nan_to_none(item["video_duration"])
                for sentence in own.to_dict("records"):
                    window = judge_window(sentence["start"], sentence["end"], duration)
                    if window is None:
                        continue
                    media = {}
                    if video_ok and video is not None:
                        media = window_frames(
                            video, window, fps, frames_dir / item["split"] / item["item_id"]
                        )
                    prompt = template.substitute(
                        window_start=f"{window[0]:.2f}",
                        window_end=f"{window[1]:.2f}",
                        n_frames=len(media),
                        fps=f"{fps:g}",
                        question=str(item["question_text"]).strip(),
                        sentence=str(sentence["text"]).strip(),
                    )
                    index = int(sentence["sentence_index"])
                    request = Request(item_id=f"temporal/{base}/{index}", prompt=prompt, media=media)
                    jobs.append(
                        JudgeJob(
                            "rtd_temporal",
                            model,
                            "",
                            item["split"],
                            item["item_id"],
                            "temporal",
                            index,
                            request,
                        )
                    )
            if rtd and "rtd_content" in tasks:
                text = " ".join(str(t).strip() for t in own["text"] if str(t).strip()).strip()
                if text:
                    answers = [
                        str(item[k]).strip() for k in ("answer1", "answer2") if str(item[k] or "").strip()
                    ]
                    block = ""
                    if answers:
                        block = "- Reference annotations (guidance only):\n" + "\n".join(
                            f"  {k}. {a}" for k, a in enumerate(answers, 1)
                        )
                    prompt = prompt_template("rtd_content").substitute(
                        question=str(item["question_text"]).strip(), response=text, references=block
                    )
                    media = {"video": video} if video_ok and video is not None else {}
                    request = Request(item_id=f"content/{base}", prompt=prompt, media=media)
                    jobs.append(
                        JudgeJob(
                            "rtd_content", model, "", item["split"], item["item_id"], "content", None, request
                        )
                    )
            if not rtd and "pr" in tasks:
                for index, window, text in reminder_texts(own, item, window_s):
                    if not text:
                        continue
                    if window is None:  # the correction split
                        prompt = prompt_template("pr_correction").substitute(
                            instruction=str(item["question_text"]).strip(),
                            reference=str(item["answer1"] or "").strip(),
                            text=text,
                        )
                    else:
                        note = (
                            "The text is judged right after the target event has happened."
                            if item["split"] == "PR_post_event_reminder"
                            else "The text is judged at the time of the target event or right after it."
                        )
                        prompt = prompt_template("pr_reminder").substitute(
                            timing_note=note, instruction=str(item["question_text"]).strip(), text=text
                        )
                    request = Request(item_id=f"reminder/{base}/{index}", prompt=prompt)
                    jobs.append(
                        JudgeJob("pr", model, "", item["split"], item["item_id"], "reminder", index, request)
                    )
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


def failed_keys(replies: pd.DataFrame) -> set[tuple]:
    """(split, item_id, kind, index) of the failed streaming calls (`duplexeval.judged` scorers)."""
    failed = replies[~replies["ok"]]
    return {
        (r["split"], r["item_id"], r["kind"], None if pd.isna(r["index"]) else int(r["index"]))
        for r in failed.to_dict("records")
    }


def judged_reply_table(replies: pd.DataFrame) -> pd.DataFrame:
    """The successful streaming calls as `duplexeval.contracts.JUDGE_REPLIES` (one model's rows)."""
    from omnisocial.duplexeval.contracts import JUDGE_REPLIES

    ok = replies[replies["ok"]]
    return JUDGE_REPLIES.validate(ok[["split", "item_id", "kind", "index", "reply"]].reset_index(drop=True))

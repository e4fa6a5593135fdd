"""Omni-DuplexEval streaming of registry models: the RTD / PR protocols and the released response files.

A registry model that takes video is streamed through each stream item
(`importers.load_stream_items`) by the shared driver (`omnisocial.streaming.stream`); this
module is the benchmark's side of it (`stream_model` runs both protocols):

- items (`stream_items`): one `StreamItem` per item, its video resolved under the root,
  query times t_k = step_s, 2 step_s, ... up to the clip's end (video_duration, else the
  probed duration); the model sees the video only (frames, no audio track: the tasks are
  visual and the instruction is given as text), the whole prefix [0, t_k] or the last
  `window_s` seconds. An item without a video, or shorter than one step, is an error
  naming it (it could only be scored as a silent response);
- protocol (`protocol_of`): real-time description for the RTD_* splits, proactive
  reminders for the PR_* splits; both run to the clip's end (no stop rule) and carry what
  the model already said, so the steps of an item are asked in order;
- prompt (`stream_prompt`, templates `prompts/duplexeval_stream/{rtd,pr}/<variant>.txt`): the
  item's instruction (question_text, as released), the stream's span [window_start, now]
  and the model's earlier sentences ("t s: sentence", one a line; "(nothing yet)");
- reply (`parse_stream_reply`): ``SILENT`` (any case, optional surrounding punctuation) is
  silence; ``SAY: <sentence>`` is a sentence (whitespace collapsed; the first line that
  starts with SAY: counts, so a model that reasons first and then answers is read);
  anything else, an empty reply included, is ``unparsed``: counted (the steps table and
  the run summary), never read as silence and never written as a sentence;
- response file (`response_entries`, `write_response_file`): the sentences of an item in
  step order as the released `{split}/{id}.json`, an object whose ``sentences`` list holds
  ``{"text", "start", "end"}`` with start = end = the step time t_k at which the model said
  it (a text reply has no speaking time of its own). Both released scorers read those keys
  (`importers.read_stream_response`), so `omnisocial duplexeval rtd|pr`, the workflow's
  scorers and the LLM judges read a streamed model exactly like an imported one. As
  released, a point sentence's judge window is [t_k - 2, t_k - 1.5] s: the 2 s latency
  tolerance assumes speech that ends after the event, so a reply at t_k is judged against
  what the stream showed 1.5 to 2 s before it.

An item whose stream failed (a call that failed after the backend's retries) gets no
response file (`stream_model` returns its id; the rule then fails naming it, `StreamFailed`)
after every item ran and every
answer is in the cache: a partial response would be scored as a silent one. A rerun asks
only the steps not answered yet.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from omnisocial.duplexeval.contracts import RTD_SPLITS
from omnisocial.importing import nan_to_none, resolve
from omnisocial.io import write_json
from omnisocial.prompt_templates import render_prompt
from omnisocial.streaming import (
    FAILED,
    STREAM_STEPS,
    STREAM_SUMMARY,
    UTTERANCE,
    Parsed,
    Said,
    Schedule,
    StreamItem,
    StreamProtocol,
    format_time,
)
from omnisocial.streaming.protocol import SILENCE, UNPARSED
from omnisocial.tables import Column, Contract

log = logging.getLogger(__name__)

PROMPT_TASK = "duplexeval_stream"
PROTOCOLS = ("rtd", "pr")
MODALITY = "video"
BENCHMARK = "duplexeval"

_SILENT = re.compile(r"^\W*silen(?:t|ce)\W*$", re.IGNORECASE)
_SAY = re.compile(r"^\W*say\s*:\s*(.*)$", re.IGNORECASE)

# the driver's step rows with the item's split and Omni-DuplexEval id (the driver's item id
# is '<split>__<id>', a folder name)
DUPLEX_STREAM_STEPS = Contract(
    "duplexeval_stream_steps",
    (Column("split"), Column("source_item_id", doc="the item's Omni-DuplexEval id"), *STREAM_STEPS.columns),
    key=("model", "item_id", "step"),
)


class StreamFailed(RuntimeError):
    """Some item streams failed: they have no response file (a rerun resumes from the cache)."""


def protocol_of(split: str) -> str:
    """'rtd' for the real-time description splits, 'pr' for the reminder splits."""
    return "rtd" if split in RTD_SPLITS else "pr"


def streams_video(entry: Mapping) -> bool:
    """Whether an entry can be streamed here (it takes video)."""
    return MODALITY in (entry.get("modalities") or ())


def stream_id(split: str, item_id: str) -> str:
    return f"{split}__{item_id}"


def history_block(said: Sequence[Said]) -> str:
    """The model's earlier sentences, one "t s: sentence" a line ("(nothing yet)" when none)."""
    if not said:
        return "(nothing yet)"
    return "\n".join(f"{format_time(s.t)} s: {s.text}" for s in said)


def stream_prompt(
    item: Mapping, now: float, window_start: float, said: Sequence[Said], variant: str = "v1"
) -> tuple[str, str]:
    """(prompt, template sha256) of one step of `item` (module doc)."""
    return render_prompt(
        PROMPT_TASK,
        protocol_of(str(item["split"])),
        variant,
        instruction=str(item["question_text"]).strip(),
        window_start=format_time(window_start),
        now=format_time(now),
        history=history_block(said),
    )


def parse_stream_reply(text: str | None) -> Parsed:
    """Silence, a sentence (an utterance) or unparsed (module doc)."""
    lines = [line.strip() for line in str(text or "").splitlines() if line.strip()]
    for line in lines:
        match = _SAY.match(line)
        if match:
            sentence = " ".join(match.group(1).split()).strip("\"' ")
            return Parsed(UTTERANCE, sentence) if sentence else Parsed(UNPARSED)
    if len(lines) == 1 and _SILENT.match(lines[0]):
        return Parsed(SILENCE)
    return Parsed(UNPARSED)


def protocol(name: str, window_s: float | None = None, variant: str = "v1") -> StreamProtocol:
    """The RTD or PR protocol: run to the clip's end, with what the model already said."""
    if name not in PROTOCOLS:
        raise ValueError(f"unknown Omni-DuplexEval protocol {name!r}; expected one of {PROTOCOLS}")

    def prompt(item: StreamItem, t: float, history: tuple[Said, ...]) -> tuple[str, str]:
        start = item.media_start if window_s is None else max(item.media_start, t - window_s)
        return "", stream_prompt(item.context, t, start, history, variant)[0]

    return StreamProtocol(name, prompt, parse_stream_reply, False, window_s, carries_history=True)


def stream_items(items: pd.DataFrame, root, step_s: float, probe=None) -> list[StreamItem]:
    """One StreamItem per item (module doc); `probe(path) -> seconds` when video_duration is empty."""
    out, bad = [], []
    for item in items.to_dict("records"):
        name = f"{item['split']}/{item['item_id']}"
        video = str(item.get("video") or "").strip()
        if not video:
            bad.append(f"{name}: no video")
            continue
        source = resolve(root, video)
        duration = nan_to_none(item.get("video_duration"))
        if duration is None and probe is not None:
            duration = probe(source)
        if duration is None or not math.isfinite(float(duration)) or float(duration) < step_s:
            bad.append(f"{name}: duration {duration} s is shorter than one step ({step_s} s)")
            continue
        schedule = Schedule(float(step_s), float(duration), float(step_s))
        out.append(StreamItem(stream_id(item["split"], item["item_id"]), source, schedule, 0.0, item))
    if bad:
        raise ValueError("cannot stream " + "; ".join(bad))
    return out


def video_seconds(path) -> float | None:
    """The probed video duration of a clip (s), for items without video_duration."""
    from omnisocial.media.audio import probe

    return probe(path).get("video_duration")


def cut_stream_segments(
    items: pd.DataFrame, root, step_s: float, window_s: float | None, segments_root, probe=None, threads=1
) -> int:
    """Cut every item once into the segments its steps need (shared by all models); the count."""
    from omnisocial.streaming import cut_segments

    return sum(
        len(cut_segments(item, window_s, segments_root, MODALITY, threads))
        for item in stream_items(items, root, step_s, probe)
    )


def response_entries(steps: Iterable[Mapping]) -> list[dict]:
    """The released sentence entries of an item's steps (driver rows), in step order."""
    ordered = sorted(steps, key=lambda row: int(row["step"]))
    return [
        {"text": row["text"], "start": float(row["t"]), "end": float(row["t"])}
        for row in ordered
        if row["kind"] == UTTERANCE
    ]


def write_response_file(path, entries: Sequence[Mapping], meta: Mapping | None = None) -> None:
    """One item's `{split}/{id}.json`: {"sentences": [...], ...meta} (atomic, sorted keys)."""
    write_json(path, {"sentences": [dict(entry) for entry in entries], **dict(meta or {})})


def write_responses(folder, steps: pd.DataFrame, items: Sequence[StreamItem], meta: Mapping) -> list[str]:
    """Every item's response file under `folder` (`{split}/{id}.json`); the ids of failed streams
    (no file written for them)."""
    failed = []
    for item in items:
        own = steps[steps["item_id"] == item.item_id]
        if (own["kind"] == FAILED).any():
            failed.append(item.item_id)
            continue
        split, item_id = item.context["split"], item.context["item_id"]
        info = {**meta, "n_steps": len(own), "n_unparsed": int((own["kind"] == UNPARSED).sum())}
        write_response_file(
            Path(folder) / split / f"{item_id}.json", response_entries(own.to_dict("records")), info
        )
    return failed


def steps_table(steps: pd.DataFrame, items: Sequence[StreamItem]) -> pd.DataFrame:
    """The driver's steps with the split and Omni-DuplexEval id of each item."""
    by_id = {item.item_id: item.context for item in items}
    out = steps.copy()
    out.insert(0, "source_item_id", [by_id[i]["item_id"] for i in out["item_id"]])
    out.insert(0, "split", [by_id[i]["split"] for i in out["item_id"]])
    return DUPLEX_STREAM_STEPS.validate(out.reset_index(drop=True))


def stream_model(
    backend,
    entry: Mapping,
    items: pd.DataFrame,
    root,
    folder,
    *,
    step_s: float = 1.0,
    window_s: float | None = None,
    segments_root,
    cache_path,
    policy=None,
    variant: str = "v1",
    probe=None,
    progress: bool = False,
):
    """Stream one model through RTD and PR (module doc): (steps, summaries); writes the response
    files under `folder`; raises StreamFailed naming the failed item streams. The entry's
    `max_calls` is checked against the whole job (RTD and PR plans summed, each named) before
    the first call."""
    from omnisocial.streaming import stream
    from omnisocial.streaming.cost import check_job_budget, plan_calls

    all_items = stream_items(items, root, step_s, probe)
    parts = {
        name: mine
        for name in PROTOCOLS
        if (mine := [item for item in all_items if protocol_of(item.context["split"]) == name])
    }
    model = str(entry.get("name") or getattr(backend, "name", type(backend).__name__))
    plans = {name: plan_calls(model, mine, False) for name, mine in parts.items()}
    total = check_job_budget(model, plans, entry.get("max_calls"))
    log.info(
        "%s: %d planned calls for the job (%s)",
        model,
        total,
        ", ".join(f"{n} {p.calls}" for n, p in plans.items()),
    )
    part_entry = {key: value for key, value in dict(entry).items() if key != "max_calls"}  # checked above
    steps, summaries, failed = [], [], []
    for name, mine in parts.items():
        run = stream(
            backend,
            mine,
            protocol(name, window_s, variant),
            modality=MODALITY,
            segments_root=segments_root,
            cache_path=cache_path,
            entry=part_entry,
            benchmark=BENCHMARK,
            policy=policy,
            progress=progress,
        )
        meta = {"model": run.summary["model"], "step_s": step_s, "window_s": window_s, "protocol": name}
        failed += write_responses(folder, run.steps, mine, meta)
        steps.append(steps_table(run.steps, mine))
        summaries.append(run.summary)
    table = pd.concat(steps, ignore_index=True) if steps else DUPLEX_STREAM_STEPS.empty()
    summary = pd.DataFrame(summaries, columns=STREAM_SUMMARY.names)
    return table, summary, failed

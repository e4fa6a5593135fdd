"""The generated streaming demo: visual-event clips in the released Omni-DuplexEval format.

`write_duplexeval(folder, params, workdir)` writes, deterministically from the
`social.demo` parameters (`omnisocial.demo_kit.validate_params`), under `{root}/duplexeval/`:

    {root}/duplexeval/items.json                    Omni-DuplexEval items, keyed by split
    {root}/duplexeval/videos/{split}_{id}.mp4, question_audio/{split}_{id}.wav
    {root}/duplexeval/truth/events.csv              every visual change: time, kind, caption

and returns its counts for the manifest; `omnisocial.demo_kit.build_demo` runs it with the
who / when / how demo's writer into one folder.

Visual-event clips (one per split in `visual_splits`, times `visual_per_split`, 20-40 s):
numpy frames piped to ffmpeg, no audio, a static background and one change per event,
events at least `min_event_gap_s` apart, each at a frame boundary (t = frame / fps):
- RTD_counting: stars appear one at a time; RTD_OCR: a word is shown, then replaced;
  RTD_fine_grained_movement: a ball moves 1.5 s in one direction, then rests;
- PR_event_reminder: "remind me when the green square appears": it appears (reminder1),
  a blue disc appears, the square disappears, the square appears again (reminder2);
- PR_post_event_reminder: a lamp; a grey box slides in, the lamp goes off (reminder1), on,
  off again (reminder2).
Every change is listed in truth/events.csv (reminder = 1 or 2 for the reminded ones), so
the frame-difference detector can be scored against all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from omnisocial.demo_kit import (
    MOVE_S,
    _diamond,
    _disc,
    _stamp,
    encode_mp4,
    json_dump,
    speak,
    text_mask,
    write_wav,
)
from omnisocial.io import write_csv
from omnisocial.media.pipe import yuv420p

PHRASES = {"right": "to the right", "left": "to the left", "up": "up", "down": "down"}


@dataclass
class Thing:
    shape: str  # "disc", "square", "diamond", "text"
    colour: tuple[int, int, int]
    size: int
    x: float
    y: float
    text: str = ""
    visible: bool = True


@dataclass
class Change:
    frame: int
    kind: str
    text: str
    apply: object  # callable(things, frame) -> None; a movement also sets the path
    reminder: int = 0
    move: tuple | None = None  # (name, x0, y0, x1, y1, first_frame, last_frame)


def _event_frames(
    rng: np.random.Generator, n: int | None, duration: float, fps: float, gap: float
) -> list[int]:
    times = [float(rng.uniform(2.5, 4.0))]
    while True:
        following = times[-1] + float(rng.uniform(gap, gap + 2.0))
        if following > duration - 3.0 or (n is not None and len(times) >= n):
            break
        times.append(following)
    return [int(round(t * fps)) for t in times]


def _visual_plan(split: str, rng: np.random.Generator, p: dict) -> tuple[float, dict, list[Change], dict]:
    """(duration, named things at the start, changes, item texts) of one visual clip."""
    fps = float(p["video"]["fps"])
    width, height = int(p["video"]["width"]), int(p["video"]["height"])
    lo, hi = (float(v) for v in p["visual_duration_s"])
    gap = float(p["min_event_gap_s"])
    if split.startswith("PR_"):
        lo = max(lo, 4.0 + 3 * (gap + 2.0) + 3.1)  # four events fit whatever the draws
        hi = max(hi, lo + 1.0)
    duration = round(float(rng.uniform(lo, hi)), 1)
    things: dict[str, Thing] = {}
    changes: list[Change] = []

    def show(name: str, visible: bool):
        def apply(state, frame):
            state[name].visible = visible

        return apply

    if split == "RTD_counting":
        frames = _event_frames(rng, 5, duration, fps, gap)
        slots = [
            (x, y) for y in (int(height * 0.3), int(height * 0.65)) for x in np.linspace(20, width - 32, 4)
        ]
        order = rng.permutation(len(slots))
        for count, frame in enumerate(frames, start=1):
            x, y = slots[int(order[count - 1])]
            name = f"star{count}"
            things[name] = Thing("diamond", (250, 220, 60), 14, float(x), float(y), visible=False)
            noun = "star is" if count == 1 else "stars are"
            changes.append(Change(frame, "appear", f"Now {count} {noun} on the screen.", show(name, True)))
        n = len(frames)
        texts = {
            "question_text": "Tell me how many stars are on the screen every time the number changes.",
            "answer1": f"Stars appear one at a time until there are {n} stars on the screen.",
            "answer2": f"The number of stars goes up one by one from one to {n}.",
        }
    elif split == "RTD_OCR":
        frames = _event_frames(rng, 4, duration, fps, gap)
        words = [
            str(w)
            for w in rng.choice(
                ["OPEN", "SALE", "EXIT", "STOP", "CAFE", "PARK", "TAXI"], len(frames), replace=False
            )
        ]
        for k, (frame, word) in enumerate(zip(frames, words, strict=True)):
            name = f"word{k}"
            things[name] = Thing(
                "text", (255, 255, 255), 3, 0.0, float(height * 0.35), text=word, visible=False
            )

            def swap(state, _frame, k=k):
                for j in range(len(words)):
                    state[f"word{j}"].visible = j == k

            changes.append(Change(frame, "text", f'The word "{word}" is shown on the screen.', swap))
        listed = ", ".join(words[:-1]) + f" and {words[-1]}" if len(words) > 1 else words[0]
        texts = {
            "question_text": "Read out any text that appears on the screen.",
            "answer1": f"The screen shows the words {listed}, one after another.",
            "answer2": f"Words appear in turn on the screen: {', '.join(words)}.",
        }
    elif split == "RTD_fine_grained_movement":
        frames = _event_frames(rng, 5, duration, fps, gap)
        size = 18
        x, y = width / 2 - size / 2, height / 2 - size / 2
        things["ball"] = Thing("disc", (255, 90, 70), size, x, y)
        reach = (width * 0.3, height * 0.25)  # how far one movement goes, across and up or down
        moves = []
        for frame in frames:
            options = []
            for direction, dx, dy in (("right", 1, 0), ("left", -1, 0), ("up", 0, -1), ("down", 0, 1)):
                nx, ny = x + dx * reach[0], y + dy * reach[1]
                if 2 <= nx <= width - size - 2 and 2 <= ny <= height - size - 2:
                    options.append((direction, nx, ny))
            direction, nx, ny = options[int(rng.integers(len(options)))]
            last = frame + int(round(MOVE_S * fps))
            moves.append((direction, x, y, nx, ny))
            changes.append(
                Change(
                    frame,
                    "move",
                    f"The red ball moves {PHRASES[direction]}.",
                    None,
                    0,
                    ("ball", x, y, nx, ny, frame, last),
                )
            )
            x, y = nx, ny
        directions = ", then ".join(PHRASES[m[0]] for m in moves)
        texts = {
            "question_text": "Describe every movement of the red ball.",
            "answer1": f"The red ball moves {directions}, resting in between.",
            "answer2": f"The ball makes {len(moves)} short moves: {directions}.",
        }
    elif split == "PR_event_reminder":
        frames = _event_frames(rng, 4, duration, fps, gap)
        things["square"] = Thing(
            "square", (40, 200, 70), 18, float(width * 0.2), float(height * 0.3), visible=False
        )
        things["disc"] = Thing(
            "disc", (60, 90, 230), 18, float(width * 0.65), float(height * 0.55), visible=False
        )
        plan = [
            ("appear", "The green square appears.", show("square", True), 1),
            ("appear", "A blue disc appears.", show("disc", True), 0),
            ("disappear", "The green square disappears.", show("square", False), 0),
            ("appear", "The green square appears again.", show("square", True), 2),
        ]
        changes = [
            Change(f, kind, text, fn, rem) for f, (kind, text, fn, rem) in zip(frames, plan, strict=True)
        ]
        texts = {
            "question_text": "Remind me every time the green square appears.",
            "answer1": "The green square has appeared.",
            "answer2": "The green square has appeared.",
        }
    elif split == "PR_post_event_reminder":
        frames = _event_frames(rng, 4, duration, fps, gap)
        things["lamp"] = Thing("disc", (255, 230, 90), 22, float(width * 0.15), float(height * 0.15))
        things["box"] = Thing(
            "square", (150, 150, 150), 20, float(width * 0.6), float(height * 0.6), visible=False
        )

        def lamp(on: bool):
            def apply(state, _frame):
                state["lamp"].colour = (255, 230, 90) if on else (70, 60, 40)

            return apply

        plan = [
            ("appear", "A grey box appears.", show("box", True), 0),
            ("change", "The lamp switches off.", lamp(False), 1),
            ("change", "The lamp switches on.", lamp(True), 0),
            ("change", "The lamp switches off again.", lamp(False), 2),
        ]
        changes = [
            Change(f, kind, text, fn, rem) for f, (kind, text, fn, rem) in zip(frames, plan, strict=True)
        ]
        texts = {
            "question_text": "After the lamp switches off, remind me to close the window.",
            "answer1": "The lamp is off, so remember to close the window.",
            "answer2": "The lamp is off, so remember to close the window.",
        }
    else:  # pragma: no cover - validate_params rejects other splits
        raise ValueError(split)
    return duration, things, changes, texts


def _draw(frame: np.ndarray, thing: Thing) -> None:
    if not thing.visible:
        return
    x, y = int(round(thing.x)), int(round(thing.y))
    if thing.shape == "text":
        mask = text_mask(thing.text, thing.size)
        _stamp(frame, mask, (frame.shape[1] - mask.shape[1]) // 2, y, thing.colour)
        return
    mask = {"disc": _disc, "diamond": _diamond}.get(thing.shape, lambda s: np.ones((s, s), dtype=bool))(
        thing.size
    )
    _stamp(frame, mask, x, y, thing.colour)


def _visual_clip(split: str, number: int, index: int, p: dict, folder: Path, workdir: Path):
    rng = np.random.default_rng([int(p["seed"]), 3, index])
    duration, things, changes, texts = _visual_plan(split, rng, p)
    fps = float(p["video"]["fps"])
    width, height = int(p["video"]["width"]), int(p["video"]["height"])
    n_frames = int(round(duration * fps))
    background = np.empty((height, width, 3), dtype=np.uint8)
    shade = np.linspace(40, 70, height, dtype=np.float64)[:, None]
    background[..., 0] = np.round(shade * 0.5).astype(np.uint8)
    background[..., 1] = np.round(shade * 0.7).astype(np.uint8)
    background[..., 2] = np.round(shade * 1.4).astype(np.uint8)
    by_frame: dict[int, list[Change]] = {}
    for change in changes:
        by_frame.setdefault(change.frame, []).append(change)
    moving: list[tuple] = []
    out = []
    for i in range(n_frames):
        for change in by_frame.get(i, []):
            if change.move is not None:
                moving.append(change.move)
            else:
                change.apply(things, i)
        for name, x0, y0, x1, y1, first, last in moving:
            share = min(1.0, (i - first + 1) / (last - first))
            things[name].x, things[name].y = x0 + (x1 - x0) * share, y0 + (y1 - y0) * share
        moving = [m for m in moving if i < m[6]]
        frame = background.copy()
        for thing in things.values():
            _draw(frame, thing)
        out.append(yuv420p(frame))
    item_id = f"{split.split('_', 1)[1].lower()}_{number:02d}"
    video_rel = f"videos/{item_id}.mp4"
    audio_rel = f"question_audio/{item_id}.wav"
    encode_mp4(folder / video_rel, b"".join(out), n_frames, p["video"], workdir)
    question = speak(
        "en+f3", 55, 165, texts["question_text"], workdir / "question.wav", int(p["sample_rate"])
    )
    write_wav(folder / audio_rel, question, int(p["sample_rate"]))
    reminders = {c.reminder: round(c.frame / fps, 6) for c in changes if c.reminder}
    item = {
        "id": item_id,
        **texts,
        "reminder1": reminders.get(1),
        "reminder2": reminders.get(2),
        "video_type": "synthetic",
        "video_duration": duration,
        "video": video_rel,
        "question_audio": audio_rel,
    }
    events = [
        {
            "split": split,
            "item_id": item_id,
            "event_index": k,
            "t": round(change.frame / fps, 6),
            "kind": change.kind,
            "text": change.text,
            "reminder": change.reminder,
        }
        for k, change in enumerate(sorted(changes, key=lambda c: c.frame))
    ]
    return item, events


def write_duplexeval(duplex: Path, p: dict, work: Path) -> dict:
    """The visual-event clips and Omni-DuplexEval files under `duplex` (module doc); their counts."""
    items: dict[str, list] = {}
    events: list[dict] = []
    index = 0
    for split in p["visual_splits"]:
        for number in range(int(p["visual_per_split"])):
            item, rows = _visual_clip(split, number, index, p, duplex, work)
            items.setdefault(split, []).append(item)
            events += rows
            index += 1
    json_dump(duplex / "items.json", items)
    columns = ["split", "item_id", "event_index", "t", "kind", "text", "reminder"]
    write_csv(duplex / "truth" / "events.csv", pd.DataFrame(events, columns=columns))
    return {"stream_items": sum(len(v) for v in items.values()), "visual_events": len(events)}

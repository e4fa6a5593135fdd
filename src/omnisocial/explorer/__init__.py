"""The results explorer: one static page per run where every item of every benchmark stands
beside its stimulus, with the truth and every answer given to it (docs/explorer.md).

This shared layer knows no benchmark: each benchmark package builds its own items
(`familiarity.explorer`, `socialomni.explorer`, `duplexeval.explorer`) as plain dicts of the
shape below, and `write_explorer` writes the folder:

- `index.html`, `explorer.js`, `explorer.css`: the page (plain JavaScript, nothing loaded from
  another site, so it opens from the file system and through `omnisocial explore`);
- `items.js`: the items' index, what the list and the filters read (one
  `window.EXPLORER_DATA = JSON.parse("...")` assignment: a `<script>` loads it, which a browser
  allows from file:// where fetching a JSON file is refused), and `details/NNNN.js`: the
  answers, timelines and facts of 25 items each, loaded by a `<script>` when one of them is shown;
- `media/`: every stimulus an item links to, hard-linked (copied across file systems) under a
  name made of its sha256 prefix, so the folder is self-contained and a clip shared by several
  items is stored once. The page sets a player's `src` only when its item is shown.

An item: `id` (unique, the URL hash), `benchmark`, `title`, `truth`, `modalities`,
`media` [{kind: video|audio|text, label, src (a path on this machine, rewritten to the copy),
start, end}], optional `transcript`, `question`, `options`, `answers` [{rater, type:
human|crowd|model|judge, modality, answer, correct, status, reason, confidence, text, score}],
`timeline` {start, end, tracks: [{label, spans: [[start, end, text]], points: [[t, text, kind]]}],
marks: [[t, label]]}, `facts` [[name, value]], `difficulty` (or null) and `flags` {name: bool}.
"""

from __future__ import annotations

import html
import json
import math
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

from omnisocial.io import atomic_path, sha256_file, write_text

ASSETS = Path(__file__).resolve().parent / "assets"
PAGE_FILES = ("index.html", "explorer.js", "explorer.css")
DATA_FILE = "items.js"
DETAIL_DIR = "details"
CHUNK = 25  # items a detail file holds
MEDIA_DIR = "media"
# the flags every item carries (false where a benchmark has no such pair), the page's filters
FLAGS = {
    "models_vs_humans": "the best model and the human crowd disagree",
    "models_disagree": "models disagree with each other",
    "judges_disagree": "judges disagree with each other",
}


def clean(value):
    """JSON-safe: NaN and infinities become null (JSON has no NaN), numpy scalars plain numbers."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()  # numpy scalar
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _link(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or links not allowed
        shutil.copy2(source, target)


class MediaStore:
    """Stimuli copied once each into `folder/media` (hard links where possible)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.by_source: dict[Path, str] = {}
        self.missing: list[str] = []

    def add(self, source: str | os.PathLike) -> str | None:
        """The page-relative path of `source`'s copy; None (counted in `missing`) when absent."""
        path = Path(source).resolve()
        if path in self.by_source:
            return self.by_source[path]
        if not path.is_file():
            self.missing.append(str(source))
            return None
        name = f"{sha256_file(path)[:16]}{path.suffix.lower()}"
        target = self.folder / MEDIA_DIR / name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            _link(path, target)
        self.by_source[path] = f"{MEDIA_DIR}/{name}"
        return self.by_source[path]


def _with_media(items: list[dict], store: MediaStore) -> list[dict]:
    for item in items:
        kept = []
        for media in item.get("media", []):
            src = store.add(media["src"])
            if src is None:
                item.setdefault("notes", []).append(f"stimulus missing: {media['src']}")
                continue
            kept.append({**media, "src": src})
        item["media"] = kept
    return items


INDEX_FIELDS = ("id", "benchmark", "title", "truth", "modalities", "difficulty", "flags")


def answer(
    rater: str,
    kind: str,
    modality: str,
    given,
    *,
    correct: bool | None = None,
    status: str = "answered",
    reason: str = "",
    confidence: float | None = None,
    score: float | None = None,
    text: str = "",
) -> dict:
    """One entry of an item's `answers`: who (`rater`, of `kind` human, crowd, model or judge)
    answered what (`given`) in which modality, and how it stands."""
    return {
        "rater": rater,
        "type": kind,
        "modality": modality,
        "answer": given,
        "correct": correct,
        "status": status,
        "reason": reason,
        "confidence": confidence,
        "score": score,
        "text": text,
    }


def _compact(answer: dict) -> dict:
    """An answer without its empty fields (the page reads a missing one as empty)."""
    return {k: v for k, v in clean(answer).items() if v is not None and v != ""}


def indexed(item: dict) -> tuple[dict, dict]:
    """(what the list and the filters read of an item, the rest: its `detail`). The page loads an
    item's detail file only when the item is shown: at 2,000 items x 12 models, reading every
    answer at load took most of the 2 s budget (benchmarks/bench_explorer.py)."""
    answers = item.get("answers", [])
    models = sorted({a["rater"] for a in answers if a.get("type") == "model"})
    status: dict[str, list[str]] = {}
    for a in answers:
        if a.get("type") == "model" and a.get("status"):
            status.setdefault(a["rater"], [])
            if a["status"] not in status[a["rater"]]:
                status[a["rater"]].append(a["status"])
    words = [item.get("question") or "", *(f"{k} {v}" for k, v in item.get("facts", []))]
    detail = {k: v for k, v in item.items() if k not in INDEX_FIELDS}
    detail["answers"] = [_compact(a) for a in answers]
    index = {
        **{k: item.get(k) for k in INDEX_FIELDS},
        "models": models,
        "status": status,
        "statuses": sorted({a["status"] for a in answers if a.get("status")}),
        "wrong": sum(a.get("correct") is False for a in answers),
        "search": " ".join(w for w in words if w),
    }
    return index, detail


def _js(value) -> str:
    return json.dumps(clean(value), separators=(",", ":"), ensure_ascii=False, allow_nan=False)


# benchmarks whose truth is a reference text (the how task's true next utterance, the streaming
# reference answer), not a label: the truth filter does not offer them (issue 60)
FREE_TEXT_TRUTH = ("how", "streaming")


def truth_choice(item: Mapping) -> str:
    """The truth filter's value of an item: `benchmark: truth` (a label means something only within
    its benchmark); "" for a benchmark whose truth is free text (FREE_TEXT_TRUTH)."""
    if item["benchmark"] in FREE_TEXT_TRUTH:
        return ""
    return f"{item['benchmark']}: {item.get('truth', '')}"


def summarise(items: list[dict]) -> dict:
    """What the page's filters offer: benchmarks, models, modalities, statuses, truths (each as
    `truth_choice`, free-text truths left out)."""
    sets: dict[str, set] = {
        "benchmark": set(),
        "model": set(),
        "modality": set(),
        "status": set(),
        "truth": set(),
    }
    for item in items:
        sets["benchmark"].add(item["benchmark"])
        if truth_choice(item):
            sets["truth"].add(truth_choice(item))
        sets["modality"].update(item.get("modalities", []))
        for answer in item.get("answers", []):
            if answer.get("type") == "model":
                sets["model"].add(answer["rater"])
            if answer.get("status"):
                sets["status"].add(answer["status"])
    return {name: sorted(values) for name, values in sets.items()}


def write_explorer(
    items: Iterable[dict], folder: str | os.PathLike, *, title: str, notes: Iterable[str] = ()
) -> dict:
    """Write the explorer of `items` into `folder`; returns counts (items per benchmark, media,
    missing stimuli). Item ids must be unique: a duplicate is a builder's bug, raised."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    items = list(items)
    seen: set[str] = set()
    for item in items:
        if item["id"] in seen:
            raise ValueError(f"explorer: item id {item['id']!r} given twice")
        seen.add(item["id"])
        item.setdefault("flags", {})
        for flag in FLAGS:
            item["flags"].setdefault(flag, False)
    store = MediaStore(folder)
    items = _with_media(items, store)
    counts: dict[str, int] = {}
    for item in items:
        counts[item["benchmark"]] = counts.get(item["benchmark"], 0) + 1
    notes = list(notes)
    if store.missing:
        notes.append(f"{len(store.missing)} stimulus file(s) missing, left out of their items")
    data = {
        "title": title,
        "flags": FLAGS,
        "filters": summarise(items),
        "counts": counts,
        "notes": notes,
        "items": [],
    }
    # the details in files of CHUNK items each: `details/0003.js` calls EXPLORER_DETAIL(3, {id: detail})
    shutil.rmtree(folder / DETAIL_DIR, ignore_errors=True)
    (folder / DETAIL_DIR).mkdir()
    for first in range(0, len(items), CHUNK):
        chunk, details = first // CHUNK, {}
        for item in items[first : first + CHUNK]:
            index, details[item["id"]] = indexed(item)
            data["items"].append({**index, "chunk": chunk})
        write_text(folder / DETAIL_DIR / f"{chunk:04d}.js", f"EXPLORER_DETAIL({chunk}, {_js(details)});\n")
    text = _js(data)
    # a JSON string handed to JSON.parse: V8 parses that much faster than the same object literal
    write_text(
        folder / DATA_FILE, f"window.EXPLORER_DATA = JSON.parse({json.dumps(text, ensure_ascii=False)});\n"
    )
    for name in PAGE_FILES:
        with atomic_path(folder / name) as tmp:
            shutil.copyfile(ASSETS / name, tmp)
    return {
        "items": len(items),
        "per_benchmark": counts,
        "media": len(set(store.by_source.values())),
        "missing": store.missing,
    }


def write_link_page(path: str | os.PathLike, folder: str | os.PathLike, counts: dict) -> None:
    """A one-page pointer to the explorer in `folder` (the Snakemake report's entry: an HTML report
    holds single files, not a folder): its items per benchmark, a link relative to `path`, the
    absolute file address on this machine and the command that serves it."""
    folder = Path(folder).resolve()
    relative = os.path.relpath(folder / "index.html", Path(path).resolve().parent)
    rows = "".join(
        f"<li>{html.escape(name)}: {n} items</li>" for name, n in sorted(counts["per_benchmark"].items())
    )
    missing = len(counts["missing"])
    text = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>results explorer</title></head><body>"
        "<h3>The results explorer</h3><p>Every item of every benchmark beside its stimulus, the truth "
        f"and every answer.</p><ul>{rows}</ul>"
        + (f"<p><b>{missing} stimulus file(s) missing</b>, left out of their items.</p>" if missing else "")
        + f"<p>Open <a href='{html.escape(relative)}' target='_blank'>{html.escape(relative)}</a> (beside "
        f"this page), or <a href='{html.escape((folder / 'index.html').as_uri())}' target='_blank'>"
        f"{html.escape(str(folder / 'index.html'))}</a> on the machine that ran the workflow, or serve it: "
        f"<code>omnisocial explore {html.escape(str(folder))}</code></p></body></html>\n"
    )
    write_text(path, text)

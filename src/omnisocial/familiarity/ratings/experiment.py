"""The rating study as a browser experiment (jsPsych), one self-contained folder per modality.

`build_experiment` (rule rating_experiment) turns one experiment's design (its blocks, rater
assignments and survey lists, `omnisocial.familiarity.ratings.design`) and its stimuli into a
folder the collection server (`omnisocial.familiarity.ratings.collect`) serves:

    index.html          the page: jsPsych, its plugins and the experiment's own scripts
    study.json          what the page shows (texts, answer labels and keys, replays, practice,
                        attention checks, questionnaires, completion), from ratings.experiment
    lists.json          every rater's list: {list_id: {blocks, trials: [{order, dyad_id, stimulus,
                        shown}]}}, the server's allocation and record checks read it; `shown` is
                        the identity of what the trial shows (`frozen.shown_key`: interaction,
                        clip window, the stimulus's SHA-256), stored with every rating
    build.json          jsPsych and plugin versions, the stimuli's hashes, the collection
                        server's settings (raters_per_list, max_body_bytes) and the design keys
                        the lists were made with (`frozen.design_keys`)
    jspsych/            jsPsych and the plugins as npm installed them (package-lock.json pins them)
    app/                the rating plugin (stimulus, playback to its end, forced choice), the
                        experiment script and its style sheet
    stimuli/            the list's stimuli (`{modality}/{dyad_id}.*`) and the practice stimuli
                        (`practice/`), copied from the stimuli folder: nothing is fetched from
                        another site at run time

A list is a rater of the design (`rater_id`, e.g. T001), with the blocks the design gives it;
the trials keep the survey list's order. The folder is written next to its final place and
renamed into it, so a failed build leaves the previous one.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from omnisocial.familiarity.ratings.design import ASSIGNMENTS, BLOCKS, MODALITIES, SURVEY_LIST
from omnisocial.familiarity.ratings.frozen import shown_key
from omnisocial.io import sha256_file, write_json

WEB_DIR = Path(__file__).resolve().parent / "web"
APP_FILES = ("plugin-rating.js", "experiment.js", "style.css")
# npm package -> the global its browser build defines; loaded in this order
JSPSYCH_PACKAGES = (
    "jspsych",
    "@jspsych/plugin-html-button-response",
    "@jspsych/plugin-instructions",
    "@jspsych/plugin-preload",
    "@jspsych/plugin-survey-likert",
    "@jspsych/plugin-call-function",
)
PRACTICE_DIR = "practice"


class ExperimentError(ValueError):
    """The design, stimuli or settings cannot make an experiment; the message says which."""


def _browser_build(package_dir: Path) -> Path:
    path = package_dir / "dist" / "index.browser.min.js"
    if not path.is_file():
        raise ExperimentError(f"{path} is missing: run `make web-deps` (npm ci) to install jsPsych")
    return path


def _copy_script(source: Path, target: Path) -> None:
    """A browser build without its source-map comment (it names a CDN address)."""
    lines = source.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if not line.startswith("//# sourceMappingURL=")]
    target.write_text("\n".join(kept) + "\n", encoding="utf-8")


def copy_jspsych(jspsych_dir: str | os.PathLike, target: Path) -> dict[str, str]:
    """jsPsych's and the plugins' browser builds into `target`; returns {package: version}."""
    root = Path(jspsych_dir)
    target.mkdir(parents=True, exist_ok=True)
    versions = {}
    for package in JSPSYCH_PACKAGES:
        package_dir = root / package
        manifest = package_dir / "package.json"
        if not manifest.is_file():
            raise ExperimentError(
                f"{manifest} is missing: run `make web-deps` (npm ci) to install jsPsych and its plugins"
            )
        versions[package] = json.loads(manifest.read_text(encoding="utf-8"))["version"]
        _copy_script(_browser_build(package_dir), target / f"{package.rsplit('/', 1)[-1]}.js")
    css = root / "jspsych" / "css" / "jspsych.css"
    shutil.copyfile(css, target / "jspsych.css")
    return versions


def read_lists(surveys_dir: str | os.PathLike, modality: str) -> dict[str, pd.DataFrame]:
    """rater_id -> SURVEY_LIST frame, from `{surveys_dir}/{modality}/{rater_id}.csv`."""
    folder = Path(surveys_dir) / modality
    paths = sorted(folder.glob("*.csv"))
    if not paths:
        raise ExperimentError(f"{folder}: no survey list (rule rating_design writes them)")
    return {path.stem: SURVEY_LIST.read(path) for path in paths}


def list_plan(
    lists: Mapping[str, pd.DataFrame], assignments: pd.DataFrame, blocks: pd.DataFrame
) -> dict[str, dict]:
    """{list_id: {blocks, trials}} with every list checked against the design's blocks."""
    frame = ASSIGNMENTS.validate(assignments)
    block_of = BLOCKS.validate(blocks).set_index("dyad_id")["block"]
    plan = {}
    for list_id, table in sorted(lists.items()):
        assigned = sorted(int(b) for b in frame.loc[frame["rater_id"] == list_id, "block"])
        if not assigned:
            raise ExperimentError(f"survey list {list_id}: no such rater in the assignments")
        unknown = sorted(set(table["dyad_id"]) - set(block_of.index))
        if unknown:
            raise ExperimentError(f"survey list {list_id}: dyad(s) {unknown} are in no block")
        outside = sorted({int(block_of[d]) for d in table["dyad_id"]} - set(assigned))
        if outside:
            raise ExperimentError(f"survey list {list_id}: dyads of block(s) {outside} it is not assigned")
        trials = [
            {"order": int(row.order), "dyad_id": str(row.dyad_id), "stimulus": f"stimuli/{row.stimulus}"}
            for row in table.sort_values("order").itertuples(index=False)
        ]
        plan[list_id] = {"blocks": assigned, "trials": trials}
    return plan


def _questionnaires(settings: Sequence[Mapping]) -> list[dict]:
    names = [q["name"] for q in settings]
    if len(set(names)) != len(names):
        raise ExperimentError(f"ratings.experiment.questionnaires: a name is used twice ({names})")
    ids = [item["id"] for q in settings for item in q["items"]]
    if len(set(ids)) != len(ids):
        raise ExperimentError(f"ratings.experiment.questionnaires: an item id is used twice ({ids})")
    return [
        {
            "name": q["name"],
            "scale": q.get("scale", ""),
            "preamble": q.get("preamble", ""),
            "labels": list(q["labels"]),
            "items": [
                {"id": i["id"], "text": i["text"], "reverse": bool(i.get("reverse", False))}
                for i in q["items"]
            ],
        }
        for q in settings
    ]


def study_settings(settings: Mapping, modality: str, practice: Sequence[dict]) -> dict:
    """study.json: what the page shows, from a ratings.experiment config (defaults filled in)."""
    choices = settings["choices"]
    for name in ("familiar", "stranger"):
        key = choices[name]["key"]
        if key and (not key.isprintable() or key.isspace()):
            raise ExperimentError(f"ratings.experiment.choices.{name}.key: {key!r} is not a key")
    if (
        choices["familiar"]["key"]
        and choices["familiar"]["key"].lower() == choices["stranger"]["key"].lower()
    ):
        raise ExperimentError("ratings.experiment.choices: familiar and stranger have the same key")
    instructions = settings["instructions"]
    pages = list(instructions["pages"])
    pages.insert(max(len(pages) - 1, 0), instructions["modality"][modality])
    return {
        "modality": modality,
        "title": settings["title"],
        "consent": dict(settings["consent"]),
        "instructions": {"pages": pages, "next": instructions["next"], "previous": instructions["previous"]},
        "question": settings["question"],
        "choices": [
            {"value": name, "label": choices[name]["label"], "key": choices[name]["key"]}
            for name in ("familiar", "stranger")
        ],
        "max_replays": int(settings["max_replays"]),
        "labels": dict(settings["labels"]),
        "practice": list(practice),
        "practice_end_html": settings["practice_end_html"],
        "attention_checks": [dict(check) for check in settings["attention_checks"]],
        "questionnaires": _questionnaires(settings["questionnaires"]),
        "completion": dict(settings["completion"]),
        "messages": dict(settings["messages"]),
    }


def _copy_file(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)  # the same bytes without a second copy where the file system allows
    except OSError:
        shutil.copyfile(source, target)


def _copy_stimuli(plan: Mapping[str, dict], media_dir: Path, out_dir: Path) -> dict[str, str]:
    hashes = {}
    for path in sorted({t["stimulus"] for entry in plan.values() for t in entry["trials"]}):
        source = media_dir / path.removeprefix("stimuli/")
        if not source.is_file():
            raise ExperimentError(f"stimulus {source} is missing (rule render_stimuli writes it)")
        _copy_file(source, out_dir / path)
        hashes[path] = sha256_file(source)
    return hashes


def _add_shown(plan: Mapping[str, dict], hashes: Mapping[str, str], design: pd.DataFrame | None) -> None:
    """Each trial's `shown` identity: its interaction, clip window and stimulus hash."""
    window = None if design is None else design.set_index("dyad_id")
    for entry in plan.values():
        for trial in entry["trials"]:
            dyad = trial["dyad_id"]
            if window is None:
                parts = (dyad, 0.0, 0.0)
            elif dyad not in window.index:
                raise ExperimentError(f"dyad {dyad} of the lists is not in the design")
            else:
                row = window.loc[dyad]
                parts = (row["interaction_id"], row["clip_start"], row["clip_end"])
            trial["shown"] = shown_key(*parts, hashes[trial["stimulus"]])


def _copy_practice(paths: Sequence[str], out_dir: Path, design_dyads: set[str]) -> list[dict]:
    practice = []
    for given in paths:
        source = Path(given)
        if not source.is_file():
            raise ExperimentError(f"ratings.experiment.practice: {source} is not a file")
        if source.stem in design_dyads:
            raise ExperimentError(f"ratings.experiment.practice: {source.name} has the id of a design dyad")
        relative = f"stimuli/{PRACTICE_DIR}/{source.name}"
        _copy_file(source, out_dir / relative)
        practice.append({"id": source.stem, "stimulus": relative})
    ids = [p["id"] for p in practice]
    if len(set(ids)) != len(ids):
        raise ExperimentError(f"ratings.experiment.practice: two files share an id ({ids})")
    return practice


def _index_html(title: str) -> str:
    scripts = [f"jspsych/{p.rsplit('/', 1)[-1]}.js" for p in JSPSYCH_PACKAGES]
    scripts += ["app/plugin-rating.js", "app/experiment.js"]
    tags = "\n".join(f'    <script src="{s}" defer></script>' for s in scripts)
    template = (WEB_DIR / "index.html").read_text(encoding="utf-8")
    return template.replace("__TITLE__", _html_escape(title)).replace("__SCRIPTS__", tags)


def _html_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def build_experiment(
    modality: str,
    lists: Mapping[str, pd.DataFrame],
    assignments: pd.DataFrame,
    blocks: pd.DataFrame,
    media_dir: str | os.PathLike,
    settings: Mapping,
    jspsych_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    design: pd.DataFrame | None = None,
    design_keys: Mapping | None = None,
) -> dict:
    """Write one modality's experiment folder (module docstring); returns its build.json.

    `lists` are the modality's survey lists (`read_lists`), `assignments` its raters' blocks
    (ASSIGNMENTS), `media_dir` the stimuli's media folder, `settings` a ratings.experiment
    config with the schema's defaults filled in, `design` the DESIGN frame (each trial's
    interaction and clip window for its `shown` identity; without it the dyad id stands for
    the interaction and the window is 0-0), `design_keys` the configuration the lists were made
    with (recorded in build.json; the collection server freezes it at the first session).
    """
    if modality not in MODALITIES:
        raise ExperimentError(f"modality must be one of {MODALITIES}, got {modality!r}")
    plan = list_plan(lists, assignments, blocks)
    target = Path(out_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    staging.chmod(0o755)  # a web server running as another user reads it
    try:
        versions = copy_jspsych(jspsych_dir, staging / "jspsych")
        (staging / "app").mkdir()
        for name in APP_FILES:
            shutil.copyfile(WEB_DIR / name, staging / "app" / name)
        hashes = _copy_stimuli(plan, Path(media_dir), staging)
        _add_shown(plan, hashes, design)
        design_dyads = set(BLOCKS.validate(blocks)["dyad_id"])
        practice = _copy_practice(settings["practice"][modality], staging, design_dyads)
        write_json(staging / "study.json", study_settings(settings, modality, practice))
        write_json(staging / "lists.json", plan)
        (staging / "index.html").write_text(_index_html(settings["title"]), encoding="utf-8")
        build = {
            "modality": modality,
            "lists": len(plan),
            "trials": sum(len(entry["trials"]) for entry in plan.values()),
            "practice": [p["id"] for p in practice],
            "jspsych": versions,
            "server": {key: int(settings[key]) for key in ("raters_per_list", "max_body_bytes")},
            "stimuli_sha256": hashes,
            "design_keys": dict(design_keys or {}),
        }
        write_json(staging / "build.json", build)
        old = target.with_name(f".{target.name}.old")
        if target.exists():
            shutil.rmtree(old, ignore_errors=True)
            target.rename(old)
        staging.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return build

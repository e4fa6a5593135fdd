"""Collected answers stay bound to what their raters saw; raters are pseudonyms outside the data.

What was shown
--------------
A dyad id (D012) is a label the design gives a sampled clip; a rebuilt design (another
`sampling.seed`, filter, clip window, corpus or stimulus setting) may give it to another
conversation. Every answer therefore carries the identity of what was shown, `shown_key`:
the interaction, the clip window and the SHA-256 of the stimulus file
(`I004@12.480-32.480#<sha256>`). The built experiment's lists carry it per trial
(lists.json), the collection server stores it in every rating record, the JATOS page appends
it to every rating, and the import turns it into the current design's dyad id: an answer
whose identity the current design does not show is `unknown_dyad` (lost, counted, and over
the budget the import fails), never re-pointed.

The design a collection was made with is recorded once, at its first answer's arrival:

- the collection server writes `{collected}/{modality}/design.json` when it starts (the
  build's design keys and every list's trials with their identity); a rebuilt experiment
  whose lists show something else than the lists sessions were collected on refuses to
  start;
- rule import_ratings writes `<export>.design.json` beside each survey export
  (`ratings.exports.<modality>`) at its first import (the design keys and every dyad id's
  identity per modality), so an export's labels resolve through the design they were
  collected on; rule collect_ratings writes one beside each JATOS result export (whose
  records carry their identity themselves), and into a data folder of an older server.
  A release's ratings (study.design_source release) keep the release's own dyad ids and
  rater codes: no record, no pseudonym.

`check_design` (run when the workflow is parsed, before any job, also for `snakemake -n`)
compares `design_keys` of the configuration with every record of a collection holding
answers and stops, naming the collection, the keys that changed (collected value -> now) and
the two ways forward (`WAYS_FORWARD`). Analysis settings are no design keys: they rerun as
before.

Pseudonyms
----------
Prolific ids (PROLIFIC_PID) stay in the collected data. Every derived table names a rater
by `pseudonym`: "R" + the first 16 hex digits of HMAC-SHA256(key, id), with a random 32-byte
key created once per study in the collected folder (`PSEUDONYM_KEY`: the server's data
folder, else the folder of the first JATOS or survey export). The same key gives the same
pseudonym on every rerun; without the key a pseudonym cannot be turned back into an id.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import pandas as pd

from omnisocial.familiarity.contracts import MODALITIES

# Configuration that decides what a survey list shows: the corpus and everything that picks,
# cuts and renders its clips, and the rating design's deal of the dyads into lists.
DESIGN_KEYS = (
    "study",
    "release",
    "demo",
    "corpus",
    "asr",
    "vad",
    "signals",
    "filters",
    "clips",
    "sampling",
    "stimuli",
    "ratings.seed",
    "ratings.n_blocks",
    "ratings.blocks_per_rater",
)
DESIGN_RECORD = "design.json"  # in {collected}/{modality}/, and as <export>.design.json
PSEUDONYM_KEY = "pseudonym.key"
WAYS_FORWARD = (
    "Ways forward (docs/rating-experiment.md#after-collection):\n"
    "  - keep the collected design: set the keys above back to their collected values (analysis,\n"
    "    model and figure settings may change freely; they rerun as before);\n"
    "  - or start a new collection for the new design: a new `results` folder and a new, empty\n"
    "    ratings.experiment.collected folder (survey exports: new export files), then\n"
    "    `snakemake survey_materials` and collect again; the collected study stays as it is."
)


class DesignChangedError(ValueError):
    """The configuration would change what a list showed after answers were collected."""


def shown_key(interaction_id, clip_start, clip_end, sha256: str) -> str:
    """The identity of a shown stimulus: interaction, clip window (seconds, to the millisecond)
    and the file's SHA-256."""
    return f"{interaction_id}@{float(clip_start):.3f}-{float(clip_end):.3f}#{sha256}"


def _leaves(value, prefix: str) -> dict:
    if isinstance(value, Mapping):
        out = {}
        for key in sorted(value):
            out.update(_leaves(value[key], f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def design_keys(config: Mapping) -> dict:
    """The DESIGN_KEYS of a validated configuration, as {dotted key: value} leaves."""
    out = {}
    for dotted in DESIGN_KEYS:
        value = config
        for part in dotted.split("."):
            value = value.get(part, {}) if isinstance(value, Mapping) else {}
        out.update(_leaves(value, dotted))
    return json.loads(json.dumps(out, sort_keys=True))  # tuples as lists, as read back from JSON


def changed_keys(recorded: Mapping, current: Mapping) -> list[str]:
    """'key: collected -> now' for every design key that differs."""
    lines = []
    for key in sorted(set(recorded) | set(current)):
        before, now = recorded.get(key, "(unset)"), current.get(key, "(unset)")
        if before != now:
            lines.append(f"{key}: {json.dumps(before)} -> {json.dumps(now)}")
    return lines


def shown_identities(
    design: pd.DataFrame, manifest: pd.DataFrame, patterns: Mapping[str, str]
) -> pd.DataFrame:
    """[modality, dyad_id, shown] of every design dyad's stimulus per modality.

    `manifest` is the stimuli manifest (paths relative to its folder, sha256), `patterns` the
    stimulus path of each modality under the media folder (design.STIMULUS_PATTERNS).
    """
    window = design.set_index("dyad_id")[["interaction_id", "clip_start", "clip_end"]]
    paths = manifest.assign(path=manifest["path"].astype(str).str.removeprefix("media/"))
    sha = dict(zip(paths["path"], paths["sha256"], strict=True))
    rows = []
    for modality, pattern in patterns.items():
        for dyad, row in window.iterrows():
            digest = sha.get(pattern.format(dyad_id=dyad, modality=modality))
            if digest is not None:
                shown = shown_key(row.interaction_id, row.clip_start, row.clip_end, digest)
                rows.append({"modality": modality, "dyad_id": dyad, "shown": shown})
    return pd.DataFrame(rows, columns=["modality", "dyad_id", "shown"])


def not_in_design(label: str, shown: str) -> str:
    """The dyad id an answer gets when the current design does not show what it was given on."""
    return f"{label} (shown {shown}: not in this design)"


# --------------------------------------------------------------------------------------------
# Design records
# --------------------------------------------------------------------------------------------


def export_record_path(export) -> Path:
    return Path(f"{export}{'.' + DESIGN_RECORD}")


def read_record(path) -> dict | None:
    path = Path(path)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def export_dyad_map(recorded: Mapping, current: Mapping[str, str]) -> dict[str, str]:
    """Export dyad label -> current dyad id, through the identity the label had at collection.

    `recorded["shown"]` is {label: shown} of the export's modality as first imported, `current`
    {shown: dyad_id} of the current design and modality.
    """
    return {
        label: current.get(shown) or not_in_design(label, shown) for label, shown in recorded["shown"].items()
    }


def _sessions(collected: Path, modality: str) -> list[Path]:
    return sorted((collected / modality / "sessions").glob("*.jsonl"))


def collections(config: Mapping) -> list[tuple[str, Path]]:
    """[(what, its design record)] of every configured collection that holds answers."""
    ratings = config["ratings"]
    modalities = [m for m in MODALITIES if m in ratings["raters_per_modality"]]
    found = []
    if ratings["source"] == "experiment":
        experiment = ratings["experiment"]
        jatos = experiment.get("jatos_results") or {}
        collected = experiment.get("collected") or ""
        for modality in modalities:
            if jatos.get(modality):
                what = f"{modality}: JATOS results {jatos[modality]}"
                found.append((what, export_record_path(jatos[modality])))
            elif collected and (sessions := _sessions(Path(collected), modality)):
                what = f"{modality}: {len(sessions)} session(s) in {collected}"
                found.append((what, Path(collected) / modality / DESIGN_RECORD))
    elif ratings["source"] == "exports":
        for modality in modalities:
            export = (ratings.get("exports") or {}).get(modality)
            if export:
                found.append((f"{modality}: survey export {export}", export_record_path(export)))
    return found


def check_design(config: Mapping) -> None:
    """Stop (DesignChangedError) when the configuration changes what a collected list showed."""
    if config["ratings"]["source"] == "simulated":
        return
    current = design_keys(config)
    stops = []
    for what, path in collections(config):
        recorded = read_record(path)
        if not (recorded or {}).get("keys"):
            # nothing imported or served yet (the design is recorded at the first answer), or an
            # experiment built without its keys: the answers' identities still bind them
            continue
        changed = changed_keys(recorded.get("keys") or {}, current)
        if changed:
            stops.append((what, changed))
    if not stops:
        return
    keys = sorted({line for _, changed in stops for line in changed})
    raise DesignChangedError(
        "answers were collected on the current design, and the configuration changes what their "
        "lists showed (every dyad id could name another clip):\n  collected: "
        + "\n  collected: ".join(what for what, _ in stops)
        + "\n  changed design keys (collected -> now):\n    "
        + "\n    ".join(keys)
        + "\n"
        + WAYS_FORWARD
    )


# --------------------------------------------------------------------------------------------
# Pseudonyms
# --------------------------------------------------------------------------------------------


def pseudonym_folder(ratings: Mapping) -> Path | None:
    """Where a study's pseudonym key lives: the server's data folder, else the first export's folder."""
    source = ratings.get("source")
    experiment = ratings.get("experiment") or {}
    jatos = experiment.get("jatos_results") or {}
    planned = [m for m in MODALITIES if m in (ratings.get("raters_per_modality") or {})]
    if source == "experiment":
        if experiment.get("collected") and any(not jatos.get(m) for m in planned):
            return Path(experiment["collected"])
        files = [jatos[m] for m in planned if jatos.get(m)]
    elif source == "exports":
        files = [(ratings.get("exports") or {}).get(m) for m in planned]
        files = [f for f in files if f]
    else:
        return None
    return Path(files[0]).resolve().parent if files else None


def pseudonym_key(folder) -> bytes:
    """The study's key in `folder`/PSEUDONYM_KEY, created (random, owner-only) when absent."""
    path = Path(folder) / PSEUDONYM_KEY
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        # written whole beside it, then linked in: a reader (the server and the import may start
        # together) never sees a half-written key, and a key already there is never replaced
        fd, draft = tempfile.mkstemp(prefix=".pseudonym-", dir=path.parent)  # mode 0600
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_hex(32) + "\n")
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(draft)
    text = path.read_text(encoding="utf-8").strip()
    if len(text) < 32:
        raise ValueError(f"{path}: not a pseudonym key (delete it only before any import)")
    return text.encode("utf-8")


def pseudonym(key: bytes, participant: str) -> str:
    """A rater's pseudonym: 'R' + 16 hex digits of HMAC-SHA256(key, id); blank stays blank."""
    text = str(participant).strip()
    if not text:
        return ""
    return "R" + hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()[:16]


def pseudonymizer(key: bytes | None) -> Callable[[str], str]:
    """`pseudonym` with the study's key, or the identity when there is no key (simulated panel)."""
    if key is None:
        return lambda participant: str(participant).strip()
    return lambda participant: pseudonym(key, participant)

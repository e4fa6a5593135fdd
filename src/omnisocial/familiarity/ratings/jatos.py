"""The rating experiment as a JATOS study (https://www.jatos.org), and the import of its results.

Most labs that recruit on Prolific host their jsPsych studies on JATOS (their own server, or a
shared one such as MindProbe) rather than on a server of the study's own. `build_jatos_study`
(rule rating_jatos) turns one modality's built experiment (`experiment.build_experiment`) into
a JATOS study archive, `.jzip`, imported through JATOS's GUI (Studies, Import study):

    {dirName}.jas       the study's properties as JATOS writes them on export (version "3":
                        uuid, title, dirName, one reloadable component `index.html`, the default
                        batch open to every worker type, named as JATOS names them); the uuids
                        are the study's own (`study_ids`: random, made on the first build and
                        kept in a small file), so a rebuilt archive is byte-identical and
                        re-importing it updates the same study, while another lab's build of
                        the same experiment is another study
    {dirName}/          the experiment folder: the page (which loads jatos.js and
                        app/jatos-backend.js), study.json, lists.json, jspsych/, app/, stimuli/,
                        and jatos.json (raters_per_list)

On JATOS the page takes the Prolific ids from `jatos.urlQueryParameters`, gives each
participant a list through the batch session (balanced as the server balances them; each
participant writes only its own claim, keyed by its study result id, checked after the batch
channel settles, since JATOS 3.9.8 writes the batch session without a lock), appends every
record to the result data as one JSON line (`jatos.appendResultData`), stops on a refusal no
retry can change (400, 403, 413) and ends with the completion redirect
(`jatos.endStudyAndRedirect`); see web/jatos-backend.js.

`jatos_exports` reads JATOS's result export of such a study, either the results ZIP (JATOS 3.8.1
and later, ResultStreamer: `study_result_{id}/comp-result_{id}/data.txt` per component result
with data, and `metadata.json`; 3.8.1 alone starts the names with `/`) or the plain-text data
export (every component result's data followed by a line break), into the same exports as the
collection server's sessions (`collect.session_exports`): the same import report follows.
Nothing is dropped silently: a line that is not a record, a record of a session without a
header, a result of another modality, and a component result that metadata.json lists with
data but the ZIP lacks all stop the import, naming it.
"""

from __future__ import annotations

import json
import os
import re
import uuid
import zipfile
from pathlib import Path

import pandas as pd

from omnisocial.familiarity.ratings.collect import export_frames, session_exports
from omnisocial.io import atomic_path

WEB_DIR = Path(__file__).resolve().parent / "web"
JAS_VERSION = "3"  # JATOS's Study.SERIAL_VERSION
# JATOS's worker types (models/common/workers/*.WORKER_TYPE): since 3.10.1 the import refuses a
# batch naming any other (BatchProperties.validate), e.g. "MTWorker" for MTurk's "MT"
WORKER_TYPES = ["Jatos", "PersonalSingle", "PersonalMultiple", "GeneralSingle", "GeneralMultiple", "MT"]
# build.json holds the server's settings, index.html is rewritten, and Snakemake's marker of a
# finished folder is no part of the study
LEFT_OUT = {"build.json", "index.html", ".snakemake_timestamp"}
# a result's data file in the results ZIP: study_result_{id}/comp-result_{id}/data.txt, with a
# leading "/" in JATOS 3.8.1 (IOUtils.getResultsPathForZip)
RESULT_DATA = re.compile(r"(?:^|/)study_result_(\d+)/comp-result_(\d+)/data\.txt$")
ID_KEYS = ("study", "component", "batch")
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the same archive bytes for the same experiment


def study_ids(path: str | os.PathLike) -> dict[str, str]:
    """The JATOS uuids of one study (study, component, batch), read from `path`, or made (random)
    and written there on the first build. Kept with the study, they make a rebuilt archive
    byte-identical and a re-import update the same study; deleting the file makes a new study."""
    path = Path(path)
    if not path.exists():
        made = {key: str(uuid.uuid4()) for key in ID_KEYS}
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            Path(tmp).write_text(json.dumps(made, indent=2) + "\n", encoding="utf-8")
    ids = json.loads(path.read_text(encoding="utf-8"))
    for key in ID_KEYS:
        try:
            uuid.UUID(str(ids.get(key)))
        except ValueError:
            raise ValueError(f"{path}: {key!r} is not a uuid ({ids.get(key)!r})") from None
    return {key: str(ids[key]) for key in ID_KEYS}


def jatos_index(index_html: str) -> str:
    """The experiment's page for JATOS: jatos.js first (JATOS serves it), then the JATOS backend."""
    head = '    <script src="jatos.js"></script>\n'
    page = index_html.replace(
        '    <script src="app/experiment.js"',
        '    <script src="app/jatos-backend.js" defer></script>\n    <script src="app/experiment.js"',
        1,
    )
    return page.replace("    <title>", head + "    <title>", 1)


def jatos_properties(study: dict, raters_per_list: int, ids: dict[str, str]) -> tuple[str, dict]:
    """(dirName, the .jas content) of one modality's study; `ids` from `study_ids`."""
    modality = study["modality"]
    title = f"{study['title']} ({modality})"
    dir_name = re.sub(r"[^A-Za-z0-9_]+", "_", f"omnisocial_rating_{modality}")
    completion = study["completion"]
    redirect = (
        completion["redirect_url"].replace("{code}", completion["code"])
        if completion["redirect_url"]
        else None
    )
    return dir_name, {
        "version": JAS_VERSION,
        "data": {
            "uuid": ids["study"],
            "title": title,
            "description": f"Familiarity ratings, {modality} (omnisocial rating experiment; "
            f"{raters_per_list} participant(s) per list).",
            "active": True,
            "groupStudy": False,
            "linearStudy": False,
            "allowPreview": False,
            "dirName": dir_name,
            "comments": "Built by omnisocial (rule rating_jatos); see docs/rating-experiment.md.",
            "jsonData": None,
            "endRedirectUrl": redirect,
            "studyEntryMsg": None,
            "componentList": [
                {
                    "uuid": ids["component"],
                    "title": f"Familiarity ratings ({modality})",
                    "htmlFilePath": "index.html",
                    "reloadable": True,  # a reload resumes at the first unanswered trial
                    "active": True,
                    "comments": "",
                    "jsonData": None,
                }
            ],
            "batchList": [
                {
                    "uuid": ids["batch"],
                    "title": "Default",
                    "active": True,
                    "maxActiveMembers": None,
                    "maxTotalMembers": None,
                    "maxTotalWorkers": None,
                    "allowedWorkerTypes": WORKER_TYPES,
                    "comments": None,
                    "jsonData": None,
                }
            ],
        },
    }


def _write(archive: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, _FIXED_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    archive.writestr(info, data)


def build_jatos_study(
    experiment_dir: str | os.PathLike, out_path: str | os.PathLike, ids_path: str | os.PathLike
) -> dict:
    """Write the JATOS study archive of one built experiment folder; returns the .jas content.
    `ids_path`: the study's uuids (`study_ids`: read, or made on the first build)."""
    root = Path(experiment_dir)
    study = json.loads((root / "study.json").read_text(encoding="utf-8"))
    build = json.loads((root / "build.json").read_text(encoding="utf-8"))
    raters_per_list = int(build["server"]["raters_per_list"])
    dir_name, jas = jatos_properties(study, raters_per_list, study_ids(ids_path))
    with atomic_path(out_path) as tmp, zipfile.ZipFile(tmp, "w") as archive:
        _write(archive, f"{dir_name}.jas", json.dumps(jas, indent=2).encode("utf-8"))
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            relative = path.relative_to(root).as_posix()
            if relative not in LEFT_OUT:
                _write(archive, f"{dir_name}/{relative}", path.read_bytes())
        index = jatos_index((root / "index.html").read_text(encoding="utf-8"))
        _write(archive, f"{dir_name}/index.html", index.encode("utf-8"))
        _write(archive, f"{dir_name}/app/jatos-backend.js", (WEB_DIR / "jatos-backend.js").read_bytes())
        _write(archive, f"{dir_name}/jatos.json", json.dumps({"raters_per_list": raters_per_list}).encode())
    return jas


def _result_texts(path: Path) -> list[tuple[str, str]]:
    """[(where, text)] of a results ZIP's data files in result order, or of a plain-text export."""
    if not zipfile.is_zipfile(path):
        return [(str(path), path.read_text(encoding="utf-8"))]
    with zipfile.ZipFile(path) as archive:
        found = {}
        for name in archive.namelist():
            match = RESULT_DATA.search(name)
            if match:
                found[(int(match.group(1)), int(match.group(2)))] = name
        if "metadata.json" in archive.namelist():
            metadata = json.loads(archive.read("metadata.json"))
            missing = [
                f"study result {study_result['id']}, component result {component['id']}"
                for study in metadata.get("data", [])
                for study_result in study.get("studyResults", [])
                for component in study_result.get("componentResults", [])
                if (component.get("data") or {}).get("size", 0)
                and (int(study_result["id"]), int(component["id"])) not in found
            ]
            if missing:
                raise ValueError(
                    f"{path}: metadata.json lists result data the ZIP lacks: {'; '.join(missing)}"
                )
        return [(f"{path}:{found[key]}", archive.read(found[key]).decode("utf-8")) for key in sorted(found)]


def jatos_sessions(path: str | os.PathLike, modality: str) -> list[list[dict]]:
    """The sessions in a JATOS result export: [header, records...] each, as the server stores them."""
    path = Path(path)
    headers: dict[str, dict] = {}
    records: dict[str, list[dict]] = {}
    for where, text in _result_texts(path):
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue  # the plain-text export ends every component result's data with a newline
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                raise ValueError(f"{where} line {number}: not a record of the rating experiment") from None
            if not isinstance(record, dict) or "kind" not in record or "session_id" not in record:
                raise ValueError(f"{where} line {number}: not a record of the rating experiment")
            session_id = record["session_id"]
            if record["kind"] == "session":
                if record.get("modality") != modality:
                    raise ValueError(
                        f"{where} line {number}: a {record.get('modality')!r} session in the "
                        f"{modality} import"
                    )
                headers.setdefault(session_id, record)
                records.setdefault(session_id, [])
            elif session_id not in headers:
                raise ValueError(
                    f"{where} line {number}: a record of session {session_id!r} before its header"
                )
            else:
                records[session_id].append(record)
    sessions = [[headers[sid], *records[sid]] for sid in headers]
    return sorted(sessions, key=lambda lines: (lines[0].get("started_at", ""), lines[0]["session_id"]))


def jatos_exports(path, experiment_dir, alias=None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """`collect.collected_exports` of a JATOS result export (the results ZIP or the plain text)."""
    root = Path(experiment_dir)
    study = json.loads((root / "study.json").read_text(encoding="utf-8"))
    lists = json.loads((root / "lists.json").read_text(encoding="utf-8"))
    sessions = jatos_sessions(path, study["modality"])
    for lines in sessions:
        if lines[0].get("list_id") not in lists:
            raise ValueError(
                f"{path}: session {lines[0]['session_id']} names list {lines[0].get('list_id')!r}, "
                "not in the design"
            )
    return export_frames(*session_exports(sessions, study, lists, alias), study)

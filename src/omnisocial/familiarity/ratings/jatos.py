"""The rating experiment as a JATOS study (https://www.jatos.org), and the import of its results.

Most labs that recruit on Prolific host their jsPsych studies on JATOS (their own server, or a
shared one such as MindProbe) rather than on a server of the study's own. `build_jatos_study`
(rule rating_jatos) turns one modality's built experiment (`experiment.build_experiment`) into
a JATOS study archive, `.jzip`, imported through JATOS's GUI (Studies, Import study):

    {dirName}.jas       the study's properties as JATOS writes them on export (version "3":
                        uuid, title, dirName, one reloadable component `index.html`, the default
                        batch open to every worker type); the uuids are fixed per title and
                        modality, so importing a rebuilt archive offers to overwrite the study
    {dirName}/          the experiment folder: the page (which loads jatos.js and
                        app/jatos-backend.js), study.json, lists.json, jspsych/, app/, stimuli/,
                        and jatos.json (raters_per_list)

On JATOS the page takes the Prolific ids from `jatos.urlQueryParameters`, gives each
participant a list through the batch session (balanced as the server balances them), appends
every record to the result data as one JSON line (`jatos.appendResultData`) and ends with the
completion redirect (`jatos.endStudyAndRedirect`); see web/jatos-backend.js.

`jatos_exports` reads JATOS's result export of such a study, either the results ZIP (JATOS 3.8
and later: `study_result_{id}/comp-result_{id}/data.txt` per component result, with
`metadata.json`; older versions name the folders `comp_result_{id}`) or the plain-text data
export (every component result's data, one after another), into the same exports as the
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
WORKER_TYPES = ["Jatos", "PersonalSingle", "PersonalMultiple", "GeneralSingle", "GeneralMultiple", "MTWorker"]
LEFT_OUT = {"build.json", "index.html"}  # build.json holds the server's settings; index.html is rewritten
# a result's data file in the results ZIP: JATOS >= 3.8 writes comp-result_, older comp_result_
RESULT_DATA = re.compile(r"(?:^|/)study_result_(\d+)/comp[-_]result_(\d+)/data\.txt$")
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the same archive bytes for the same experiment


def _uuid(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "omnisocial-rating-experiment/" + "/".join(parts)))


def jatos_index(index_html: str) -> str:
    """The experiment's page for JATOS: jatos.js first (JATOS serves it), then the JATOS backend."""
    head = '    <script src="jatos.js"></script>\n'
    page = index_html.replace(
        '    <script src="app/experiment.js"',
        '    <script src="app/jatos-backend.js" defer></script>\n    <script src="app/experiment.js"',
        1,
    )
    return page.replace("    <title>", head + "    <title>", 1)


def jatos_properties(study: dict, raters_per_list: int) -> tuple[str, dict]:
    """(dirName, the .jas content) of one modality's study."""
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
            "uuid": _uuid(study["title"], modality),
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
                    "uuid": _uuid(study["title"], modality, "component"),
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
                    "uuid": _uuid(study["title"], modality, "batch"),
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


def build_jatos_study(experiment_dir: str | os.PathLike, out_path: str | os.PathLike) -> dict:
    """Write the JATOS study archive of one built experiment folder; returns the .jas content."""
    root = Path(experiment_dir)
    study = json.loads((root / "study.json").read_text(encoding="utf-8"))
    build = json.loads((root / "build.json").read_text(encoding="utf-8"))
    raters_per_list = int(build["server"]["raters_per_list"])
    dir_name, jas = jatos_properties(study, raters_per_list)
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

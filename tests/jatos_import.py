"""A port of JATOS's study import checks, for the tests (no JATOS server runs here).

Followed from JATOS's source, github.com/JATOS/JATOS at tag v3.10.5 (commit bf99ed99); paths are
under modules/ there, line numbers at that tag:

- gui/app/services/gui/ImportExportService.java
    328-338  unzipUploadedFile: ZipUtil.unzip, else "Unpacking ZIP archive failed"
    340-353  deserializeStudy: exactly one .jas among the unzipped top-level files ("File is not a
             valid JATOS study"), then StudyService.validate, ComponentService.validate for each
             component, BatchService.validate for each batch
    121-130  checkForExistingComponents: a component uuid held by another study is refused
     89-95   an existing study (same uuid) the importing user is not a member of is refused
    297-314  moveStudyAssetsDir: at most one directory in the archive ("There are more than one
             directory in the ZIP file.")
- common/app/utils/common/ZipUtil.java 36-69: every entry must stay inside the target folder
  ("Illegal name"); Files.copy refuses an entry written twice
- gui/app/services/gui/StudyDeserializer.java 26-52: "version" above Study.SERIAL_VERSION (3,
  common/app/models/common/Study.java 39) is too new; versions 0, 2 and 3 are read, others refused
- gui/app/models/gui/StudyProperties.java 244-297, ComponentProperties.java 197-231,
  BatchProperties.java 197-237: the property checks (no HTML, titles, lengths, dirName, the
  htmlFilePath pattern, JSON inputs, member limits, worker types)
- gui/app/services/gui/WorkerService.java 56-95: the worker types (and aliases) JATOS knows
- common/app/utils/common/IOUtils.java 28 (REGEX_ILLEGAL_IN_FILENAME), 376-378 (checkFilename)

Jsoup.isValid(text, Safelist.none()) is ported as "no HTML element, comment or declaration"
(Python's html.parser); JsonUtils.isValid as json.loads. A study that JATOS's Jackson cannot
bind (a field of the wrong type) is refused here as well.
"""

from __future__ import annotations

import json
import re
import uuid
import zipfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath

SERIAL_VERSION = 3  # Study.SERIAL_VERSION
READ_VERSIONS = {0, 2, 3}  # StudyDeserializer.deserialize's cases
INVALID_DIR_NAMES = {"jatos", "publix", "public", "assets", "study_assets_root", "study_assets"}
ILLEGAL_IN_FILENAME = re.compile(r"[\s\n\r\t\f*?\"\\\0/,`<>|:~!§$%&^°]")  # IOUtils.java 28
HTML_FILE_PATH = re.compile(r"^[\w\d_-][\w\d/_-]*\.[\w\d_-]+$")  # ComponentProperties.java 218
# WorkerService.WORKER_TYPE_ALIASES (lower-cased lookup): the *.WORKER_TYPE names and short forms
WORKER_TYPE_ALIASES = {
    "jatos": "Jatos",
    "ja": "Jatos",
    "personalsingle": "PersonalSingle",
    "ps": "PersonalSingle",
    "personalmultiple": "PersonalMultiple",
    "pm": "PersonalMultiple",
    "generalsingle": "GeneralSingle",
    "gs": "GeneralSingle",
    "generalmultiple": "GeneralMultiple",
    "gm": "GeneralMultiple",
    "mturk": "MT",
    "mt": "MT",
    "mturksandbox": "MTSandbox",
    "mts": "MTSandbox",
}
# the fields Jackson binds (models/common/Study, Component, Batch; JsonAlias names included)
STUDY_FIELDS = {
    "uuid", "title", "description", "locked", "active", "groupStudy", "linearStudy", "allowPreview",
    "dirName", "comments", "studyInput", "jsonData", "endRedirectUrl", "studyEntryMsg",
    "componentList", "batchList", "id", "descriptionHash",
}  # fmt: skip
COMPONENT_FIELDS = {
    "uuid",
    "title",
    "htmlFilePath",
    "reloadable",
    "active",
    "comments",
    "componentInput",
    "jsonData",
    "id",
}
BATCH_FIELDS = {
    "uuid", "title", "active", "maxActiveMembers", "maxTotalMembers", "maxTotalWorkers",
    "allowedWorkerTypes", "comments", "batchInput", "jsonData", "id",
}  # fmt: skip


class ImportRefused(ValueError):
    """What JATOS answers instead of importing, with its reasons."""


class _Markup(HTMLParser):
    found = False

    def handle_starttag(self, tag, attrs):
        self.found = True

    handle_startendtag = handle_starttag

    def handle_endtag(self, tag):
        self.found = True

    def handle_comment(self, data):
        self.found = True

    def handle_decl(self, decl):
        self.found = True


def no_html(text: str) -> bool:
    """Jsoup.isValid(text, Safelist.none()): text without any HTML element."""
    parser = _Markup()
    parser.feed(text)
    parser.close()
    return not parser.found


def valid_json(text) -> bool:
    """JsonUtils.isValid (JsonUtils.java 120-128)."""
    try:
        json.loads(text)
    except (TypeError, ValueError):
        return False
    return True


def _title_errors(where: str, title) -> list[str]:
    if not isinstance(title, str) or not title.strip():
        return [f"{where}: missing title"]
    errors = [f"{where}: title too long"] if len(title) > 255 else []
    return errors + ([f"{where}: title: no HTML allowed"] if not no_html(title) else [])


def _text_errors(where: str, entity: dict, names) -> list[str]:
    return [
        f"{where}: {name}: no HTML allowed"
        for name in names
        if entity.get(name) is not None and not (isinstance(entity[name], str) and no_html(entity[name]))
    ]


def _input_errors(where: str, entity: dict, names) -> list[str]:
    value = next((entity[n] for n in names if n in entity), None)
    return [f"{where}: invalid JSON format"] if value not in (None, "") and not valid_json(value) else []


def _field_errors(where: str, entity: dict, known: set) -> list[str]:
    if not isinstance(entity, dict):
        return [f"{where}: not an object"]
    return [f"{where}: JATOS has no field {name!r}" for name in sorted(set(entity) - known)]


def study_errors(study: dict) -> list[str]:
    """StudyProperties.validate (StudyProperties.java 244-297)."""
    errors = _field_errors("study", study, STUDY_FIELDS)
    errors += _text_errors(
        "study", study, ["uuid", "description", "comments", "endRedirectUrl", "studyEntryMsg"]
    )
    errors += _title_errors("study", study.get("title"))
    dir_name = study.get("dirName")
    if dir_name is not None:
        if not isinstance(dir_name, str) or not dir_name.strip():
            errors.append("study: missing dirName")
        else:
            if len(dir_name) > 255:
                errors.append("study: dirName too long")
            if ILLEGAL_IN_FILENAME.search(dir_name):
                errors.append("study: Invalid study assets directory name.")
            if dir_name in INVALID_DIR_NAMES:
                errors.append(f"study: dirName {dir_name!r} is reserved")
    errors += _input_errors("study", study, ["studyInput", "jsonData"])
    message = study.get("studyEntryMsg")
    if isinstance(message, str) and len(message.encode()) > 1000:
        errors.append("study: studyEntryMsg too long")
    return errors


def component_errors(component: dict, where: str = "component") -> list[str]:
    """ComponentProperties.validate (ComponentProperties.java 197-231)."""
    errors = _field_errors(where, component, COMPONENT_FIELDS)
    errors += _text_errors(where, component, ["uuid", "comments"])
    errors += _title_errors(where, component.get("title"))
    path = component.get("htmlFilePath")
    if isinstance(path, str) and path.strip():
        if len(path) > 255:
            errors.append(f"{where}: htmlFilePath too long")
        if not HTML_FILE_PATH.match(path):
            errors.append(f"{where}: htmlFilePath {path!r} is not a valid path")
    return errors + _input_errors(where, component, ["componentInput", "jsonData"])


def batch_errors(batch: dict, where: str = "batch") -> list[str]:
    """BatchProperties.validate (BatchProperties.java 197-237; the worker types since 3.10.1)."""
    errors = _field_errors(where, batch, BATCH_FIELDS)
    errors += _text_errors(where, batch, ["uuid", "comments"])
    errors += _title_errors(where, batch.get("title"))
    limits = {k: batch.get(k) for k in ("maxActiveMembers", "maxTotalMembers", "maxTotalWorkers")}
    for name, value in limits.items():
        if value is not None and (not isinstance(value, int) or value < 1):
            errors.append(f"{where}: {name} must be at least 1")
    active, total = limits["maxActiveMembers"], limits["maxTotalMembers"]
    if isinstance(active, int) and isinstance(total, int) and total < active:
        errors.append(f"{where}: maxTotalMembers must be >= maxActiveMembers")
    errors += _input_errors(where, batch, ["batchInput", "jsonData"])
    for worker_type in batch.get("allowedWorkerTypes") or []:
        if not isinstance(worker_type, str) or worker_type.lower() not in WORKER_TYPE_ALIASES:
            errors.append(f"{where}: Invalid worker type: {worker_type}")
    return errors


def read_archive(path: str | Path) -> tuple[dict, dict[str, bytes]]:
    """Unzip as ZipUtil.unzip does and find the .jas as deserializeStudy does: (the .jas's
    content, {path in the archive: bytes}). Refuses what JATOS refuses before validation."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError):
        raise ImportRefused("Unpacking ZIP archive failed") from None
    files: dict[str, bytes] = {}
    with archive:
        for info in archive.infolist():
            name = info.filename
            parts = PurePosixPath(name).parts
            if name.startswith("/") or ".." in parts:
                raise ImportRefused(f"Unpacking ZIP archive failed: Illegal name: {name}")
            if name.endswith("/"):
                continue
            if name in files:  # Files.copy onto a file already there
                raise ImportRefused(f"Unpacking ZIP archive failed: {name} twice")
            files[name] = archive.read(info)
    jas_names = [n for n in files if "/" not in n and n.endswith("jas")]
    if len(jas_names) != 1:
        raise ImportRefused("File is not a valid JATOS study")
    try:
        jas = json.loads(files[jas_names[0]])
    except ValueError:
        raise ImportRefused("File is not a valid JATOS study: the .jas is not JSON") from None
    return jas, files


def _version(jas: dict) -> int:
    """StudyDeserializer: the (first) "version" field, read as an int as Jackson's asInt does."""
    try:
        version = int(str(jas.get("version")))
    except ValueError:
        version = 0
    if version > SERIAL_VERSION:
        raise ImportRefused("This study is from a newer version of JATOS")
    if version not in READ_VERSIONS:
        raise ImportRefused("Unsupported study version")
    return version


def check_archive(path: str | Path) -> dict:
    """Every check JATOS's import makes of a study archive itself; returns the study (.jas data)."""
    jas, files = read_archive(path)
    _version(jas)
    study = jas.get("data")
    if not isinstance(study, dict):
        raise ImportRefused("File is not a valid JATOS study: no data")
    errors = study_errors(study)
    for i, component in enumerate(study.get("componentList") or []):
        errors += component_errors(component, f"component {i + 1}")
    for i, batch in enumerate(study.get("batchList") or []):
        errors += batch_errors(batch, f"batch {i + 1}")
    folders = {n.split("/", 1)[0] for n in files if "/" in n}
    if len(folders) > 1:
        errors.append("There are more than one directory in the ZIP file.")
    if errors:
        raise ImportRefused("; ".join(errors))
    return study


@dataclass
class JatosInstance:
    """The import's outcome on one JATOS server (ImportExportService.importStudy 79-114 and
    checkForExistingComponents 121-130): studies by uuid with their members."""

    studies: dict[str, dict] = field(default_factory=dict)
    components: dict[str, str] = field(default_factory=dict)  # component uuid -> study uuid

    def import_study(self, path: str | Path, user: str) -> str:
        """'new' or 'overwrite' (JATOS asks to confirm); refused as JATOS refuses."""
        study = check_archive(path)
        for component in study.get("componentList") or []:
            owner = self.components.get(component["uuid"])
            if owner is not None and owner != study["uuid"]:
                raise ImportRefused(
                    f"An component of the imported study has the same UUID ({component['uuid']}) as an "
                    "existing component."
                )
        current = self.studies.get(study["uuid"])
        if current is not None and user not in current["members"]:
            raise ImportRefused(
                "Import failed: the study already exists, but you are not a member and therefore cannot "
                "overwrite it."
            )
        self.studies[study["uuid"]] = {
            "study": study,
            "members": {user} | (current or {}).get("members", set()),
        }
        for component in study.get("componentList") or []:
            self.components[component["uuid"]] = study["uuid"]
        return "overwrite" if current is not None else "new"


def is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except (TypeError, ValueError):
        return False
    return True

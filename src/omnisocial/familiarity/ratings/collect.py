"""Collection server of the rating experiment (`omnisocial rating-server`) and its data.

The server serves the built experiments (`omnisocial.familiarity.ratings.experiment`; one
folder per modality under one root) and stores what the pages send. Relative addresses only
(`/{modality}/...`, `/{modality}/api/start`, `/{modality}/api/record`), so it runs the same
behind a reverse proxy under any prefix.

Sessions. `api/start` takes the study token, the participant's Prolific ids (`PROLIFIC_PID`,
required; `STUDY_ID`, `SESSION_ID`) and optionally a list id. A participant who has a session
of this modality gets it back (a reload resumes: the answer says what is stored, and the page
goes on at the first unanswered trial). Otherwise the session gets the named list (refused
when the design has no such list or the list has its `raters_per_list` participants) or the
next list that still needs raters: of the lists with fewest participants, the one whose blocks
have the fewest raters so far, in the design's list order on ties, so the blocks stay balanced
while participants arrive (`allocate_list`). A participant who declines consent frees the list
(nothing was rated); an abandoned session keeps it.

Storage. One JSON-lines file per session, `{data}/{modality}/sessions/{session_id}.jsonl`: a
header line (list, Prolific ids, start time) and then one line per record, each appended by a
single write under an exclusive lock and fsynced before the page is answered (`append_record`),
never rewritten. A record is checked against `web/record.schema.json` and against the design
(the rating of trial N must name the dyad the list has at N; questionnaire answers must be the
configured items, within the scale; a rating is stored with its list trial's `shown`, what the
trial showed), and refused with a 4xx naming the reason otherwise; so is a
record of a session the server did not start, a request without the study token, a body over
`max_body_bytes` and a path that leaves the experiment folder. No record but the consent is
stored before consent is given or after it was declined (409, naming which). One server
process per data folder (it holds a lock on `{data}/.server.lock`; a second one exits with one
line); its state is rebuilt from the session files at start. `{data}/manifest.json` (sessions
and records per modality, `write_manifest`) is rewritten atomically on every change: rule
collect_ratings takes it as input, so new sessions make the next run import again. At start the
server records the collection's design (`{data}/{modality}/design.json`, `freeze_design`) and
makes the study's pseudonym key (`{data}/pseudonym.key`); see `frozen`.

The token protects the API (`api/start`, `api/record`); the static files of an experiment
folder (page, scripts, study.json, stimuli) are served without it, `lists.json` and
`build.json` never.

Import. `collected_exports` turns the session files into the tables `import_ratings` reads
with `experiment_mapping` (no mapping to write; raters by pseudonym, each rating under the
current design's dyad that shows what it was given on): one row per rating or practice record in the
order received, plus one unanswered row per trial an incomplete session never reached (the
import report's `unanswered`); a repeated answer (a retried request) is the importer's
`duplicate` / `conflict` under its `keep` rule; a record stored without consent (by an older
server) is `no_consent` and a clip played faster than real time or seeked `playback_flagged`
(`playback_flag`, the export's `excluded` column). Questionnaires become the covariates export
(`experiment_covariate_mapping` scores them) and every session a row of the sessions table.
"""

from __future__ import annotations

import fcntl
import hmac
import http.server
import json
import logging
import mimetypes
import os
import re
import secrets
import sys
import threading
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pandas as pd

from omnisocial.familiarity.ratings.frozen import (
    DESIGN_RECORD,
    not_in_design,
    pseudonym_key,
    pseudonymizer,
    read_record,
)
from omnisocial.io import write_json

log = logging.getLogger(__name__)

RECORD_SCHEMA = json.loads((Path(__file__).resolve().parent / "web" / "record.schema.json").read_text())
PARTICIPANT_ID = re.compile(RECORD_SCHEMA["$defs"]["participant_id"]["pattern"])
PLATFORM_ID = re.compile(r"^[A-Za-z0-9_-]{0,64}$")
# files of an experiment folder the pages never need
PRIVATE_FILES = {"lists.json", "build.json"}
MANIFEST = "manifest.json"  # in the data folder: sessions and records per modality (write_manifest)
# Prolific's STUDY_ID and SESSION_ID stay in the session files (frozen: ids only in the data)
SESSION_COLUMNS = [
    "modality",
    "session_id",
    "rater_id",
    "list_id",
    "started_at",
    "consent",
    "n_trials",
    "n_answered",
    "attention_passed",
    "attention_failed",
    "questionnaires",
    "n_records",
    "records_without_consent",
    "status",
]


class Refused(Exception):
    """A request the server refuses; `status` is the HTTP status, the message its reason."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def append_record(path: Path, record: Mapping) -> None:
    """Append one JSON line to `path` by a single write under an exclusive lock, fsynced."""
    line = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        view = memoryview(line)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)  # closing releases the lock


def read_session(path: Path) -> list[dict]:
    """The lines of a session file; a torn last line (a crash mid-write) is left out and logged."""
    lines = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            lines.append(json.loads(text))
        except json.JSONDecodeError:
            log.warning("%s: line %d is not JSON (a write cut short); left out", path, number)
    return lines


@dataclass
class Session:
    header: dict
    path: Path
    consent: bool | None = None
    practice: set = field(default_factory=set)
    ratings: set = field(default_factory=set)
    attention: set = field(default_factory=set)
    questionnaires: set = field(default_factory=set)
    complete: bool = False
    records: int = 0  # lines after the header
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, record: Mapping) -> None:
        kind = record["kind"]
        if kind == "consent":
            self.consent = bool(record["agreed"])
        elif kind == "practice":
            self.practice.add(record["practice_id"])
        elif kind == "rating":
            self.ratings.add(int(record["order"]))
        elif kind == "attention":
            self.attention.add(int(record["check"]))
        elif kind == "questionnaire":
            self.questionnaires.add(record["name"])
        elif kind == "complete":
            self.complete = True

    def done(self) -> dict:
        return {
            "consent": self.consent is True,
            "practice": sorted(self.practice),
            "ratings": sorted(self.ratings),
            "attention": sorted(self.attention),
            "questionnaires": sorted(self.questionnaires),
            "complete": self.complete,
        }

    @property
    def holds_list(self) -> bool:
        """A declined consent frees the list: nothing of it was rated."""
        return self.consent is not False


@dataclass
class Experiment:
    """One modality's built experiment and its sessions."""

    modality: str
    root: Path
    lists: dict
    study: dict
    build: dict
    sessions_dir: Path
    sessions: dict = field(default_factory=dict)  # session_id -> Session
    by_participant: dict = field(default_factory=dict)  # PROLIFIC_PID -> session_id

    @classmethod
    def load(cls, root: Path, data_dir: Path) -> Experiment:
        study = json.loads((root / "study.json").read_text(encoding="utf-8"))
        lists = json.loads((root / "lists.json").read_text(encoding="utf-8"))
        sessions_dir = data_dir / study["modality"] / "sessions"
        sessions_dir.mkdir(parents=True, exist_ok=True)
        build = json.loads((root / "build.json").read_text(encoding="utf-8"))
        experiment = cls(study["modality"], root, lists, study, build, sessions_dir)
        for path in sorted(sessions_dir.glob("*.jsonl")):
            lines = read_session(path)
            if not lines or lines[0].get("kind") != "session":
                log.warning("%s: no session header; left out", path)
                continue
            session = Session(lines[0], path)
            for record in lines[1:]:
                session.note(record)
            session.records = len(lines) - 1
            experiment._add(session)
        return experiment

    def _add(self, session: Session) -> None:
        self.sessions[session.header["session_id"]] = session
        self.by_participant[session.header["PROLIFIC_PID"]] = session.header["session_id"]

    def participants_per_list(self) -> dict[str, int]:
        counts = dict.fromkeys(self.lists, 0)
        for session in self.sessions.values():
            if session.holds_list:
                counts[session.header["list_id"]] += 1
        return counts


def _shown_lists(lists: Mapping) -> dict:
    return {list_id: [t.get("shown", "") for t in entry["trials"]] for list_id, entry in lists.items()}


def freeze_design(experiment: Experiment, data_dir: Path) -> None:
    """Record the design of a collection (`{data}/{modality}/design.json`, frozen.DESIGN_RECORD).

    Until a session exists the record follows the experiment; afterwards a rebuilt experiment
    whose lists show something else than the recorded ones on a list of the same id is refused
    (lists added for more raters are recorded too).
    """
    path = data_dir / experiment.modality / DESIGN_RECORD
    recorded = read_record(path)
    shown = _shown_lists(experiment.lists)
    if recorded is not None and experiment.sessions:
        differs = sorted(
            list_id for list_id, trials in shown.items() if recorded["lists"].get(list_id, trials) != trials
        )
        if differs:
            raise ValueError(
                f"{experiment.root}: lists {', '.join(differs[:5])} show other clips than the lists "
                f"{len(experiment.sessions)} session(s) in {data_dir} were collected on (the experiment "
                "was rebuilt on another design); serve the collected design's experiment, or collect "
                "the new design into a new data folder (docs/rating-experiment.md#after-collection)"
            )
        shown = {**recorded["lists"], **shown}
        keys = recorded["keys"]
    else:
        keys = experiment.build.get("design_keys") or {}
    write_json(path, {"keys": keys, "lists": shown})


def allocate_list(lists: Mapping[str, dict], per_list: Mapping[str, int], raters_per_list: int) -> str | None:
    """The next list that still needs raters (module docstring), None when every list has them."""
    per_block: dict[int, int] = {}
    for list_id, n in per_list.items():
        for block in lists[list_id]["blocks"]:
            per_block[block] = per_block.get(block, 0) + n
    open_lists = [list_id for list_id in lists if per_list[list_id] < raters_per_list]
    if not open_lists:
        return None
    position = {list_id: i for i, list_id in enumerate(lists)}

    def need(list_id):
        counts = [per_block.get(b, 0) for b in lists[list_id]["blocks"]]
        return (per_list[list_id], max(counts), sum(counts), position[list_id])

    return min(open_lists, key=need)


class CollectionStore:
    """The experiments under `experiment_root` and their sessions under `data_dir`."""

    def __init__(self, experiment_root, data_dir, token: str, raters_per_list: int | None = None):
        if not token:
            raise ValueError("the study token is empty")
        self.root = Path(experiment_root).resolve()
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._server_lock = open(self.data_dir / ".server.lock", "w")  # noqa: SIM115 (held while serving)
        try:
            fcntl.flock(self._server_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._server_lock.close()
            raise ValueError(f"{self.data_dir}: another collection server uses this data folder") from None
        self.token = token
        folders = [self.root] if (self.root / "study.json").is_file() else sorted(self.root.iterdir())
        self.experiments = {}
        for folder in folders:
            if (folder / "study.json").is_file():
                experiment = Experiment.load(folder, self.data_dir)
                self.experiments[experiment.modality] = experiment
        if not self.experiments:
            raise ValueError(f"{self.root}: no built experiment (study.json) here or in its folders")
        for experiment in self.experiments.values():
            freeze_design(experiment, self.data_dir)
        pseudonym_key(self.data_dir)  # the study's pseudonyms (frozen.pseudonym), made once
        # the built experiments carry ratings.experiment's server settings (build.json)
        settings = {json.dumps(e.build.get("server", {}), sort_keys=True) for e in self.experiments.values()}
        if len(settings) > 1:
            raise ValueError(f"{self.root}: the experiments were built with different server settings")
        built = json.loads(settings.pop())
        self.raters_per_list = int(raters_per_list or built.get("raters_per_list", 1))
        self.max_body_bytes = int(built.get("max_body_bytes", 65536))
        self.validator = jsonschema.Draft202012Validator(RECORD_SCHEMA)
        self._lock = threading.Lock()
        self._manifest_lock = threading.Lock()
        self.write_manifest()

    def write_manifest(self) -> None:
        """`{data}/manifest.json`: sessions and stored records per modality, rewritten atomically.

        Rule collect_ratings takes it as an input, so a new session or record makes the next
        run import again (the session files themselves are a folder Snakemake cannot watch).
        """
        with self._manifest_lock:
            manifest = {
                modality: {
                    "sessions": len(experiment.sessions),
                    "records": sum(s.records for s in experiment.sessions.values()),
                    "per_session": {sid: s.records for sid, s in sorted(experiment.sessions.items())},
                }
                for modality, experiment in sorted(self.experiments.items())
            }
            write_json(self.data_dir / MANIFEST, manifest)

    def close(self) -> None:
        self._server_lock.close()

    def experiment(self, modality: str) -> Experiment:
        if modality not in self.experiments:
            raise Refused(404, f"no experiment {modality!r} here")
        return self.experiments[modality]

    def _check_token(self, body: Mapping) -> None:
        token = body.get("token")
        if not isinstance(token, str) or not hmac.compare_digest(token.encode(), self.token.encode()):
            raise Refused(403, "wrong or missing study token")

    def start(self, modality: str, body: Mapping) -> dict:
        """A participant's session: resumed, or new on a given or allocated list."""
        experiment = self.experiment(modality)
        self._check_token(body)
        ids = body.get("participant")
        if not isinstance(ids, dict):
            raise Refused(400, "participant ids missing")
        pid = ids.get("PROLIFIC_PID")
        if not isinstance(pid, str) or not PARTICIPANT_ID.match(pid):
            raise Refused(400, "PROLIFIC_PID missing or malformed (1-64 letters, digits, _ or -)")
        platform = {name: ids.get(name) or "" for name in ("STUDY_ID", "SESSION_ID")}
        for name, value in platform.items():
            if not isinstance(value, str) or not PLATFORM_ID.match(value):
                raise Refused(400, f"{name} malformed")
        wanted = body.get("list") or ""
        if not isinstance(wanted, str):
            raise Refused(400, "list must be a list id")
        with self._lock:
            session_id = experiment.by_participant.get(pid)
            if session_id is not None:
                session = experiment.sessions[session_id]
                if session.holds_list:
                    return self._answer(experiment, session)
            per_list = experiment.participants_per_list()
            if wanted:
                if wanted not in experiment.lists:
                    raise Refused(404, f"unknown list {wanted!r}")
                if per_list[wanted] >= self.raters_per_list:
                    raise Refused(409, f"list {wanted} already has its participant(s)")
                list_id = wanted
            else:
                list_id = allocate_list(experiment.lists, per_list, self.raters_per_list)
                if list_id is None:
                    raise Refused(409, "every list of this experiment has its participants")
            session = self._new_session(experiment, list_id, pid, platform, body.get("user_agent"))
            return self._answer(experiment, session)

    def _new_session(self, experiment, list_id, pid, platform, user_agent) -> Session:
        session_id = f"{list_id}-{secrets.token_hex(6)}"
        header = {
            "kind": "session",
            "session_id": session_id,
            "modality": experiment.modality,
            "list_id": list_id,
            "PROLIFIC_PID": pid,
            **platform,
            "started_at": _now(),
            "user_agent": str(user_agent or "")[:300],
        }
        path = experiment.sessions_dir / f"{session_id}.jsonl"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.close(fd)
        append_record(path, header)
        directory = os.open(experiment.sessions_dir, os.O_RDONLY)
        try:
            os.fsync(directory)  # the new file's name survives a crash too
        finally:
            os.close(directory)
        session = Session(header, path)
        experiment._add(session)
        self.write_manifest()
        log.info("%s: session %s, list %s, participant %s", experiment.modality, session_id, list_id, pid)
        return session

    def _answer(self, experiment: Experiment, session: Session) -> dict:
        list_id = session.header["list_id"]
        return {
            "session_id": session.header["session_id"],
            "list_id": list_id,
            "trials": experiment.lists[list_id]["trials"],
            "done": session.done(),
        }

    def record(self, modality: str, body: Mapping) -> dict:
        """Check a record (module docstring) and append it to its session's file."""
        experiment = self.experiment(modality)
        errors = sorted(self.validator.iter_errors(body), key=lambda e: list(e.absolute_path))
        if errors:
            error = errors[0]
            where = ".".join(str(p) for p in error.absolute_path) or "body"
            raise Refused(422, f"{where}: {error.message}")
        self._check_token(body)
        session = experiment.sessions.get(body["session_id"])
        if session is None:
            raise Refused(404, f"unknown session {body['session_id']!r}")
        if not hmac.compare_digest(session.header["PROLIFIC_PID"], body["PROLIFIC_PID"]):
            raise Refused(403, "the session belongs to another participant")
        record = dict(body["record"])
        with session.lock:  # checked and stored under one lock: a consent and a rating never race
            self._check_record(experiment, session, record)
            if record["kind"] == "consent" and session.consent is not None:
                # the same consent again (a retried request): stored once
                return {"stored": True, "done": session.done()}
            stored = {**record, "session_id": session.header["session_id"], "received_at": _now()}
            if record["kind"] == "rating":
                # what the trial showed, from the list the session was served (frozen.shown_key)
                trial = experiment.lists[session.header["list_id"]]["trials"][int(record["order"]) - 1]
                if trial.get("shown"):
                    stored["shown"] = trial["shown"]
            append_record(session.path, stored)
            session.note(record)
            session.records += 1
        self.write_manifest()
        return {"stored": True, "done": session.done()}

    def _check_record(self, experiment: Experiment, session: Session, record: Mapping) -> None:
        kind = record["kind"]
        if kind == "consent":
            if session.consent is not None and session.consent != record["agreed"]:
                given = "given" if session.consent else "declined"
                raise Refused(409, f"consent was already {given} in this session")
        elif session.consent is None:
            raise Refused(409, f"no consent given yet: a {kind} record is stored only after consent")
        elif session.consent is False:
            raise Refused(409, f"consent was declined: no {kind} record is stored for this session")
        if kind == "rating":
            trials = experiment.lists[session.header["list_id"]]["trials"]
            order = int(record["order"])
            if order > len(trials):
                raise Refused(422, f"list {session.header['list_id']} has {len(trials)} trials, not {order}")
            expected = trials[order - 1]["dyad_id"]
            if record["dyad_id"] != expected:
                list_id = session.header["list_id"]
                raise Refused(422, f"trial {order} of list {list_id} is {expected}, not {record['dyad_id']}")
            shown = trials[order - 1].get("shown")
            if record.get("shown") not in (None, shown):
                list_id = session.header["list_id"]
                raise Refused(422, f"trial {order} of list {list_id} shows {shown}, not {record['shown']}")
        elif kind == "practice":
            known = {item["id"] for item in experiment.study["practice"]}
            if record["practice_id"] not in known:
                raise Refused(422, f"unknown practice item {record['practice_id']!r}")
        elif kind == "attention":
            if record["check"] > len(experiment.study["attention_checks"]):
                raise Refused(422, f"unknown attention check {record['check']}")
        elif kind == "questionnaire":
            by_name = {q["name"]: q for q in experiment.study["questionnaires"]}
            questionnaire = by_name.get(record["name"])
            if questionnaire is None:
                raise Refused(422, f"unknown questionnaire {record['name']!r}")
            items = {item["id"] for item in questionnaire["items"]}
            if set(record["answers"]) != items:
                raise Refused(422, f"questionnaire {record['name']}: answers must be items {sorted(items)}")
            top = len(questionnaire["labels"])
            if any(value > top for value in record["answers"].values()):
                raise Refused(422, f"questionnaire {record['name']}: answers are 1..{top}")


# --------------------------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------------------------

CONTENT_TYPES = {
    ".js": "text/javascript",
    ".json": "application/json",
    ".wav": "audio/wav",
    ".mp4": "video/mp4",
}
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class CollectionHandler(http.server.BaseHTTPRequestHandler):
    server_version = "omnisocial-rating-server"
    store: CollectionStore
    max_body_bytes: int

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        log.info("%s %s", self.address_string(), format % args)

    def _send(self, status: int, body: bytes, content_type: str, extra: Mapping | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, payload: Mapping) -> None:
        self._send(status, json.dumps(payload).encode("utf-8"), "application/json")

    def _route(self) -> tuple[str, str]:
        path = urllib.parse.urlsplit(self.path).path
        parts = path.split("/", 2)
        if len(parts) < 2 or not parts[1]:
            raise Refused(404, "open the link of your study (/{modality}/?token=...)")
        return parts[1], parts[2] if len(parts) > 2 else ""

    def do_POST(self):  # noqa: N802 (http.server's name)
        try:
            modality, rest = self._route()
            length = self.headers.get("Content-Length")
            if length is None or not length.isdigit():
                raise Refused(411, "Content-Length required")
            if int(length) > self.max_body_bytes:
                raise Refused(413, f"body over {self.max_body_bytes} bytes")
            raw = self.rfile.read(int(length))
            try:
                body = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise Refused(400, "body is not JSON") from None
            if not isinstance(body, dict):
                raise Refused(400, "body must be a JSON object")
            if rest == "api/start":
                answer = self.store.start(modality, body)
            elif rest == "api/record":
                answer = self.store.record(modality, body)
            else:
                raise Refused(404, f"no such address {self.path!r}")
            self._json(200, answer)
        except Refused as refused:
            log.warning("refused %s %s: %s", self.command, self.path, refused)
            self.close_connection = True
            self._json(refused.status, {"error": str(refused)})

    def do_GET(self):  # noqa: N802
        try:
            modality, rest = self._route()
            experiment = self.store.experiment(modality)
            if not urllib.parse.urlsplit(self.path).path.startswith(f"/{modality}/"):
                self._send(301, b"", "text/plain", {"Location": f"{modality}/"})
                return
            path = self._static_path(experiment.root, urllib.parse.unquote(rest) or "index.html")
            self._send_file(path)
        except Refused as refused:
            self._json(refused.status, {"error": str(refused)})

    do_HEAD = do_GET

    @staticmethod
    def _static_path(root: Path, relative: str) -> Path:
        parts = relative.split("/")
        if "\x00" in relative or any(part in ("..", "") for part in parts[:-1]) or parts[-1] in ("..", "."):
            raise Refused(404, "no such file")
        path = (root / relative).resolve()
        if not path.is_relative_to(root.resolve()) or not path.is_file() or path.name in PRIVATE_FILES:
            raise Refused(404, "no such file")
        return path

    def _send_file(self, path: Path) -> None:
        size = path.stat().st_size
        content_type = (
            CONTENT_TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        )
        start, end, status = 0, size - 1, 200
        match = _RANGE.match(self.headers.get("Range", ""))
        if match and size:
            first, last = match.groups()
            if first:
                start, end = int(first), min(int(last), size - 1) if last else size - 1
            elif last:
                start = max(size - int(last), 0)
            if start > end or start >= size:
                self._send(416, b"", "text/plain", {"Content-Range": f"bytes */{size}"})
                return
            status = 206
        with open(path, "rb") as handle:
            handle.seek(start)
            body = handle.read(end - start + 1)
        extra = {"Accept-Ranges": "bytes"}
        if status == 206:
            extra["Content-Range"] = f"bytes {start}-{end}/{size}"
        self._send(status, body, content_type, extra)


def make_server(store: CollectionStore, host: str = "127.0.0.1", port: int = 0):
    """A ThreadingHTTPServer for `store` (port 0: an ephemeral port, in `server.server_address`)."""
    handler = type("Handler", (CollectionHandler,), {"store": store, "max_body_bytes": store.max_body_bytes})
    server_class = type("Server", (http.server.ThreadingHTTPServer,), {"request_queue_size": 128})
    # the default listen backlog (5) resets connections when a few dozen participants answer at once
    server = server_class((host, port), handler)
    server.daemon_threads = True
    return server


# --------------------------------------------------------------------------------------------
# Import of collected data
# --------------------------------------------------------------------------------------------


def experiment_mapping(study: Mapping) -> dict:
    """The import mapping of collected data (keys of importing.DEFAULT_MAPPING): nothing to write."""
    return {
        "rater_id": "rater_id",
        "dyad_id": "dyad_id",
        "response": "response",
        "response_values": {"familiar": ["familiar"], "stranger": ["stranger"]},
        "practice_dyads": [item["id"] for item in study["practice"]],
        "answered_column": "answered",
        "exclude_column": "excluded",
        "keep": "first",
    }


def experiment_covariate_mapping(questionnaires) -> dict:
    """import_covariates' mapping of the questionnaires: scored scales and copied items."""
    scales, columns = {}, {}
    for questionnaire in questionnaires:
        items = [item["id"] for item in questionnaire["items"]]
        if questionnaire.get("scale"):
            scales[questionnaire["scale"]] = {
                "items": items,
                "reverse": [item["id"] for item in questionnaire["items"] if item.get("reverse")],
                "min": 1,
                "max": len(questionnaire["labels"]),
            }
        else:
            columns.update({item.lower(): item for item in items})
    return {"rater_id": "rater_id", "scales": scales, "columns": columns}


def _session_files(data_dir: Path, modality: str) -> list[list[dict]]:
    sessions = []
    for path in sorted((data_dir / modality / "sessions").glob("*.jsonl")):
        lines = read_session(path)
        if lines and lines[0].get("kind") == "session":
            sessions.append(lines)
        else:
            log.warning("%s: no session header; left out", path)
    return sorted(sessions, key=lambda lines: (lines[0]["started_at"], lines[0]["session_id"]))


# a trial whose clip played for less than this share of its media time in wall-clock time ran
# faster than real time (a changed playbackRate, or a clock the page could not see change)
MIN_REAL_TIME_SHARE = 0.9
PLAYBACK_SLACK_S = 0.15  # event timing of a short clip: `playing` and `ended` fire a frame late


def playback_flag(record: Mapping) -> str:
    """'fast', 'seeked', 'fast,seeked' or '' for a rating or practice record of a clip.

    fast: a playback rate above 1 was set, or the clip played in less wall-clock time than
    MIN_REAL_TIME_SHARE of the media time it advanced; seeked: the participant moved the play
    position. Records of a page older than these fields (no playback_rate) are never flagged.
    """
    flags = []
    rate = record.get("playback_rate")
    wall, media = record.get("played_s"), record.get("media_played_s")
    numbers = all(isinstance(x, int | float) for x in (wall, media))
    too_fast = numbers and wall < MIN_REAL_TIME_SHARE * media - PLAYBACK_SLACK_S
    if (isinstance(rate, int | float) and rate > 1.0 + 1e-9) or too_fast:
        flags.append("fast")
    if record.get("seeked"):
        flags.append("seeked")
    return ",".join(flags)


EXPORT_COLUMNS = [
    "rater_id",
    "session_id",
    "list_id",
    "kind",
    "order",
    "dyad_id",
    "shown",
    "response",
    "rt_ms",
    "input",
    "replays",
    "media_ended",
    "playback_rate",
    "played_s",
    "media_played_s",
    "seeked",
    "playback_flag",
    "excluded",
    "answered",
]


def _rated_dyad(record: Mapping, header: Mapping, lists: Mapping, current: Mapping) -> tuple[str, str]:
    """(current dyad id, shown identity) of a rating record: matched on what it showed.

    A record carries `shown` (frozen.shown_key); one of an older page is given its list
    trial's. The current design's dyad showing the same is the answer's dyad; when none does,
    the dyad id says so (imported as unknown_dyad: lost, never re-pointed). Lists without
    identities (an experiment built before them) keep the record's dyad id.
    """
    shown = record.get("shown")
    if not shown:
        trials = lists.get(header["list_id"], {}).get("trials", [])
        order = int(record.get("order") or 0)
        shown = trials[order - 1].get("shown", "") if 0 < order <= len(trials) else ""
    if not shown:
        return record["dyad_id"], ""
    return current.get(shown) or not_in_design(record["dyad_id"], shown), shown


def session_exports(sessions: list[list[dict]], study: Mapping, lists: Mapping, alias=None):
    """(trial rows, questionnaire rows, session rows) of sessions given as their record lines.

    The first line of each is its header (kind "session": session_id, list_id, PROLIFIC_PID,
    ...). Shared by the server's session files and JATOS's result export (`jatos`). `lists`
    are the current experiment's lists: a rating's dyad is the one showing what the rating
    was given on (`_rated_dyad`). `alias` turns a PROLIFIC_PID into the rater id of the rows
    (frozen.pseudonymizer; default: the id itself).
    """
    modality = study["modality"]
    checks = study["attention_checks"]
    alias = alias or pseudonymizer(None)
    current = {t["shown"]: t["dyad_id"] for e in lists.values() for t in e["trials"] if t.get("shown")}
    rows, answers, table = [], [], []
    for lines in sessions:
        header, records = lines[0], lines[1:]
        rater = alias(header["PROLIFIC_PID"])
        base = {"rater_id": rater, "session_id": header["session_id"], "list_id": header["list_id"]}
        session = Session(header, Path())
        questionnaire_row = {}
        passed = failed = without_consent = 0
        for record in records:
            kind = record["kind"]
            if kind == "consent":
                if session.consent is None:  # the first answer binds (the server refuses a change)
                    session.note(record)
                continue
            if session.consent is not True:
                # before consent or after it was declined (data of a server before it refused
                # them): never imported; ratings counted as `no_consent`, the rest in the sessions table
                without_consent += 1
                if kind not in ("rating", "practice"):
                    continue
            else:
                session.note(record)
            if kind in ("rating", "practice"):
                flag = playback_flag(record) if modality != "text" else ""
                if kind == "rating":
                    dyad, shown = _rated_dyad(record, header, lists, current)
                else:
                    dyad, shown = record["practice_id"], ""
                excluded = "no_consent" if session.consent is not True else "playback_flagged" if flag else ""
                rows.append(
                    {
                        **base,
                        "kind": kind,
                        "order": record.get("order", ""),
                        "dyad_id": dyad,
                        "shown": shown,
                        "response": record["response"],
                        "rt_ms": record["rt_ms"],
                        "input": record.get("input", ""),
                        "replays": record.get("replays", ""),
                        "media_ended": record.get("media_ended", ""),
                        "playback_rate": record.get("playback_rate", ""),
                        "played_s": record.get("played_s", ""),
                        "media_played_s": record.get("media_played_s", ""),
                        "seeked": record.get("seeked", ""),
                        "playback_flag": flag,
                        "excluded": excluded,
                        "answered": True,
                    }
                )
            elif kind == "attention":
                ok = record["response"] == checks[record["check"] - 1]["answer"]
                passed, failed = passed + ok, failed + (not ok)
            elif kind == "questionnaire":
                questionnaire_row.update(record["answers"])
        trials = lists[header["list_id"]]["trials"]
        if session.consent is True and not session.complete:
            for trial in trials:
                if trial["order"] not in session.ratings:
                    blank = dict.fromkeys(EXPORT_COLUMNS, "")
                    rows.append(
                        blank
                        | {**base, "kind": "rating", "order": trial["order"], "dyad_id": trial["dyad_id"]}
                        | {"shown": trial.get("shown", "")}
                        | {"answered": False}
                    )
        if questionnaire_row:
            answers.append({"rater_id": rater, **questionnaire_row})
        status = "declined" if session.consent is False else "complete" if session.complete else "incomplete"
        table.append(
            {
                "modality": modality,
                **{k: header.get(k, "") for k in ("session_id", "list_id", "started_at")},
                "rater_id": rater,
                "consent": {True: "agreed", False: "declined", None: ""}[session.consent],
                "n_trials": len(trials),
                "n_answered": len(session.ratings),
                "attention_passed": passed,
                "attention_failed": failed,
                "questionnaires": ",".join(sorted(session.questionnaires)),
                "n_records": len(records),
                "records_without_consent": without_consent,
                "status": status,
            }
        )
    return rows, answers, table


def export_frames(rows, answers, table, study: Mapping):
    items = [item["id"] for q in study["questionnaires"] for item in q["items"]]
    return (
        pd.DataFrame(rows, columns=EXPORT_COLUMNS),
        pd.DataFrame(answers, columns=["rater_id", *items]),
        pd.DataFrame(table, columns=SESSION_COLUMNS),
    )


def collected_exports(
    data_dir, experiment_dir, alias=None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(trials export, questionnaire export, sessions) of one modality's collected sessions.

    The trials export has one row per rating and practice record (in the order received) and
    one row per list trial an incomplete session never answered (`answered` false, empty
    response); a declined session has no trial rows. Columns EXPORT_COLUMNS: rater_id
    (PROLIFIC_PID), session_id, list_id, kind, order, dyad_id, response, rt_ms, input,
    replays, media_ended, the playback fields (playback_rate, played_s, media_played_s,
    seeked) and their `playback_flag`, `excluded` (the import report's reason for an answer
    that is not imported: `no_consent` for a record stored without consent, `playback_flagged`
    for a clip played faster than real time or seeked) and answered. The questionnaire export
    has one row per session with answers (rater_id and the item ids); the sessions table the
    columns of SESSION_COLUMNS. `alias` names the raters (frozen.pseudonymizer: the workflow
    gives the study's pseudonyms; default the PROLIFIC_PID); `dyad_id` is the current design's
    dyad showing what the rating was given on (`shown`).
    """
    root = Path(experiment_dir)
    study = json.loads((root / "study.json").read_text(encoding="utf-8"))
    lists = json.loads((root / "lists.json").read_text(encoding="utf-8"))
    sessions = _session_files(Path(data_dir), study["modality"])
    return export_frames(*session_exports(sessions, study, lists, alias), study)


def read_counts(sessions: pd.DataFrame) -> tuple[int, int]:
    """(sessions, records after the headers) a sessions table was made from."""
    return len(sessions), int(pd.to_numeric(sessions["n_records"]).sum()) if len(sessions) else 0


def sessions_note(sessions: pd.DataFrame) -> str:
    """'N sessions: c complete, i incomplete, d declined' for the import report and log."""
    counts = sessions["status"].value_counts()
    parts = [f"{int(counts.get(s, 0))} {s}" for s in ("complete", "incomplete", "declined")]
    return f"{len(sessions)} session(s): " + ", ".join(parts)


# --------------------------------------------------------------------------------------------
# Command line: omnisocial rating-server
# --------------------------------------------------------------------------------------------


def _run_server(args) -> int:
    token = args.token or os.environ.get("OMNISOCIAL_STUDY_TOKEN") or secrets.token_urlsafe(16)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        store = CollectionStore(args.experiment, args.data, token, args.raters_per_list)
    except (ValueError, OSError) as error:
        # a second server on the same data folder, a folder without experiments: one line, no traceback
        print(f"omnisocial rating-server: error: {error}", file=sys.stderr)
        return 2
    server = make_server(store, args.host, args.port)
    host, port = server.server_address[:2]
    for modality in store.experiments:
        print(
            f"{modality}: http://{host}:{port}/{modality}/?token={token}"
            "&PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}",
            flush=True,
        )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        store.close()
    return 0


def add_cli(subparsers) -> None:
    parser = subparsers.add_parser(
        "rating-server",
        help="serve the built rating experiments and collect their answers",
        description="Serves the experiments rule rating_experiment built (one folder per modality) and "
        "appends every answer to one JSON-lines file per session under --data "
        "(docs/rating-experiment.md). Prints each modality's study link, with Prolific's placeholders.",
    )
    parser.add_argument("--experiment", required=True, help="the built experiments (ratings/experiment)")
    parser.add_argument("--data", required=True, help="the folder the sessions are stored in")
    parser.add_argument(
        "--token",
        default="",
        help="the study token of the links (default: $OMNISOCIAL_STUDY_TOKEN, else a new one)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    parser.add_argument("--port", type=int, default=0, help="port (default 0: a free one, printed)")
    parser.add_argument(
        "--raters-per-list",
        type=int,
        default=None,
        help="participants per list (default: ratings.experiment.raters_per_list of the build)",
    )
    parser.set_defaults(func=_run_server)

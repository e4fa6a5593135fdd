"""A test backend for JATOS's real jatos.js, for the tests only: no JATOS server runs here.

It imports a study archive (.jzip) as JATOS does (the one .jas file, the assets folder it names)
and answers the calls JATOS's own jatos.js (tests/jatos_publix/, v3.10.5, served unchanged)
makes, at JATOS's addresses (modules/publix/conf/publix.routes at v3.10.5):

    GET  /publix/{studyCode}?query                   starts a study result (a General Multiple
                                                     link) and goes to its component
    GET  /publix/{srUuid}/{compUuid}/start           the component page: a new component result
                                                     (a reload marks the previous one RELOADED),
                                                     and the JATOS_ID cookie jatos.js reads its
                                                     ids from (IdCookieSerialiser)
    GET  /publix/{srUuid}/{compUuid}/jatos.js, jatos-publix/javascripts/*, and the study assets
    GET  /publix/{srUuid}/{compUuid}/initData        JsonUtils.initData's fields
    POST /publix/{srUuid}/{compUuid}/resultData      appends; over resultData.maxSize (5 MB, as
                                                     HOCON reads "5MB") 413 and nothing stored
                                                     (Publix.submitOrAppendResultData)
    POST /publix/{srUuid}/studySessionData, heartbeat, {compUuid}/log
    GET  /publix/{srUuid}/end?successful&message     ends the study run (FINISHED or FAIL)
    GET  /publix/{srUuid}/batch/open                 the batch channel, a WebSocket: OPENED with
                                                     the session data and version, pong to each
                                                     heartbeat, and the batch-session patches
                                                     as BatchActionHandler (3.9.8 and later)
                                                     applies them: read, version check, write,
                                                     with no lock, so two patches at one moment
                                                     both pass the check and the later write
                                                     erases the earlier; SESSION to everyone and
                                                     SESSION_ACK to the sender after the write

`refuse` makes the server answer a path with an HTTP status from then on (403 for a study run
JATOS no longer accepts data for, say); `slow_ack` holds back the answers (broadcast and ack)
to one study result's first batch-session patch, applied at once, for `slow_ack_s`, longer
than jatos.js's 10 s channel timeout. The results export as JATOS's ResultStreamer writes it:
the results ZIP (`study_result_{id}/comp-result_{id}/data.txt` for each component result with
data, and metadata.json) and the plain-text data export (each component result's data followed
by a line break).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import http.server
import json
import mimetypes
import random
import struct
import threading
import time
import urllib.parse
import uuid
import zipfile
from pathlib import Path

PUBLIX_JS = Path(__file__).resolve().parent / "jatos_publix" / "javascripts"
RESULT_DATA_MAX = 5_000_000  # jatos.resultData.maxSize = 5MB (conf/application.conf 63)
WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class JatosServer:
    def __init__(
        self, jzip: Path, folder: Path, race_s: float = 0.15, result_data_max: int = RESULT_DATA_MAX
    ):
        with zipfile.ZipFile(jzip) as archive:
            jas_names = [n for n in archive.namelist() if n.endswith(".jas")]
            assert len(jas_names) == 1, jas_names  # JATOS: "File is not a valid JATOS study"
            self.jas = json.loads(archive.read(jas_names[0]))
            archive.extractall(folder)
        data = self.jas["data"]
        self.assets = folder / data["dirName"]
        self.component = data["componentList"][0]
        self.batch = data["batchList"][0]
        self.study_code = "TESTCODE01"
        self.race_s = race_s  # time between a patch's read and its write (no lock between them)
        self.result_data_max = result_data_max
        self.study_results: dict[int, dict] = {}
        self.component_results: dict[int, dict] = {}
        self.batch_data = "{}"  # Batch.batchSessionData, as stored
        self.batch_version = 1  # Batch.batchSessionVersion starts at 1
        self.patches: list[dict] = []  # every applied patch: who, and whether it erased another
        self.channels: dict[int, _Channel] = {}
        self.refused: dict[str, tuple[int, str]] = {}
        self.requests_refused = 0  # requests answered with a refusal (refuse, or over the size limit)
        self.slow_ack: set[int] = set()
        self.slow_ack_s = 11.0
        self.lock = threading.Lock()  # the server's own bookkeeping, never held across a patch
        self._srids = iter(range(101, 10**6))
        self._crids = iter(range(501, 10**6))
        self.server = None

    def serve(self) -> str:
        handler = type("Handler", (_Handler,), {"jatos": self})
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        for channel in list(self.channels.values()):
            channel.close()
        self.server.shutdown()
        self.server.server_close()

    def link(self, base: str, query: str) -> str:
        return f"{base}/publix/{self.study_code}?{query}"

    def refuse(self, path_end: str, status: int, message: str) -> None:
        self.refused[path_end] = (status, message)

    @property
    def batch_session(self) -> dict:
        return json.loads(self.batch_data)

    # --- study runs ---

    def start_study(self, query: dict) -> dict:
        with self.lock:
            srid = next(self._srids)
            self.study_results[srid] = {
                "id": srid,
                "uuid": str(uuid.uuid4()),
                "query": query,
                "state": "STARTED",
                "session": "{}",
                "components": [],
                "start": int(time.time() * 1000),
                "end": None,
                "message": None,
            }
            return self.study_results[srid]

    def by_uuid(self, sr_uuid: str) -> dict | None:
        return next((s for s in self.study_results.values() if s["uuid"] == sr_uuid), None)

    def start_component(self, study: dict) -> int:
        with self.lock:
            for crid in study["components"]:
                if self.component_results[crid]["state"] not in ("FINISHED", "RELOADED", "FAIL"):
                    self.component_results[crid]["state"] = "RELOADED"
            crid = next(self._crids)
            self.component_results[crid] = {"id": crid, "srid": study["id"], "data": None, "state": "STARTED"}
            study["components"].append(crid)
            study["state"] = "DATA_RETRIEVED"
            return crid

    # --- the batch channel: BatchActionHandler.handlePatch, unlocked as since 3.9.8 ---

    def patch_batch(self, message: dict, channel: _Channel) -> None:
        read_data, read_version = self.batch_data, self.batch_version  # batchDao.findById
        time.sleep(random.uniform(0, self.race_s))  # the rest of the transaction; others run meanwhile
        try:
            data = _apply(json.loads(read_data), message["patches"])
        except (KeyError, IndexError, TypeError, ValueError):
            channel.send({"action": "SESSION_FAIL", "id": message["id"], "version": read_version})
            return
        if message.get("versioning") and message.get("version") != read_version:
            channel.send({"action": "SESSION_FAIL", "id": message["id"], "version": read_version})
            return
        with self.lock:  # the write itself (batchDao.update)
            erased = self.batch_version != read_version  # another write landed since this one's read
            self.batch_data = json.dumps(data)
            self.batch_version = read_version + 1
            slow = channel.srid in self.slow_ack
            self.patches.append(
                {
                    "srid": channel.srid,
                    "patches": message["patches"],
                    "erased_another": erased,
                    "answer_held": slow,
                }
            )
            self.slow_ack.discard(channel.srid)
        answers = [
            (None, {"action": "SESSION", "patches": message["patches"], "version": read_version + 1}),
            (channel, {"action": "SESSION_ACK", "id": message["id"], "version": read_version + 1}),
        ]
        if slow:  # applied, but the answers come after jatos.js's 10 s channel timeout
            threading.Timer(self.slow_ack_s, self._answer, [answers]).start()
        else:
            self._answer(answers)

    def _answer(self, answers) -> None:
        for to, message in answers:
            for channel in [to] if to else list(self.channels.values()):
                channel.send(message)

    # --- the result export, as JATOS's ResultStreamer writes it ---

    def _metadata(self) -> dict:
        data = self.jas["data"]
        results = []
        for srid, study in sorted(self.study_results.items()):
            components = []
            for crid in study["components"]:
                component = self.component_results[crid]
                size = len((component["data"] or "").encode("utf-8"))
                components.append(
                    {
                        "id": crid,
                        "componentId": 1,
                        "componentUuid": self.component["uuid"],
                        "componentState": component["state"],
                        "path": f"/study_result_{srid}/comp-result_{crid}",
                        "data": {"size": size, "sizeHumanReadable": f"{size} B"}
                        | ({"filename": "data.txt"} if size == 0 else {}),
                        "files": [],
                    }
                )
            results.append(
                {
                    "id": srid,
                    "uuid": study["uuid"],
                    "studyCode": self.study_code,
                    "studyState": study["state"],
                    "message": study["message"],
                    "startDate": study["start"],
                    "endDate": study["end"],
                    "urlQueryParameters": study["query"],
                    "workerId": srid,
                    "workerType": "GeneralMultiple",
                    "batchId": 1,
                    "batchUuid": self.batch["uuid"],
                    "batchTitle": self.batch["title"],
                    "componentResults": components,
                }
            )
        return {
            "data": [
                {
                    "studyId": 1,
                    "studyUuid": data["uuid"],
                    "studyTitle": data["title"],
                    "studyResults": results,
                }
            ]
        }

    def export_zip(self, path: Path) -> Path:
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for srid, study in sorted(self.study_results.items()):
                for crid in study["components"]:
                    if self.component_results[crid]["data"] is not None:  # ZipUtil.addDataToZip skips null
                        archive.writestr(
                            f"study_result_{srid}/comp-result_{crid}/data.txt",
                            self.component_results[crid]["data"],
                        )
            archive.writestr("metadata.json", json.dumps(self._metadata()))
        return path

    def export_text(self, path: Path) -> Path:
        parts = [c["data"] + "\n" for _, c in sorted(self.component_results.items()) if c["data"] is not None]
        path.write_text("".join(parts), encoding="utf-8")
        return path


def _apply(data: dict, patches: list[dict]) -> dict:
    """The JSON patches jatos.js sends (add, replace, remove; "remove /" clears everything)."""
    if patches and patches[0]["op"] == "remove" and patches[0]["path"] == "/":
        return {}
    data = copy.deepcopy(data)
    for patch in patches:
        *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in patch["path"].split("/")[1:]]
        target = data
        for part in parents:
            target = target[part]
        if patch["op"] in ("add", "replace"):
            if patch["op"] == "replace" and last not in target:
                raise KeyError(last)
            target[last] = patch["value"]
        elif patch["op"] == "remove":
            del target[last]
        else:
            raise ValueError(patch["op"])
    return data


class _Channel:
    """One batch channel's WebSocket (RFC 6455, text frames)."""

    def __init__(self, handler: _Handler, srid: int):
        self.rfile, self.wfile, self.srid = handler.rfile, handler.wfile, srid
        self.send_lock = threading.Lock()
        self.open = True

    def send(self, message: dict) -> None:
        payload = json.dumps(message).encode()
        n = len(payload)
        head = bytes([0x81, n]) if n < 126 else bytes([0x81, 126]) + struct.pack(">H", n)
        if n >= 65536:
            head = bytes([0x81, 127]) + struct.pack(">Q", n)
        with self.send_lock:
            if not self.open:
                return
            try:
                self.wfile.write(head + payload)
                self.wfile.flush()
            except OSError:
                self.open = False

    def receive(self) -> tuple[int, bytes] | None:
        head = self.rfile.read(2)
        if len(head) < 2:
            return None
        opcode, n = head[0] & 0x0F, head[1] & 0x7F
        if n == 126:
            n = struct.unpack(">H", self.rfile.read(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self.rfile.read(8))[0]
        mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
        return opcode, payload

    def close(self) -> None:
        with self.send_lock:
            if self.open:
                self.open = False
                try:
                    self.wfile.write(bytes([0x88, 0]))
                    self.wfile.flush()
                except OSError:
                    pass


class _Handler(http.server.BaseHTTPRequestHandler):
    jatos: JatosServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002
        pass

    def _send(self, status: int, body: bytes, content_type: str = "text/plain", extra=None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _parts(self):
        url = urllib.parse.urlsplit(self.path)
        return [urllib.parse.unquote(p) for p in url.path.strip("/").split("/")], dict(
            urllib.parse.parse_qsl(url.query)
        )

    def _refused(self) -> bool:
        path = urllib.parse.urlsplit(self.path).path
        for end, (status, message) in self.jatos.refused.items():
            if path.endswith(end):
                with self.jatos.lock:
                    self.jatos.requests_refused += 1
                self._send(status, message.encode())
                return True
        return False

    def do_GET(self):  # noqa: N802
        parts, query = self._parts()
        jatos = self.jatos
        if parts[:1] != ["publix"]:
            self._send(404, b"no such page")
            return
        if len(parts) == 2 and parts[1] == jatos.study_code:
            study = jatos.start_study(query)
            self._send(
                303, b"", extra={"Location": f"/publix/{study['uuid']}/{jatos.component['uuid']}/start"}
            )
            return
        study = jatos.by_uuid(parts[1]) if len(parts) > 2 else None
        if study is None:
            self._send(404, b"no such study run")
            return
        rest = "/".join(parts[2:])
        if rest == "batch/open":
            self._batch_channel(study)
        elif rest == "end":
            if not self._refused():
                self._end(study, query)
        elif parts[2] != jatos.component["uuid"]:
            self._send(404, b"no such component")
        else:
            self._component(study, "/".join(parts[3:]))

    def _component(self, study: dict, rest: str) -> None:
        jatos = self.jatos
        if rest == "start":
            if study["state"] in ("FINISHED", "FAIL"):
                self._send(403, b"this study run has ended")
                return
            crid = jatos.start_component(study)
            cookie = "&".join(
                f"{k}={v}"
                for k, v in [
                    ("batchId", 1),
                    ("componentId", 1),
                    ("componentPos", 1),
                    ("componentResultId", crid),
                    ("creationTime", int(time.time() * 1000)),
                    ("studyAssets", jatos.jas["data"]["dirName"]),
                    ("urlBasePath", "/"),
                    ("jatosRun", "null"),
                    ("studyId", 1),
                    ("studyResultId", study["id"]),
                    ("studyResultUuid", study["uuid"]),
                    ("workerId", study["id"]),
                    ("workerType", "GeneralMultiple"),
                ]
            )
            index = study["id"]  # one cookie a study run (JATOS keeps up to 10, reusing the oldest)
            page = (jatos.assets / jatos.component["htmlFilePath"]).read_bytes()
            self._send(
                200, page, "text/html; charset=utf-8", {"Set-Cookie": f"JATOS_ID_{index}={cookie}; Path=/"}
            )
        elif rest == "initData":
            self._send(200, json.dumps(self._init_data(study)).encode(), "application/json")
        elif rest == "jatos.js" or rest.startswith("jatos-publix/javascripts/"):
            self._send(200, (PUBLIX_JS / rest.rsplit("/", 1)[-1]).read_bytes(), "text/javascript")
        else:
            path = (jatos.assets / rest).resolve()
            if not path.is_relative_to(jatos.assets.resolve()) or not path.is_file():
                self._send(404, b"no such file")
                return
            kind = {".js": "text/javascript", ".wav": "audio/wav", ".mp4": "video/mp4"}.get(path.suffix)
            self._send(
                200,
                path.read_bytes(),
                kind or mimetypes.guess_type(path.name)[0] or "application/octet-stream",
            )

    def _init_data(self, study: dict) -> dict:
        data, component = self.jatos.jas["data"], self.jatos.component
        return {
            "studySessionData": study["session"],
            "studyProperties": {
                "id": 1,
                "uuid": data["uuid"],
                "title": data["title"],
                "dirName": data["dirName"],
            }
            | {"studyInput": data.get("jsonData")},
            "batchProperties": {"id": 1, "title": self.jatos.batch["title"], "batchInput": None},
            "componentList": [
                {"id": 1, "uuid": component["uuid"], "title": component["title"], "position": 1}
            ],
            "componentProperties": {"id": 1, "uuid": component["uuid"], "title": component["title"]}
            | {"componentInput": component.get("jsonData"), "reloadable": component["reloadable"]},
            "urlQueryParameters": study["query"],
            "studyCode": self.jatos.study_code,
        }

    def _end(self, study: dict, query: dict) -> None:
        with self.jatos.lock:
            successful = query.get("successful", "true") == "true"
            study["state"] = "FINISHED" if successful else "FAIL"
            study["message"] = query.get("message")
            study["end"] = int(time.time() * 1000)
            for crid in study["components"]:
                if self.jatos.component_results[crid]["state"] not in ("RELOADED",):
                    self.jatos.component_results[crid]["state"] = "FINISHED" if successful else "FAIL"
        self._send(200, b" ")

    def do_POST(self):  # noqa: N802
        parts, _ = self._parts()
        jatos = self.jatos
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8")
        study = jatos.by_uuid(parts[1]) if len(parts) > 2 and parts[0] == "publix" else None
        if study is None:
            self._send(404, b"no such study run")
            return
        if self._refused():
            return
        rest = "/".join(parts[2:])
        if rest in ("heartbeat", f"{jatos.component['uuid']}/log"):
            self._send(200, b"")
        elif rest == "studySessionData":
            study["session"] = body
            self._send(200, b"")
        elif rest == f"{jatos.component['uuid']}/resultData":
            self._append(study, body)
        else:
            self._send(404, b"no such address")

    def _append(self, study: dict, body: str) -> None:
        jatos = self.jatos
        with jatos.lock:
            if study["state"] in ("FINISHED", "FAIL"):
                self._send(403, b"Impossible to put result data to component result")
                return
            component = jatos.component_results[study["components"][-1]]
            size = len((component["data"] or "").encode()) + len(body.encode())
            if size > jatos.result_data_max:
                jatos.requests_refused += 1
                self._send(
                    413, b"Result data size exceeds allowed 5 MB. Consider using result files instead."
                )
                return
            component["data"] = (component["data"] or "") + body
            component["state"] = "RESULTDATA_POSTED"
        self._send(200, b"")

    def _batch_channel(self, study: dict) -> None:
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        channel = _Channel(self, study["id"])
        jatos = self.jatos
        with jatos.lock:
            old = jatos.channels.get(study["id"])
            jatos.channels[study["id"]] = channel
            opened = {
                "action": "OPENED",
                "data": json.loads(jatos.batch_data),
                "version": jatos.batch_version,
            }
        if old:
            old.close()
        channel.send(opened)
        while True:
            frame = channel.receive()
            if frame is None or frame[0] == 0x8:
                break
            opcode, payload = frame
            if opcode != 0x1:
                continue
            message = json.loads(payload)
            if message.get("heartbeat") == "ping":
                channel.send({"heartbeat": "pong"})
            elif message.get("action") == "SESSION":
                # each channel's patches in turn, the channels' at once (BatchChannelActor calls
                # the BatchDispatcher directly since 3.9.8)
                jatos.patch_batch(message, channel)
        channel.close()
        with jatos.lock:
            if jatos.channels.get(study["id"]) is channel:
                del jatos.channels[study["id"]]
        self.close_connection = True

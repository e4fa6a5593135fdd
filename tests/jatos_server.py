"""A stand-in for a JATOS server, for the tests only: no JATOS server runs here.

It imports a study archive (.jzip) as JATOS does (the one .jas file, the assets folder it names)
and runs it for participants: the study link `/publix/{study uuid}/start?PROLIFIC_PID=...`
starts a study result and opens its component at `/publix/run/{study result id}/index.html`;
loading the component page starts a component result (a reload marks the previous one
RELOADED, as JATOS does). The page's jatos.js is `tests/jatos_standin/jatos.js`, which talks to
`standin/*` here. It keeps result data per component result, study session data per study
result and one versioned batch session, and exports the results as JATOS does: the results ZIP
(`study_result_{id}/comp-result_{id}/data.txt` and metadata.json, JATOS's field names) and the
plain-text data export (each component result's data followed by a line break).
"""

from __future__ import annotations

import http.server
import json
import mimetypes
import threading
import time
import urllib.parse
import zipfile
from pathlib import Path

STANDIN_JS = Path(__file__).resolve().parent / "jatos_standin" / "jatos.js"


class JatosStandIn:
    def __init__(self, jzip: Path, folder: Path):
        with zipfile.ZipFile(jzip) as archive:
            jas_names = [n for n in archive.namelist() if n.endswith(".jas")]
            assert len(jas_names) == 1, jas_names  # JATOS: "File is not a valid JATOS study"
            self.jas = json.loads(archive.read(jas_names[0]))
            archive.extractall(folder)
        data = self.jas["data"]
        self.assets = folder / data["dirName"]
        self.component = data["componentList"][0]
        self.batch = data["batchList"][0]
        self.study_results: dict[int, dict] = {}
        self.component_results: dict[int, dict] = {}
        self.batch_session = {"version": 0, "data": {}}
        self.lock = threading.Lock()
        self._ids = iter(range(1, 10**6))
        self.server = None

    def serve(self) -> str:
        handler = type("Handler", (_Handler,), {"jatos": self})
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def link(self, base: str, query: str) -> str:
        return f"{base}/publix/{self.jas['data']['uuid']}/start?{query}"

    # --- JATOS's state ---

    def start_study(self, query: dict) -> int:
        with self.lock:
            srid = next(self._ids)
            self.study_results[srid] = {
                "id": srid,
                "query": query,
                "state": "STARTED",
                "session": "{}",
                "components": [],
                "start": int(time.time() * 1000),
                "end": None,
                "message": None,
            }
            return srid

    def start_component(self, srid: int) -> int:
        with self.lock:
            study = self.study_results[srid]
            for crid in study["components"]:
                if self.component_results[crid]["state"] not in ("FINISHED", "RELOADED"):
                    self.component_results[crid]["state"] = "RELOADED"
            crid = next(self._ids) + 1000
            self.component_results[crid] = {"id": crid, "srid": srid, "data": "", "state": "STARTED"}
            study["components"].append(crid)
            study["state"] = "DATA_RETRIEVED"
            return crid

    # --- the result export, as JATOS writes it ---

    def _metadata(self) -> dict:
        data = self.jas["data"]
        results = []
        for srid, study in sorted(self.study_results.items()):
            components = []
            for crid in study["components"]:
                component = self.component_results[crid]
                size = len(component["data"].encode("utf-8"))
                components.append(
                    {
                        "id": crid,
                        "componentId": 1,
                        "componentUuid": self.component["uuid"],
                        "componentState": component["state"],
                        "path": f"/study_result_{srid}/comp-result_{crid}",
                        "data": {"size": size, "sizeHumanReadable": f"{size} B"},
                        "files": [],
                    }
                )
            results.append(
                {
                    "id": srid,
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
                    archive.writestr(
                        f"study_result_{srid}/comp-result_{crid}/data.txt",
                        self.component_results[crid]["data"],
                    )
            archive.writestr("metadata.json", json.dumps(self._metadata()))
        return path

    def export_text(self, path: Path) -> Path:
        parts = [self.component_results[crid]["data"] + "\n" for crid in sorted(self.component_results)]
        path.write_text("".join(parts), encoding="utf-8")
        return path


class _Handler(http.server.BaseHTTPRequestHandler):
    jatos: JatosStandIn

    def log_message(self, format, *args):  # noqa: A002
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json", extra=None) -> None:
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
        return url.path.strip("/").split("/"), dict(urllib.parse.parse_qsl(url.query))

    def do_GET(self):  # noqa: N802
        parts, query = self._parts()
        jatos = self.jatos
        if parts[:1] == ["publix"] and parts[2:3] == ["start"]:
            srid = jatos.start_study(query)
            location = f"/publix/run/{srid}/{jatos.component['htmlFilePath']}?{urllib.parse.urlencode(query)}"
            self._send(303, b"", "text/plain", {"Location": location})
            return
        if parts[:2] != ["publix", "run"]:
            self._send(404, b"no such page", "text/plain")
            return
        srid, rest = int(parts[2]), "/".join(parts[3:])
        study = jatos.study_results[srid]
        if rest == jatos.component["htmlFilePath"]:
            if study["state"] in ("FINISHED", "FAIL"):
                self._send(403, b"this study run has ended", "text/plain")
                return
            study["current"] = jatos.start_component(srid)
        if rest == "jatos.js":
            self._send(200, STANDIN_JS.read_bytes(), "text/javascript")
            return
        if rest == "standin/init":
            init = {
                "ids": {
                    "studyResultId": srid,
                    "componentResultId": study["current"],
                    "workerId": srid,
                    "batchId": 1,
                },
                "urlQueryParameters": study["query"],
                "studySessionData": json.loads(study["session"]),
                "batchSession": jatos.batch_session,
            }
            self._send(200, json.dumps(init).encode())
            return
        if rest == "standin/batchSession":
            self._send(200, json.dumps(jatos.batch_session).encode())
            return
        path = (jatos.assets / rest).resolve()
        if not path.is_relative_to(jatos.assets.resolve()) or not path.is_file():
            self._send(404, b"no such file", "text/plain")
            return
        kind = {".js": "text/javascript", ".wav": "audio/wav", ".mp4": "video/mp4"}.get(path.suffix)
        self._send(
            200, path.read_bytes(), kind or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        )

    def do_POST(self):  # noqa: N802
        parts, query = self._parts()
        jatos = self.jatos
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8")
        srid, rest = int(parts[2]), "/".join(parts[3:])
        study = jatos.study_results[srid]
        with jatos.lock:
            if rest == "standin/resultData":
                component = jatos.component_results[int(query["componentResultId"])]
                component["data"] += body  # appendResultData: appended as sent
                component["state"] = "RESULTDATA_POSTED"
                self._send(200, b"")
            elif rest == "standin/studySessionData":
                study["session"] = body
                self._send(200, b"")
            elif rest == "standin/batchSession":
                patch = json.loads(body)
                if patch["version"] != jatos.batch_session["version"]:
                    self._send(409, b"batch session changed (versioning)", "text/plain")
                    return
                data = dict(jatos.batch_session["data"], **{patch["name"]: patch["value"]})
                jatos.batch_session = {"version": jatos.batch_session["version"] + 1, "data": data}
                self._send(200, json.dumps(jatos.batch_session).encode())
            elif rest == "standin/end":
                end = json.loads(body)
                study["state"] = "FINISHED" if end["successful"] else "FAIL"
                study["message"] = end["message"]
                study["end"] = int(time.time() * 1000)
                jatos.component_results[study["current"]]["state"] = "FINISHED"
                self._send(200, b"")
            else:
                self._send(404, b"no such address", "text/plain")

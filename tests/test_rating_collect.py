"""The rating experiment's collection server over real HTTP (127.0.0.1, an ephemeral port).

Refusals (token, schema, design, unknown lists and sessions, body size, paths leaving the
experiment folder), resuming, list allocation balanced over blocks, and 30 participants at once
from threads: every record stored once, no list given twice, then imported with nothing lost.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from rating_study import JSPSYCH_DIR, build_study

from omnisocial.familiarity.ratings import import_panel, import_ratings
from omnisocial.familiarity.ratings.collect import (
    CollectionStore,
    allocate_list,
    collected_exports,
    experiment_mapping,
    make_server,
    read_session,
)
from omnisocial.io import write_csv

TOKEN = "collect-test-token"
N_PARTICIPANTS = 30

pytestmark = pytest.mark.skipif(
    not (JSPSYCH_DIR / "jspsych").is_dir(), reason="jsPsych not installed (make web-deps)"
)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rating_collect")
    return build_study(folder / "study", raters=N_PARTICIPANTS) | {"folder": folder}


class Client:
    def __init__(self, port: int):
        self.port = port

    def request(self, method: str, path: str, body=None, raw: bytes | None = None, headers=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        connection.request(
            method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})}
        )
        response = connection.getresponse()
        payload = response.read()
        connection.close()
        return response.status, payload

    def post(self, path: str, body) -> tuple[int, dict]:
        status, payload = self.request("POST", path, body)
        return status, json.loads(payload)

    def start(
        self, modality: str, pid: str, list_id: str = "", token: str = TOKEN, consent: bool | None = True
    ):
        """Start (or resume) a session; `consent` True / False answers the consent screen."""
        ids = {"PROLIFIC_PID": pid, "STUDY_ID": "STUDY1", "SESSION_ID": f"S-{pid}"}
        status, session = self.post(
            f"/{modality}/api/start", {"token": token, "participant": ids, "list": list_id}
        )
        if status == 200 and consent is not None and not session["done"]["consent"]:
            self.consent(modality, session, pid, consent)
        return status, session

    def consent(self, modality: str, session: dict, pid: str, agreed: bool):
        body = {"token": TOKEN, "session_id": session["session_id"], "PROLIFIC_PID": pid}
        return self.post(f"/{modality}/api/record", body | {"record": {"kind": "consent", "agreed": agreed}})

    def rate(self, modality: str, session: dict, pid: str, trial: dict, response: str = "familiar"):
        record = {"kind": "rating", "order": trial["order"], "dyad_id": trial["dyad_id"]}
        record |= {"response": response, "rt_ms": 812.5, "input": "click", "replays": 0, "media_ended": True}
        body = {"token": TOKEN, "session_id": session["session_id"], "PROLIFIC_PID": pid, "record": record}
        return self.post(f"/{modality}/api/record", body)


@pytest.fixture
def served(study, tmp_path):
    store = CollectionStore(study["experiments"], tmp_path / "collected", TOKEN)
    server = make_server(store, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Client(server.server_address[1]), store
    server.shutdown()
    server.server_close()
    store.close()


@pytest.mark.heavy  # 5 CPU-s
def test_refusals_name_their_reason(served):
    client, store = served
    assert client.start("audio", "P1", token="wrong")[0] == 403
    assert client.start("audio", "bad id!")[0] == 400
    status, answer = client.start("audio", "P1", list_id="A999")
    assert (status, answer["error"]) == (404, "unknown list 'A999'")
    assert client.start("smell", "P1")[0] == 404
    status, session = client.start("audio", "P1", list_id="A002")
    assert status == 200 and session["list_id"] == "A002"
    assert client.start("audio", "P2", list_id="A002")[0] == 409  # one participant per list
    trial = session["trials"][0]
    assert client.rate("audio", session, "P1", trial, response="maybe")[0] == 422
    wrong = dict(trial, dyad_id=session["trials"][1]["dyad_id"])
    status, answer = client.rate("audio", session, "P1", wrong)
    assert status == 422 and "trial 1 of list A002" in answer["error"]
    assert client.rate("audio", session, "P9", trial)[0] == 403  # another participant's session
    assert client.rate("audio", dict(session, session_id="A002-000000000000"), "P1", trial)[0] == 404
    big = b'{"token": "' + b"x" * (store.max_body_bytes + 1) + b'"}'
    assert client.request("POST", "/audio/api/record", raw=big)[0] == 413
    assert client.request("POST", "/audio/api/record", raw=b"{not json")[0] == 400
    for path in (
        "/audio/../text/study.json",
        "/audio/%2e%2e/%2e%2e/etc/passwd",
        "/audio/stimuli/../../../../etc/passwd",
        "/audio/lists.json",
        "/audio/build.json",
        "/audio/stimuli/audio/nothing.wav",
    ):
        assert client.request("GET", path)[0] == 404, path
    status, page = client.request("GET", "/audio/")
    assert status == 200 and b"jspsych/jspsych.js" in page and b"unpkg" not in page
    status, part = client.request("GET", f"/audio/{trial['stimulus']}", headers={"Range": "bytes=0-3"})
    assert (status, part) == (206, b"RIFF")
    # nothing refused was stored: the session file holds its header and the consent only
    lines = read_session(store.experiments["audio"].sessions[session["session_id"]].path)
    assert [line["kind"] for line in lines] == ["session", "consent"]


def test_reload_resumes_and_answers_are_on_disk(served):
    client, store = served
    status, session = client.start("video", "PV1")
    assert status == 200 and session["done"]["ratings"] == []
    for trial in session["trials"][:2]:
        assert client.rate("video", session, "PV1", trial, "stranger")[0] == 200
    status, again = client.start("video", "PV1")  # the page reloaded
    assert again["session_id"] == session["session_id"] and again["done"]["ratings"] == [1, 2]
    lines = read_session(Path(store.experiments["video"].sessions[session["session_id"]].path))
    assert [line["kind"] for line in lines] == ["session", "consent", "rating", "rating"]
    assert lines[0]["PROLIFIC_PID"] == "PV1" and lines[0]["STUDY_ID"] == "STUDY1"
    assert lines[0]["SESSION_ID"] == "S-PV1"
    # a server restarted on the same folder knows the session
    store.close()
    restarted = CollectionStore(store.root, store.data_dir, TOKEN)
    try:
        assert restarted.experiments["video"].sessions[session["session_id"]].done()["ratings"] == [1, 2]
    finally:
        restarted.close()
    store._server_lock = open(store.data_dir / ".server.lock", "w")  # noqa: SIM115 (the fixture closes it)


def test_allocation_balances_blocks():
    lists = {
        f"L{i}": {"blocks": blocks}
        for i, blocks in enumerate([[1, 2], [1, 3], [2, 3], [1, 2], [1, 3], [2, 3]])
    }
    taken = dict.fromkeys(lists, 0)
    taken["L0"] = taken["L1"] = 1  # blocks 1, 2, 3 have 2, 1, 1 raters
    assert allocate_list(lists, taken, 1) == "L2"  # blocks 2 and 3, not the next list in order (L3: 1 and 2)
    assert allocate_list(lists, dict.fromkeys(lists, 1), 1) is None


def test_thirty_participants_at_once(served, study, tmp_path):
    client, store = served
    modality = "audio"

    def participant(i: int):
        pid = f"PCON{i:02d}"
        status, session = client.start(modality, pid)
        assert status == 200, session
        for trial in session["trials"]:
            response = "familiar" if (i + trial["order"]) % 2 else "stranger"
            assert client.rate(modality, session, pid, trial, response)[0] == 200
        # a retried request (its answer lost on the way back): the same answer again
        assert (
            client.rate(
                modality, session, pid, session["trials"][0], "familiar" if (i + 1) % 2 else "stranger"
            )[0]
            == 200
        )
        again = client.start(modality, pid)[1]
        assert again["list_id"] == session["list_id"]
        return pid, session

    with ThreadPoolExecutor(max_workers=N_PARTICIPANTS) as pool:
        results = list(pool.map(participant, range(N_PARTICIPANTS)))
    assert client.start(modality, "PLATE")[0] == 409  # every list has its participant

    lists = [session["list_id"] for _, session in results]
    assert len(set(lists)) == N_PARTICIPANTS == len(store.experiments[modality].lists)
    per_block: dict[int, int] = {}
    for list_id in lists:
        for block in store.experiments[modality].lists[list_id]["blocks"]:
            per_block[block] = per_block.get(block, 0) + 1
    assert set(per_block.values()) == {N_PARTICIPANTS * 2 // 3}

    exports, _, sessions = collected_exports(store.data_dir, study["experiments"] / modality)
    assert len(exports) == N_PARTICIPANTS * 5  # four trials and one retry each, none lost or doubled
    per_session = exports.groupby("session_id")["order"].apply(lambda o: sorted(o.astype(int)))
    assert all(orders == [1, 1, 2, 3, 4] for orders in per_session)
    write_csv(tmp_path / "export.csv", exports)
    study_json = store.experiments[modality].study
    trials, report = import_ratings(
        tmp_path / "export.csv", experiment_mapping(study_json), modality, study["design"]
    )
    counts = dict(zip(report["reason"], report["n"], strict=True))
    assert counts["imported"] == N_PARTICIPANTS * 4 and counts["duplicate"] == N_PARTICIPANTS
    assert report.loc[report["lost"], "n"].sum() == 0
    assert set(sessions["status"]) == {"incomplete"}  # no completion record was sent
    expected = {
        (pid, trial["dyad_id"]): "familiar" if (i + trial["order"]) % 2 else "stranger"
        for i, (pid, session) in enumerate(results)
        for trial in session["trials"]
    }
    assert (
        dict(zip(zip(trials["rater_id"], trials["dyad_id"], strict=True), trials["response"], strict=True))
        == expected
    )


def test_declined_consent_frees_the_list(served):
    client, store = served
    status, session = client.start("text", "PDECLINE", list_id="T003", consent=False)
    assert status == 200
    status, taken = client.start("text", "PNEXT", list_id="T003")  # nothing of T003 was rated
    assert status == 200 and taken["list_id"] == "T003"
    assert client.start("text", "PTHIRD", list_id="T003")[0] == 409


def test_no_record_without_consent(served, study, tmp_path):
    """Before consent and after a declined one: every kind of record refused (409, the reason), and
    a session file written by an older server (a rating after a decline) is never imported."""
    client, store = served
    body = {"token": TOKEN, "PROLIFIC_PID": "PWAIT"}
    status, waiting = client.start("text", "PWAIT", consent=None)
    trial = waiting["trials"][0]
    records = [
        {"kind": "rating", "order": 1, "dyad_id": trial["dyad_id"], "response": "familiar", "rt_ms": 900},
        {"kind": "practice", "practice_id": "P001", "response": "familiar", "rt_ms": 900},
        {"kind": "attention", "check": 1, "response": "familiar", "rt_ms": 900},
        {
            "kind": "questionnaire",
            "name": "cue_use",
            "answers": {"CUE_words": 1, "CUE_voice": 1, "CUE_face": 1},
        },
        {"kind": "complete"},
    ]
    for record in records:
        status, answer = client.post(
            "/text/api/record", body | {"session_id": waiting["session_id"], "record": record}
        )
        assert (status, answer["error"]) == (
            409,
            f"no consent given yet: a {record['kind']} record is stored only after consent",
        )
    status, declined = client.start("text", "PNO", consent=False)
    body["PROLIFIC_PID"] = "PNO"
    for record in records:
        status, answer = client.post(
            "/text/api/record", body | {"session_id": declined["session_id"], "record": record}
        )
        assert (status, answer["error"]) == (
            409,
            f"consent was declined: no {record['kind']} record is stored for this session",
        )
    status, answer = client.consent("text", declined, "PNO", True)
    assert (status, answer["error"]) == (409, "consent was already declined in this session")
    assert client.consent("text", declined, "PNO", False)[0] == 200  # a retried decline: stored once
    path = store.experiments["text"].sessions[declined["session_id"]].path
    assert [line["kind"] for line in read_session(path)] == ["session", "consent"]
    # an older server stored a rating after the decline: the import leaves it out, counted
    with open(path, "a") as handle:
        handle.write(json.dumps(records[0] | {"session_id": declined["session_id"]}) + "\n")
    exports, _, sessions = collected_exports(store.data_dir, study["experiments"] / "text")
    write_csv(tmp_path / "text.csv", exports)
    trials, report = import_ratings(
        tmp_path / "text.csv", experiment_mapping(store.experiments["text"].study), "text", study["design"]
    )
    counts = dict(zip(report["reason"], report["n"], strict=True))
    assert counts["no_consent"] == 1 and counts["imported"] == 0 and "PNO" not in set(trials["rater_id"])
    row = sessions.set_index("rater_id").loc["PNO"]
    assert (row["status"], row["records_without_consent"]) == ("declined", 1)
    manifest = json.loads((store.data_dir / "manifest.json").read_text())
    assert manifest["text"]["sessions"] == 2 and manifest["text"]["records"] == 1  # the decline


def test_import_panel_reads_the_collection_with_no_mapping(served, study, tmp_path):
    client, store = served
    status, done = client.start("text", "PFULL")
    for trial in done["trials"]:
        client.rate("text", done, "PFULL", trial, "stranger")
    status, half = client.start("text", "PHALF")
    client.rate("text", half, "PHALF", half["trials"][0], "familiar")
    body = {"token": TOKEN, "session_id": done["session_id"], "PROLIFIC_PID": "PFULL"}
    answers = {item["id"]: 6 for item in study["settings"]["questionnaires"][0]["items"]}
    record = {"kind": "questionnaire", "name": "tsis_sip", "answers": answers, "rt_ms": 20000}
    assert client.post("/text/api/record", body | {"record": record})[0] == 200
    bad = dict(record, answers=dict(answers, SIP_1=8))
    status, refused = client.post("/text/api/record", body | {"record": bad})
    assert status == 422 and "answers are 1..7" in refused["error"]
    assert client.post("/text/api/record", body | {"record": {"kind": "complete"}})[0] == 200

    exports, questionnaires, sessions = collected_exports(store.data_dir, study["experiments"] / "text")
    write_csv(tmp_path / "text.csv", exports)
    write_csv(tmp_path / "covariates.csv", questionnaires)
    trials, report, covariates = import_panel(
        {"text": tmp_path / "text.csv"},
        study["design"],
        "experiment",
        covariates_csv=tmp_path / "covariates.csv",
        experiment=study["settings"],
        sessions=sessions,
    )
    counts = dict(zip(report["reason"], report["n"], strict=True))
    assert (
        counts["imported"] == 5 and counts["unanswered"] == 3 and report.loc[report["lost"], "n"].sum() == 0
    )
    note = report.loc[report["reason"] == "unanswered", "example"].iloc[0]
    assert note.startswith("2 session(s): 1 complete, 1 incomplete, 0 declined")
    assert set(trials["rater_id"]) == {"PFULL", "PHALF"}
    # six items answered 6 and SIP_4 (reverse-keyed) 1 + 7 - 6 = 2: (36 + 2) / 7
    assert covariates.set_index("rater_id").loc["PFULL", "sip"] == pytest.approx(38 / 7)


def test_the_command_serves_on_an_ephemeral_port(study, tmp_path):
    command = [
        sys.executable,
        "-m",
        "omnisocial.cli",
        "rating-server",
        "--experiment",
        str(study["experiments"]),
    ]
    command += ["--data", str(tmp_path / "collected"), "--token", TOKEN, "--port", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        links = [process.stdout.readline().strip() for _ in range(3)]
        assert [link.split(":", 1)[0] for link in links] == ["audio", "text", "video"]
        port = int(links[0].split("127.0.0.1:", 1)[1].split("/", 1)[0])
        assert f"token={TOKEN}&PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}" in links[0]
        status, session = Client(port).start("audio", "PCLI")
        assert status == 200 and session["list_id"] == "A001"
        second = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert second.returncode == 2 and second.stdout == ""
        assert second.stderr.strip().splitlines() == [
            f"omnisocial rating-server: error: {tmp_path / 'collected'}: another collection server uses "
            "this data folder"
        ]
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert len(list((tmp_path / "collected" / "audio" / "sessions").glob("*.jsonl"))) == 1

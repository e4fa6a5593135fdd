"""The rating experiment in a real browser: headless Debian chromium, driven by Selenium.

One scripted participant per modality runs a built experiment against the collection server
(`omnisocial.familiarity.ratings.collect`, 127.0.0.1, an ephemeral port): consent, the
instructions, a practice trial, the list (media played to its end: the page's `ended` event),
an attention check, a reload mid-way (the page resumes at the first unanswered trial), the two
questionnaires and the completion code. A second participant closes the tab after one answer.
Then the collected data go through `import_ratings` with the built-in mapping: every answered
trial is imported, each response is the one clicked (or keyed), nothing is lost, and the
unanswered trials of the closed session are counted.

Set RATING_SCREENSHOTS=<folder> to save a PNG of each screen (docs/img/rating/ holds them).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from rating_study import JSPSYCH_DIR, build_study, experiment_settings

from omnisocial.familiarity.ratings import import_covariates, import_ratings
from omnisocial.familiarity.ratings.collect import (
    CollectionStore,
    collected_exports,
    experiment_covariate_mapping,
    experiment_mapping,
    make_server,
)
from omnisocial.io import write_csv

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
TOKEN = "browser-test-token"
MODALITIES = ("text", "audio", "video")
SCREENSHOTS = os.environ.get("RATING_SCREENSHOTS", "")

pytestmark = [
    pytest.mark.browser,
    # a real Chromium for every test: its start and the study's pages cost 4-14 CPU-s a test
    pytest.mark.heavy,
    pytest.mark.skipif(
        not (Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()),
        reason="chromium and chromedriver not installed (make system-deps installs them; .ci/run runs that)",
    ),
    pytest.mark.skipif(
        not (JSPSYCH_DIR / "jspsych").is_dir(), reason="jsPsych not installed (make web-deps)"
    ),
]

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import TimeoutException, WebDriverException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rating_browser")
    probe = build_study(folder / "probe")  # practice paths come from the first build
    practice = probe["settings"]["practice"]
    settings = experiment_settings(
        practice=practice,
        attention_checks=[
            {"after": 2, "prompt": "To show that you read this, answer Strangers.", "answer": "stranger"}
        ],
        completion={"code": "C0DE42"},
        max_replays=1,
    )
    # six lists a modality: the scripted participants take two, the tests after them the rest
    return build_study(folder / "study", raters=6, settings=settings) | {"folder": folder}


@pytest.fixture(scope="module")
def server(study):
    store = CollectionStore(study["experiments"], study["folder"] / "collected", TOKEN)
    httpd = make_server(store, "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", store
    httpd.shutdown()
    httpd.server_close()
    store.close()


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--mute-audio"):
        options.add_argument(argument)
    # pages in background tabs keep their timers (the JATOS tests run eight participants at once)
    for argument in (
        "--disable-background-timer-throttling",
        "--disable-renderer-backgrounding",
        "--disable-backgrounding-occluded-windows",
    ):
        options.add_argument(argument)
    options.add_argument("--window-size=1100,850")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


class Participant:
    """Clicks through the experiment as scripted; every wait is for something the page shows."""

    def __init__(self, driver, modality: str):
        self.driver = driver
        self.modality = modality
        self.wait = self
        self._wait = WebDriverWait(driver, 30)
        self.ended_events = 0

    def until(self, condition):
        """WebDriverWait.until, failing with what the page shows."""
        try:
            return self._wait.until(condition)
        except TimeoutException:
            body = self.driver.find_element(By.TAG_NAME, "body").get_attribute("innerHTML")
            raise AssertionError(f"timed out; the page shows:\n{body[:3000]}") from None

    def shot(self, name: str) -> None:
        if SCREENSHOTS:
            Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
            self.driver.save_screenshot(str(Path(SCREENSHOTS) / f"{name}.png"))

    def click_button(self, text: str) -> None:
        xpath = f"//button[normalize-space()='{text}' or starts-with(normalize-space(), '{text}')]"
        self.wait.until(EC.element_to_be_clickable((By.XPATH, xpath))).click()

    def trial(self) -> dict:
        """The rating screen on show: its progress text, waiting for the media's end first."""
        self.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".os-trial")))
        if self.modality != "text" and self.driver.find_elements(By.ID, "os-media"):

            def ended_or_blocked(driver):
                trial = driver.find_element(By.CSS_SELECTOR, ".os-trial")
                play = driver.find_elements(By.ID, "os-play")
                blocked = "const m = document.getElementById('os-media'); return m.paused && !m.ended;"
                if play and play[0].is_displayed() and driver.execute_script(blocked):
                    play[0].click()  # autoplay blocked (after a reload): the participant presses Play
                return trial.get_attribute("data-ended")

            self.wait.until(ended_or_blocked)
            self.ended_events += 1
            media = self.driver.execute_script(
                "const m = document.getElementById('os-media');"
                "return {ended: m.ended, time: m.currentTime, duration: m.duration};"
            )
            assert media["ended"] and media["time"] == pytest.approx(media["duration"], abs=0.05), media
        progress = self.driver.find_elements(By.CSS_SELECTOR, ".os-progress")
        return {"progress": progress[0].text if progress else ""}

    def replay(self) -> None:
        """Play the clip again (max_replays: 1) and wait for its second end."""
        button = self.until(EC.visibility_of_element_located((By.ID, "os-replay")))
        button.click()
        self.until(lambda d: d.find_element(By.CSS_SELECTOR, ".os-trial").get_attribute("data-ended") == "2")
        assert not button.is_displayed()  # one replay allowed, and used
        self.ended_events += 1

    def answer(self, response: str, by_key: bool = False) -> None:
        index = 0 if response == "familiar" else 1
        button = self.wait.until(EC.element_to_be_clickable((By.ID, f"os-choice-{index}")))
        if by_key:
            key = "f" if response == "familiar" else "j"
            webdriver.ActionChains(self.driver).send_keys(key).perform()  # to the page, as a person types
        else:
            button.click()
        self.wait.until(EC.staleness_of(button))  # the next screen shows once the server stored it

    def questionnaire(self, value: int, shot: str = "") -> dict:
        self.wait.until(EC.presence_of_element_located((By.ID, "jspsych-survey-likert-next")))
        names = sorted(
            {e.get_attribute("name") for e in self.driver.find_elements(By.CSS_SELECTOR, "input[type=radio]")}
        )
        for name in names:
            self.driver.find_element(By.CSS_SELECTOR, f"input[name='{name}'][value='{value - 1}']").click()
        if shot:
            self.driver.execute_script("window.scrollTo(0, 0);")
            self.shot(shot)
        self.driver.find_element(By.ID, "jspsych-survey-likert-next").click()
        return {"n_items": len(names)}


def _records(store, modality):
    experiment = store.experiments[modality]
    return {sid: s for sid, s in experiment.sessions.items()}


# The scripted answers of trial 1..4 of each list, and how each is given
SCRIPT = {
    1: ("familiar", False),
    2: ("stranger", True),
    3: ("stranger", False),
    4: ("familiar", False),
}


@pytest.mark.parametrize("modality", MODALITIES)
@pytest.mark.heavy  # 10 CPU-s
def test_scripted_participant(modality, study, server, browser):
    base, store = server
    pid = f"PID{modality.upper()}01"
    url = f"{base}/{modality}/?token={TOKEN}&PROLIFIC_PID={pid}&STUDY_ID=STUDY1&SESSION_ID=SES{modality}"
    you = Participant(browser, modality)
    browser.get(url)
    you.wait.until(
        EC.presence_of_element_located((By.CSS_SELECTOR, "#jspsych-html-button-response-stimulus"))
    )
    you.shot("01_consent")
    you.click_button("I agree")
    for page in range(3):
        you.wait.until(EC.element_to_be_clickable((By.ID, "jspsych-instructions-next")))
        if page == 0 or (page == 1 and modality == "audio"):
            you.shot(f"02_instructions_{page + 1}" if page == 0 else "03_instructions_audio")
        you.click_button("Next")
    if modality == "audio":
        you.wait.until(EC.visibility_of_element_located((By.ID, "os-playing")))
        you.shot("04_practice_audio_playing")
    you.trial()
    if modality == "audio":
        you.shot("04_practice_audio_ended")
    you.answer("familiar")
    you.click_button("Next")  # end of the practice

    clicked = {}
    for order in (1, 2):
        shown = you.trial()
        assert shown["progress"].startswith(f"{order} /")
        if order == 1:
            you.shot(f"05_rating_{modality}")
            if modality != "text":
                you.replay()
        response, by_key = SCRIPT[order]
        you.answer(response, by_key=by_key and modality == "text")
        clicked[order] = response
    you.trial()  # the attention check after trial 2
    if modality == "text":
        you.shot("06_attention_check")
    you.answer("stranger")

    browser.refresh()  # a reload mid-way: no consent, no instructions, on at trial 3
    shown = you.trial()
    assert shown["progress"].startswith("3 /"), shown
    for order in (3, 4):
        if order == 4:
            shown = you.trial()
            assert shown["progress"].startswith("4 /")
        response, _ = SCRIPT[order]
        you.answer(response)
        clicked[order] = response
    tsis = you.questionnaire(5, shot="07_questionnaire_tsis" if modality == "text" else "")
    cues = you.questionnaire(4, shot="08_questionnaire_cues" if modality == "text" else "")
    assert (tsis["n_items"], cues["n_items"]) == (7, 3)
    you.wait.until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, ".os-code"), "C0DE42"))
    you.shot("09_completion")
    if modality != "text":
        assert you.ended_events == 6  # the practice clip, four list clips and one replay, each to its end

    # a second participant closes the tab after one answer
    first_window = browser.current_window_handle
    browser.switch_to.new_window("tab")
    other = Participant(browser, modality)
    browser.get(url.replace(pid, f"{pid}B").replace(f"SES{modality}", f"SES{modality}B"))
    other.click_button("I agree")
    for _ in range(3):
        other.click_button("Next")
    other.trial()
    other.answer("stranger")
    other.click_button("Next")
    other.trial()
    other.answer("familiar")
    browser.close()
    browser.switch_to.window(first_window)

    # the collected data through import_ratings with the built-in mapping
    exports, answers, sessions = collected_exports(store.data_dir, study["experiments"] / modality)
    folder = study["folder"] / f"import_{modality}"
    write_csv(folder / "export.csv", exports)
    write_csv(folder / "covariates.csv", answers)
    study_json = store.experiments[modality].study
    trials, report = import_ratings(
        folder / "export.csv", experiment_mapping(study_json), modality, study["design"]
    )
    counts = dict(zip(report["reason"], report["n"], strict=True))
    assert report.loc[report["lost"], "n"].sum() == 0
    assert counts["imported"] == 5 and counts["practice"] == 2 and counts["unanswered"] == 3, counts
    assert counts["duplicate"] == 0
    mine = exports[(exports["rater_id"] == pid) & (exports["kind"] == "rating")]
    assert dict(zip(mine["order"].astype(int), mine["response"], strict=True)) == clicked
    list_trials = {
        t["order"]: t["dyad_id"] for t in store.experiments[modality].lists[mine["list_id"].iloc[0]]["trials"]
    }
    imported = trials[trials["rater_id"] == pid].set_index("dyad_id")["response"].to_dict()
    assert imported == {list_trials[o]: r for o, r in clicked.items()}
    status = dict(zip(sessions["rater_id"], sessions["status"], strict=True))
    assert status == {pid: "complete", f"{pid}B": "incomplete"}
    assert int(sessions.loc[sessions["rater_id"] == pid, "attention_passed"].iloc[0]) == 1
    if modality != "text":
        ratings = exports[exports["answered"] & (exports["kind"] == "rating")]
        assert ratings["media_ended"].astype(bool).all()
        replays = mine.set_index(mine["order"].astype(int))["replays"].astype(int).to_dict()
        assert replays == {1: 1, 2: 0, 3: 0, 4: 0}
    covariates = import_covariates(
        folder / "covariates.csv", experiment_covariate_mapping(study_json["questionnaires"])
    )
    row = covariates.set_index("rater_id").loc[pid]
    # all TSIS answers 5 (SIP_4 reverse-keyed: 1 + 7 - 5 = 3): (6 * 5 + 3) / 7
    assert row["sip"] == pytest.approx(33 / 7)
    assert (row["cue_words"], row["cue_voice"], row["cue_face"]) == (4, 4, 4)
    report.to_csv(folder / "import_report.csv", index=False)
    print(f"\n{modality} import report:\n{report[['reason', 'n', 'lost']].to_string(index=False)}")
    time.sleep(0)  # the server keeps running for the next modality


# --------------------------------------------------------------------------------------------
# Consent, resumed media, playback rate (the same study, server and browser as above)
# --------------------------------------------------------------------------------------------


def _post(base: str, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"{base}{path}", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _prepared_session(base: str, modality: str, pid: str, study_json: dict, ratings: int) -> dict:
    """A session started, consented, its practice and first `ratings` trials answered over HTTP:
    a participant who comes back to it later (the page skips consent and instructions)."""
    ids = {"PROLIFIC_PID": pid, "STUDY_ID": "STUDY1", "SESSION_ID": f"S-{pid}"}
    status, session = _post(base, f"/{modality}/api/start", {"token": TOKEN, "participant": ids})
    assert status == 200, session
    body = {"token": TOKEN, "session_id": session["session_id"], "PROLIFIC_PID": pid}
    records = [{"kind": "consent", "agreed": True}]
    records += [
        {"kind": "practice", "practice_id": p["id"], "response": "familiar", "rt_ms": 700}
        for p in study_json["practice"]
    ]
    records += [
        {"kind": "rating", "order": t["order"], "dyad_id": t["dyad_id"], "response": "stranger", "rt_ms": 700}
        for t in session["trials"][:ratings]
    ]
    for record in records:
        assert _post(base, f"/{modality}/api/record", body | {"record": record})[0] == 200
    return session


def _link(base: str, modality: str, pid: str) -> str:
    return f"{base}/{modality}/?token={TOKEN}&PROLIFIC_PID={pid}&STUDY_ID=STUDY1&SESSION_ID=S-{pid}"


def _in_new_tab(browser, url: str) -> str:
    """Open `url` in a fresh tab (no click on the page: Chromium's default autoplay policy applies)."""
    first = browser.current_window_handle
    browser.switch_to.new_window("tab")
    browser.get(url)
    return first


def test_a_declined_session_stores_nothing(study, server, browser):
    base, store = server
    you = Participant(browser, "text")
    first = _in_new_tab(browser, _link(base, "text", "PDECLINES"))
    you.click_button("I do not agree")
    you.until(EC.text_to_be_present_in_element((By.TAG_NAME, "body"), "You chose not to take part"))
    session_id = store.experiments["text"].by_participant["PDECLINES"]
    trial = store.experiments["text"].lists[session_id.split("-")[0]]["trials"][0]
    # the page's own origin sends a rating for the declined session, as a tampered page would
    record = {"kind": "rating", "order": 1, "dyad_id": trial["dyad_id"], "response": "familiar", "rt_ms": 500}
    body = {"token": TOKEN, "session_id": session_id, "PROLIFIC_PID": "PDECLINES", "record": record}
    answer = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('api/record', {method: 'POST', headers: {'Content-Type': 'application/json'},"
        " body: JSON.stringify(arguments[0])})"
        ".then(r => r.json().then(j => done({status: r.status, body: j})));",
        body,
    )
    browser.close()
    browser.switch_to.window(first)
    assert answer == {
        "status": 409,
        "body": {"error": "consent was declined: no rating record is stored for this session"},
    }
    lines = [
        json.loads(line)
        for line in store.experiments["text"].sessions[session_id].path.read_text().splitlines()
    ]
    assert [line["kind"] for line in lines] == ["session", "consent"] and lines[1]["agreed"] is False
    _, _, sessions = collected_exports(store.data_dir, study["experiments"] / "text")
    row = sessions.set_index("rater_id").loc["PDECLINES"]
    assert (row["status"], row["n_answered"], row["records_without_consent"]) == ("declined", 0, 0)


def test_a_resumed_audio_trial_waits_for_play(study, server, browser):
    """A participant comes back (a new tab, no click yet): Chromium's default policy blocks the
    clip's autoplay; the page shows the start prompt and Play, not "Playing...", until it plays."""
    base, store = server
    study_json = store.experiments["audio"].study
    session = _prepared_session(base, "audio", "PRESUME", study_json, ratings=1)
    you = Participant(browser, "audio")
    first = _in_new_tab(browser, _link(base, "audio", "PRESUME"))
    you.until(EC.visibility_of_element_located((By.ID, "os-start")))
    state = browser.execute_script(
        "const m = document.getElementById('os-media');"
        "return {paused: m.paused, time: m.currentTime,"
        " prompt: document.getElementById('os-start').innerText,"
        " playing: !document.getElementById('os-playing').hidden,"
        " play: !document.getElementById('os-play').hidden,"
        " progress: document.querySelector('.os-progress').innerText,"
        " enabled: !document.getElementById('os-choice-0').disabled};"
    )
    you.shot("10_resumed_start_prompt")
    assert state == {
        "paused": True,
        "time": 0,
        "prompt": "Press Play to start the recording.",
        "playing": False,
        "play": True,
        "progress": "2 / 4",
        "enabled": False,
    }
    browser.find_element(By.ID, "os-play").click()
    you.until(EC.visibility_of_element_located((By.ID, "os-playing")))
    assert not browser.find_element(By.ID, "os-start").is_displayed()
    you.trial()  # to its end
    you.answer("familiar")
    browser.close()
    browser.switch_to.window(first)
    stored = store.experiments["audio"].sessions[session["session_id"]]
    record = [json.loads(line) for line in stored.path.read_text().splitlines()][-1]
    assert (record["kind"], record["order"], record["response"], record["media_ended"]) == (
        "rating",
        2,
        "familiar",
        True,
    )
    assert record["playback_rate"] == 1 and record["seeked"] is False
    clicked, received = (
        datetime.fromisoformat(record[k].replace("Z", "+00:00")) for k in ("client_time", "received_at")
    )
    assert timedelta(0) <= received - clicked < timedelta(seconds=10)  # the click's time, then stored
    assert record["media_played_s"] == pytest.approx(record["media_duration_s"], abs=0.1)
    assert record["played_s"] >= 0.9 * record["media_played_s"] - 0.15  # real time
    exports, _, _ = collected_exports(store.data_dir, study["experiments"] / "audio")
    row = exports[(exports["rater_id"] == "PRESUME") & (exports["order"].astype(str) == "2")].iloc[0]
    assert (row["playback_flag"], row["excluded"]) == ("", "")


def test_a_clip_played_at_16x_is_flagged(study, server, browser):
    base, store = server
    study_json = store.experiments["video"].study
    session = _prepared_session(base, "video", "PFAST", study_json, ratings=0)
    you = Participant(browser, "video")
    first = _in_new_tab(browser, _link(base, "video", "PFAST"))
    for _ in range(3):
        you.click_button("Next")  # the instructions: the participant's clicks allow autoplay
    you.until(EC.presence_of_element_located((By.ID, "os-media")))
    browser.execute_script("document.getElementById('os-media').playbackRate = 16;")  # devtools
    you.until(lambda d: d.find_element(By.CSS_SELECTOR, ".os-trial").get_attribute("data-ended"))
    you.answer("familiar")
    browser.close()
    browser.switch_to.window(first)
    stored = store.experiments["video"].sessions[session["session_id"]]
    record = [json.loads(line) for line in stored.path.read_text().splitlines()][-1]
    assert (record["order"], record["playback_rate"], record["media_ended"]) == (1, 16, True)
    assert record["played_s"] < 0.5 * record["media_played_s"], record
    exports, _, _ = collected_exports(store.data_dir, study["experiments"] / "video")
    folder = study["folder"] / "import_fast"
    write_csv(folder / "export.csv", exports)
    trials, report = import_ratings(
        folder / "export.csv", experiment_mapping(study_json), "video", study["design"]
    )
    mine = exports[exports["rater_id"] == "PFAST"]
    answered = mine[(mine["answered"].astype(str) == "True") & (mine["kind"] == "rating")]
    assert answered["playback_flag"].tolist() == ["fast"] and answered["excluded"].tolist() == [
        "playback_flagged"
    ]
    counts = dict(zip(report["reason"], report["n"], strict=True))
    assert counts["playback_flagged"] == 1 and report.loc[report["lost"], "n"].sum() == 0
    assert "PFAST" not in set(trials["rater_id"])
    print(
        f"\nvideo import report with the 16x trial:\n{report[['reason', 'n', 'lost']].to_string(index=False)}"
    )


# --------------------------------------------------------------------------------------------
# The JATOS study: the archive the workflow builds, run in Chromium on JATOS's real jatos.js
# --------------------------------------------------------------------------------------------


def _jatos(study, tmp_path, modality: str, redirect: bool = True, **options):
    """The modality's .jzip (build_jatos_study, as rule rating_jatos writes it) imported into the
    test backend (tests/jatos_server.py), which serves JATOS's own jatos.js (v3.10.5)."""
    from jatos_server import JatosServer

    from omnisocial.familiarity.ratings.jatos import build_jatos_study

    experiment = study["experiments"] / modality
    jas = build_jatos_study(experiment, tmp_path / f"{modality}.jzip", tmp_path / "ids" / f"{modality}.json")
    assert jas["version"] == "3" and jas["data"]["componentList"][0]["reloadable"] is True
    jatos = JatosServer(tmp_path / f"{modality}.jzip", tmp_path / "jatos_assets", **options)
    base = jatos.serve()
    if redirect:  # the researcher's completion link (ratings.experiment.completion.redirect_url)
        study_json = json.loads((jatos.assets / "study.json").read_text())
        study_json["completion"] |= {
            "redirect_url": f"{base}/prolific/complete?cc={{code}}",
            "redirect_delay_ms": 300,
        }
        (jatos.assets / "study.json").write_text(json.dumps(study_json))
    return jatos, base, json.loads((experiment / "lists.json").read_text())


def _claims(batch_session: dict) -> dict[int, dict]:
    """The lists' claims in a batch session: {study result id: {list, ok}} (jatos-backend.js)."""
    return {
        int(k.removeprefix("os_claim_")): v for k, v in batch_session.items() if k.startswith("os_claim_")
    }


def test_the_jatos_study_runs_and_its_results_import(study, browser, tmp_path):
    """One participant completes the audio study on JATOS's real jatos.js (with a reload mid-way)
    and is redirected to the completion link, one declines; both JATOS result exports, written
    as JATOS's ResultStreamer writes them (the results ZIP and the plain text), import with
    nothing lost."""
    from omnisocial.familiarity.ratings.collect import allocate_list
    from omnisocial.familiarity.ratings.jatos import jatos_exports

    experiment = study["experiments"] / "audio"
    jatos, base, lists = _jatos(study, tmp_path, "audio")
    try:
        you = Participant(browser, "audio")
        first = _in_new_tab(browser, jatos.link(base, "PROLIFIC_PID=JP1&STUDY_ID=STUDYJ&SESSION_ID=SJ1"))
        you.click_button("I agree")
        for _ in range(3):
            you.click_button("Next")
        you.trial()
        you.answer("familiar")  # the practice clip
        you.click_button("Next")
        answers = {1: "familiar", 2: "stranger", 3: "stranger", 4: "familiar"}
        for order in (1, 2):
            assert you.trial()["progress"].startswith(f"{order} /")
            you.answer(answers[order])
        you.trial()  # the attention check
        you.answer("stranger")
        browser.refresh()  # JATOS reloads the component: the study session data resume it at trial 3
        for order in (3, 4):
            assert you.trial()["progress"].startswith(f"{order} /")
            you.answer(answers[order])
        you.questionnaire(5)
        you.questionnaire(4)
        you.until(lambda d: "/prolific/complete?cc=C0DE42" in d.current_url)  # jatos.endStudyAndRedirect

        browser.get(jatos.link(base, "PROLIFIC_PID=JP2&STUDY_ID=STUDYJ&SESSION_ID=SJ2"))
        you.click_button("I do not agree")
        you.until(EC.text_to_be_present_in_element((By.TAG_NAME, "body"), "You chose not to take part"))
        you.until(lambda d: [s["state"] for s in jatos.study_results.values()] == ["FINISHED", "FINISHED"])
        browser.close()
        browser.switch_to.window(first)
    finally:
        jatos.close()

    runs = list(jatos.study_results.values())
    assert [r["message"] for r in runs] == ["complete", "consent declined"]
    states = [jatos.component_results[c]["state"] for c in runs[0]["components"]]
    assert states == ["RELOADED", "FINISHED"]  # the reload started a second component result
    # the lists as the server gives them: JP1 the first choice, JP2 the next; JP2's decline freed it
    jp1 = allocate_list(lists, dict.fromkeys(lists, 0), 1)
    jp2 = allocate_list(lists, dict.fromkeys(lists, 0) | {jp1: 1}, 1)
    assert _claims(jatos.batch_session) == {
        runs[0]["id"]: {"list": jp1, "ok": True},
        runs[1]["id"]: {"list": None, "ok": True},
    }
    assert jp2 != jp1 and runs[1]["components"]  # JP2 had been given jp2 before declining

    mapping = experiment_mapping(json.loads((experiment / "study.json").read_text()))
    reports = {}
    for kind, export in (
        ("results ZIP", jatos.export_zip(tmp_path / "jatos_results.zip")),
        ("plain-text export", jatos.export_text(tmp_path / "jatos_results.txt")),
    ):
        exports, answers_table, sessions = jatos_exports(export, experiment)
        write_csv(tmp_path / "export.csv", exports)
        trials, report = import_ratings(tmp_path / "export.csv", mapping, "audio", study["design"])
        counts = dict(zip(report["reason"], report["n"], strict=True))
        assert report.loc[report["lost"], "n"].sum() == 0
        assert (counts["imported"], counts["practice"], counts["unanswered"], counts["no_consent"]) == (
            4,
            1,
            0,
            0,
        )
        assert dict(zip(sessions["rater_id"], sessions["status"], strict=True)) == {
            "JP1": "complete",
            "JP2": "declined",
        }
        assert sessions.set_index("rater_id").loc["JP1", "list_id"] == jp1
        dyads = {t["order"]: t["dyad_id"] for t in lists[jp1]["trials"]}
        assert trials.set_index("dyad_id")["response"].to_dict() == {dyads[o]: r for o, r in answers.items()}
        # the page appended what each trial showed (interaction, clip window, stimulus hash)
        shown = {t["dyad_id"]: t["shown"] for t in lists[jp1]["trials"]}
        rated = exports[(exports["kind"] == "rating") & (exports["answered"] == True)]  # noqa: E712
        assert dict(zip(rated["dyad_id"], rated["shown"], strict=True)) == shown
        assert answers_table.set_index("rater_id").loc["JP1", "SIP_1"] == 5
        reports[kind] = report
    assert reports["results ZIP"].equals(reports["plain-text export"])
    records = [json.loads(line) for line in (tmp_path / "jatos_results.txt").read_text().splitlines() if line]
    ratings = [r for r in records if r["kind"] == "rating"]
    assert ratings and all(r["shown"] == shown[r["dyad_id"]] for r in ratings)  # sent by the page
    for kind, report in reports.items():
        print(
            f"\nJATOS {kind}, audio import report:\n{report[['reason', 'n', 'lost']].to_string(index=False)}"
        )


@pytest.mark.heavy  # eight pages at once in one Chromium (~25 CPU-s)
def test_eight_participants_at_once_on_jatos_get_no_list_twice(study, browser, tmp_path):
    """Eight participants open the text study's link at the same moment, on JATOS's real jatos.js
    against a batch channel that writes batch-session patches without a lock (as JATOS since
    3.9.8: two patches at one moment both pass the version check, the later erasing the
    earlier) and that answers one participant's first patch only after jatos.js's 10 s timeout
    (the patch itself applied at once). The study has six lists, one participant each: six
    participants get six different lists, none is given twice, none is left taken by nobody,
    and the two left over are told that every list has its participants (their runs end as
    failed, the reason kept by JATOS)."""
    jatos, base, lists = _jatos(study, tmp_path, "text", redirect=False)
    assert len(lists) == 6
    pids = [f"JAT{i}" for i in range(1, 9)]
    tabs = []
    try:
        first = browser.current_window_handle
        for _ in pids:  # eight tabs, each ready to open its link at one moment
            browser.switch_to.new_window("tab")
            tabs.append(browser.current_window_handle)
        go_at = time.time() * 1000 + 3000
        jatos.slow_ack = {101 + 2}  # the third study run's first patch: its answer after 11 s
        for tab, pid in zip(tabs, pids, strict=True):
            browser.switch_to.window(tab)
            link = jatos.link(base, f"PROLIFIC_PID={pid}&STUDY_ID=STUDYJ&SESSION_ID=S{pid}")
            browser.execute_script(
                "setTimeout(() => { window.location.href = arguments[0]; }, arguments[1] - Date.now());",
                link,
                go_at,
            )
        shown = {}
        deadline = time.time() + 120
        while len(shown) < len(pids) and time.time() < deadline:
            for tab, pid in zip(tabs, pids, strict=True):
                if pid in shown:
                    continue
                browser.switch_to.window(tab)
                try:
                    body = browser.find_element(By.TAG_NAME, "body").text
                except WebDriverException:  # the tab between two pages (about:blank, the link)
                    continue
                if "I agree" in body or "cannot start" in body:
                    shown[pid] = body
            time.sleep(0.5)
        assert len(shown) == len(pids), f"pages still allocating: {sorted(set(pids) - set(shown))}"
        time.sleep(3)  # the last claims' writes and repairs settle
        started = {s["query"]["PROLIFIC_PID"]: s for s in jatos.study_results.values()}
        given = {}
        for pid, body in shown.items():
            browser.switch_to.window(tabs[pids.index(pid)])
            if "I agree" in body:
                header = json.loads(
                    jatos.component_results[started[pid]["components"][-1]]["data"].splitlines()[0]
                )
                given[pid] = header["list_id"]
        refused = sorted(set(pids) - set(given))
    finally:
        for tab in tabs:
            browser.switch_to.window(tab)
            browser.close()
        browser.switch_to.window(first)
        jatos.close()

    claims = _claims(jatos.batch_session)
    srid = {pid: s["id"] for pid, s in started.items()}
    print(
        f"\neight at once on JATOS: lists given {given}; told every list is taken: {refused}; "
        f"{len(jatos.patches)} batch-session patches, {sum(p['erased_another'] for p in jatos.patches)} "
        "of them written over another written at the same moment"
    )
    assert sorted(given.values()) == sorted(lists)  # every list given, none twice
    assert len(refused) == 2
    for pid in refused:
        run = started[pid]
        assert (
            run["state"] == "FAIL" and "every list of this experiment has its participants" in run["message"]
        )
        assert "every list of this experiment has its participants" in shown[pid]
    # the server's batch session: exactly the given lists, each held by the one it was given to
    held = {sid: c["list"] for sid, c in claims.items() if c.get("list")}
    assert held == {srid[pid]: list_id for pid, list_id in given.items()}
    assert all(claims[srid[pid]]["ok"] for pid in given)
    assert any(p["erased_another"] for p in jatos.patches)  # the race happened and was repaired
    # the third run's first claim was applied at once and answered after jatos.js had given up on it
    assert [p["srid"] for p in jatos.patches if p["answer_held"]] == [103]


@pytest.mark.parametrize(("status", "sent"), [(413, 1), (403, 6)])
@pytest.mark.heavy  # 14 CPU-s
def test_a_refusal_on_jatos_is_shown_and_recorded_not_retried(study, browser, tmp_path, status, sent):
    """JATOS refuses the result data for good (413: over its 5 MB result-data limit; 403: a study
    run it takes no more data for): the page stops saving, tells the participant what to do, and
    the study run ends as failed with the reason, which JATOS keeps. The refused record is sent
    as often as jatos.js sends it (once for a 413; a 403 five times more, jatos.js's own
    retries), then never again: not every 2 s for good."""
    jatos, base, _ = _jatos(study, tmp_path, "text", redirect=False)
    try:
        you = Participant(browser, "text")
        first = _in_new_tab(browser, jatos.link(base, "PROLIFIC_PID=JR1&STUDY_ID=STUDYJ&SESSION_ID=SJR1"))
        you.click_button("I agree")
        for _ in range(3):
            you.click_button("Next")
        you.trial()
        run = next(iter(jatos.study_results.values()))
        if status == 413:
            jatos.result_data_max = len(jatos.component_results[run["components"][-1]]["data"].encode()) + 10
        else:
            jatos.refuse("/resultData", 403, "Impossible to put result data to component result")
        before = len(jatos.component_results[run["components"][-1]]["data"])
        you.wait.until(EC.element_to_be_clickable((By.ID, "os-choice-0"))).click()
        you.until(EC.text_to_be_present_in_element((By.TAG_NAME, "body"), "The server refused this answer"))
        body = browser.find_element(By.TAG_NAME, "body").text
        you.until(lambda d: run["state"] == "FAIL")
        time.sleep(5)  # a retry loop would have sent it again by now
        browser.close()
        browser.switch_to.window(first)
    finally:
        jatos.close()
    assert f"{status}" in body, body
    assert run["message"].startswith(f"refused (HTTP {status}) at a practice record"), run["message"]
    assert len(jatos.component_results[run["components"][-1]]["data"]) == before  # nothing half-stored
    assert jatos.requests_refused == sent, jatos.requests_refused

"""The results explorer in a real browser (headless Debian chromium through Selenium), on the
shared workflow runs: the demo study's explorer (rule explorer, part of `all`, in the run of
test_workflow) and the social benchmarks' items of the shared models-and-judge run
(social_workflow.judged_run's folder, read in place), written by the same builders and writer
the rule's script calls.

- familiarity: filter to the items where the best model and the human crowd disagree (the
  count is checked against the tables: best_models on the predictions, majority_votes), open
  one, play its clip, and read every answer row against trials.csv, majority_votes.csv, the
  predictions and responses tables (label, confidence, status, reason);
- who and when: open an item through its shareable link (the id in the hash), play the clip up
  to the window, read each model's parsed answer and raw reply against who_scores /
  when_single_scores and the reply tables, and each streamed decision against when_stream_scores;
- streaming: each model's timestamped sentences against the responses table, reminder events
  against pr_event_scores, judge scores against the judge table;
- the page is served by `omnisocial explore`'s server too (byte ranges: the video seeks).

Set EXPLORER_SCREENSHOTS=<folder> to save the docs' screenshots (docs/img/explorer/).
"""

from __future__ import annotations

import math
import os
import shutil
import threading
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
from conftest import shared_dir
from social_workflow import _build_judged
from test_workflow import shared_study

from omnisocial.duplexeval import explorer as duplexeval
from omnisocial.duplexeval.contracts import PR_EVENT_SCORES, STREAM_RESPONSES
from omnisocial.explorer import write_explorer
from omnisocial.explorer.serve import make_server
from omnisocial.familiarity.analysis.rater_tests import best_models
from omnisocial.familiarity.contracts import MAJORITY_VOTES, RESPONSES
from omnisocial.socialomni import explorer as socialomni
from omnisocial.socialomni.contracts import (
    REPLIES,
    WHEN_SCORES,
    WHEN_STREAM_SCORES,
    WHO_SCORES,
)
from omnisocial.streaming.contracts import STREAM_STEPS
from omnisocial.tables import PREDICTIONS, TRIALS

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SCREENSHOTS = os.environ.get("EXPLORER_SCREENSHOTS", "")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(
        not (Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()),
        reason="chromium and chromedriver not installed (make system-deps installs them; .ci/run runs that)",
    ),
]

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--mute-audio"):
        options.add_argument(argument)
    options.add_argument("--autoplay-policy=no-user-gesture-required")
    options.add_argument("--window-size=1400,1000")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def shot(driver, name: str) -> None:
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(SCREENSHOTS) / f"{name}.png"))


def open_page(driver, url: str) -> None:
    driver.get(url)
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    assert not [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def show(driver, item_id: str) -> None:
    """Open an item as a shared link does: its id in the address's hash."""
    driver.execute_script("location.hash = encodeURIComponent(arguments[0])", item_id)
    WebDriverWait(driver, 10).until(
        lambda d: d.find_element(By.ID, "detail").get_attribute("data-item") == item_id
    )


def play(driver) -> float:
    """Play the item's video (else its first player) from its window's start; the time reached (s)."""
    players = driver.find_elements(By.CSS_SELECTOR, "#detail video.player") or driver.find_elements(
        By.CSS_SELECTOR, "#detail .player"
    )
    player = players[0]  # the video where there is one
    start = float(player.get_attribute("data-start") or 0)
    driver.execute_script("arguments[0].muted = true; arguments[0].play()", player)
    WebDriverWait(driver, 30).until(
        lambda d: d.execute_script("return arguments[0].currentTime", player) > start + 0.3
    )
    reached = driver.execute_script("arguments[0].pause(); return arguments[0].currentTime", player)
    assert player.get_attribute("src").split("/")[-2] == "media"  # the explorer's own copy
    return reached


def rows(driver) -> list[dict]:
    """Every answer row shown, as its data attributes say."""
    return driver.execute_script(
        "return [...document.querySelectorAll('#detail tr.answer-row')].map(r => ({...r.dataset,"
        " shown: r.querySelector('td.answer').textContent}))"
    )


def same(shown: str, value) -> bool:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return shown == ""
    if isinstance(value, float):
        return abs(float(shown) - value) < 1e-9
    return shown == str(value)


# --- familiarity: the demo study's own explorer ----------------------------------------------


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    return shared_study(tmp_path_factory) / "results" / "familiarity"


def tables_of_the_explorer(study: Path, folder: str) -> list[Path]:
    """The model tables the explorer was built from: a test that runs jobs in the shared study
    (test_a_dead_model_host_fails_its_job_fast_and_a_plain_rerun_resumes) may add a model's
    tables afterwards, on another worker, without rebuilding the explorer."""
    built = (study / "explorer" / "index.html").stat().st_mtime_ns
    return [p for p in sorted((study / folder).glob("*.csv")) if p.stat().st_mtime_ns <= built]


@pytest.mark.heavy  # reads the shared study run
def test_familiarity_items_where_the_best_model_and_the_crowd_disagree(browser, study):
    predictions = pd.concat([PREDICTIONS.read(p) for p in tables_of_the_explorer(study, "predictions")])
    votes = MAJORITY_VOTES.read(study / "analysis" / "majority_votes.csv")
    trials = TRIALS.read(study / "ratings" / "trials.csv")
    responses = pd.concat([RESPONSES.read(p) for p in tables_of_the_explorer(study, "responses")])
    best = best_models(predictions)
    merged = predictions[predictions["model"] == predictions["modality"].map(best)].merge(
        votes, on=["item_id", "modality"], suffixes=("", "_crowd")
    )
    answered = merged[merged["label"] != ""]  # a non-answer is left out, as in the paired tests
    disagreeing = sorted(set(answered.loc[answered["label"] != answered["label_crowd"], "item_id"]))
    assert disagreeing, "the demo's chance and behavioural models must disagree with the crowd somewhere"

    open_page(browser, (study / "explorer" / "index.html").as_uri())
    total = len(pd.read_csv(study / "design" / "design.csv"))
    assert browser.find_element(By.ID, "count").text == f"{total} of {total} items"
    # media load only for the item shown: no player, no detail file before one is opened
    assert browser.execute_script("return document.querySelectorAll('video, audio').length") == 0
    assert not browser.execute_script(
        "return [...document.scripts].filter(s => s.src.includes('/details/')).length"
    )
    Select(browser.find_element(By.ID, "f-flag")).select_by_value("models_vs_humans")
    assert browser.find_element(By.ID, "count").text == f"{len(disagreeing)} of {total} items"
    listed = [r.get_attribute("data-id") for r in browser.find_elements(By.CSS_SELECTOR, "#list .row")]
    assert listed == [f"familiarity:{d}" for d in disagreeing]
    browser.find_element(By.CSS_SELECTOR, "#list .row").click()  # the first: opened as a user does
    item = disagreeing[0]
    WebDriverWait(browser, 10).until(lambda d: d.current_url.endswith(f"#familiarity%3A{item}"))
    shot(browser, "familiarity")
    players = browser.find_elements(By.CSS_SELECTOR, "#detail .player")
    assert (
        len(players) == len(browser.find_elements(By.CSS_SELECTOR, "video, audio")) == 3
    )  # mix, stereo, video
    assert play(browser) > 0.3

    shown = rows(browser)
    crowd = [r for r in shown if r["type"] == "crowd"]
    for row in crowd:
        vote = votes[(votes["item_id"] == item) & (votes["modality"] == row["modality"])].iloc[0]
        mine = trials[(trials["dyad_id"] == item) & (trials["modality"] == row["modality"])]
        assert row["answer"] == vote["label"]
        assert same(row["score"], float((mine["response"] == "familiar").mean()))
    assert {r["modality"] for r in crowd} == set(votes.loc[votes["item_id"] == item, "modality"])
    models = [r for r in shown if r["type"] == "model"]
    expected = predictions[predictions["item_id"] == item]
    assert len(models) == len(expected)
    for row in models:
        pred = expected[(expected["model"] == row["rater"]) & (expected["modality"] == row["modality"])].iloc[
            0
        ]
        assert row["answer"] == pred["label"]
        assert same(row["confidence"], pred["confidence"])
        assert row["correct"] == ("" if not pred["label"] else str(pred["label"] == pred["truth"]).lower())
        call = responses[
            (responses["model"] == row["rater"])
            & (responses["modality"] == row["modality"])
            & (responses["item_id"] == item)
        ]
        if len(call):
            assert row["status"] == call.iloc[0]["status"]
    # the shown disagreement is real: the best model's label differs from the crowd's somewhere
    assert any(
        r["rater"] == best[r["modality"]]
        and r["answer"] not in ("", next(c["answer"] for c in crowd if c["modality"] == r["modality"]))
        for r in models
        if r["modality"] in best and any(c["modality"] == r["modality"] for c in crowd)
    )
    # the filter decisions and the speech timeline of its interaction
    facts = browser.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('#detail tr[data-fact]')]"
        ".map(r => [r.dataset.fact, r.cells[1].textContent]))"
    )
    assert all(facts[f"filter F{n} {name}"].startswith("pass") for n, name in
               [(1, "prompt"), (2, "turns"), (3, "speech"), (4, "tracks"), (5, "amount")])  # fmt: skip
    assert len(browser.find_elements(By.CSS_SELECTOR, "#detail .track .span")) > 0


@pytest.mark.heavy  # reads the shared study run
def test_the_explorer_is_linked_and_served(browser, study):
    summary = (study / "summary" / "summary.html").read_text()
    assert "href='../explorer/index.html'" in summary
    assert (study / "summary" / "summary.md").read_text().count("../explorer/index.html") == 2
    # the Snakemake report's entry (an HTML report holds files, not the explorer's folder)
    link = (study / "summary" / "explorer.html").read_text()
    total = len(pd.read_csv(study / "design" / "design.csv"))
    assert f"familiarity: {total} items" in link and "href='../explorer/index.html'" in link
    server = make_server(study / "explorer", port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        media = sorted((study / "explorer" / "media").iterdir())[0]
        request = urllib.request.Request(url + f"media/{media.name}", headers={"Range": "bytes=10-19"})
        with urllib.request.urlopen(request) as reply:
            assert reply.status == 206 and reply.read() == media.read_bytes()[10:20]
        open_page(browser, url)
        show(browser, browser.find_element(By.CSS_SELECTOR, "#list .row").get_attribute("data-id"))
        assert play(browser) > 0.3
    finally:
        server.shutdown()
        server.server_close()


# --- who / when / how and streaming: the shared models-and-judge run ------------------------

SO_ITEMS = ("who_items", "when_items", "when_stream_items", "turns")
SO_SCORES = ("who_scores", "when_single_scores", "when_stream_scores", "how_judgements")
DE_SCORES = (
    "rtd_sentences",
    "rtd_scores",
    "pr_event_scores",
    "pr_scores",
    "rtd_judge_scores",
    "pr_judge_scores",
)


def reply_tables(r: Path) -> list[Path]:
    """The baselines' and the registry models' reply tables (socialomni_common.social_replies)."""
    return sorted(r.glob("replies/*.csv")) + sorted(r.glob("replies/models/*.csv"))


@pytest.fixture(scope="module")
def social(tmp_path_factory) -> tuple[Path, Path]:
    """(the run's results/social, an explorer of its items written in a temporary folder)."""
    build = lambda folder: _build_judged(tmp_path_factory, folder)  # noqa: E731
    run = shared_dir(tmp_path_factory, "social-judged", build)
    r, data = run / "results" / "social", run / "data" / "demo" / "social"
    items_of = {name: r / "items" / f"{name}.csv" for name in SO_ITEMS}
    scores_of = {name: r / "scores" / f"{name}.csv" for name in SO_SCORES + DE_SCORES}
    items = socialomni.explorer_items(
        {
            **items_of,
            **{n: scores_of[n] for n in SO_SCORES},
            "replies": reply_tables(r),
            "stream_steps": sorted(r.glob("stream/when/*_steps.csv")),  # the streamed registry models
        },
        data / "socialomni",
    )
    responses = [
        r / "baselines" / "stream_baseline_responses.csv",
        r / "items" / "stream_responses_imported.csv",
        *sorted(r.glob("stream/duplexeval/*_responses.csv")),
    ]
    stream = {name: r / "items" / f"{name}.csv" for name in ("stream_items", "stream_events")}
    items += duplexeval.explorer_items(
        {**stream, **{n: scores_of[n] for n in DE_SCORES}, "responses": responses}, data / "duplexeval"
    )
    folder = tmp_path_factory.mktemp("social-explorer")
    counts = write_explorer(items, folder, title="social benchmarks")
    assert counts["missing"] == []
    return r, folder


@pytest.mark.heavy  # reads the shared study run
def test_a_who_item_and_a_when_item(browser, social):
    r, folder = social
    who_scores, when_scores = (
        WHO_SCORES.read(r / "scores" / "who_scores.csv"),
        WHEN_SCORES.read(r / "scores" / "when_single_scores.csv"),
    )
    replies = pd.concat([REPLIES.read(p) for p in reply_tables(r)])
    open_page(browser, (folder / "index.html").as_uri())
    Select(browser.find_element(By.ID, "f-benchmark")).select_by_value("who")
    n_who = who_scores["item_id"].nunique()
    assert browser.find_element(By.ID, "count").text.startswith(f"{n_who} of ")
    for task, scores in (("who", who_scores), ("when", when_scores)):
        item = sorted(scores["item_id"])[0]
        show(browser, f"{task}:{item}")
        shot(browser, task)
        reached = play(browser)
        end = browser.find_element(By.CSS_SELECTOR, "#detail .player").get_attribute("data-end")
        assert reached <= float(end) + 0.5  # the player stops at the window models saw
        shown = rows(browser)
        expected = scores[scores["item_id"] == item]
        assert len(shown) == len(expected) > 1
        for row in shown:
            score = expected[
                (expected["model"] == row["rater"]) & (expected["modality"] == row["modality"])
            ].iloc[0]
            assert (
                row["answer"] == score["prediction"] and row["correct"] == str(bool(score["correct"])).lower()
            )
            key = (row["rater"], row["modality"], task, item)
            reply = replies.set_index(["model", "modality", "task", "item_id"]).loc[key]
            cell = f"tr.answer-row[data-rater='{row['rater']}'][data-modality='{row['modality']}'] td.text"
            text = browser.find_element(By.CSS_SELECTOR, f"#detail {cell}").text
            assert text == reply["reply"].strip()
    # a streamed when item: each model's first speak-now on the clip's timeline, the gold turn end
    stream = WHEN_STREAM_SCORES.read(r / "scores" / "when_stream_scores.csv")
    item = sorted(stream["item_id"])[0]
    show(browser, f"when-stream:{item}")
    expected = stream[stream["item_id"] == item]
    shown = {row["rater"]: row for row in rows(browser)}
    assert set(shown) == set(expected["model"])
    for score in expected.to_dict("records"):
        assert shown[score["model"]]["answer"] == score["label"]
        assert same(shown[score["model"]]["score"], score["offset"])
    decisions = "#detail .track[data-track='speak-now decisions'] .point"
    points = [float(p.get_attribute("data-t")) for p in browser.find_elements(By.CSS_SELECTOR, decisions)]
    assert sorted(points) == sorted(expected["response_time"].dropna())
    # each streamed registry model's every step on the timeline, unparsed and failed ones marked
    paths = sorted(r.glob("stream/when/*_steps.csv"))
    assert paths, "the shared run streams registry models on when"
    for path in paths:
        steps = STREAM_STEPS.read(path)
        steps = steps[steps["item_id"] == item].sort_values("step")
        track = f"#detail .track[data-track='{steps['model'].iloc[0]}: steps'] .point"
        shown = browser.find_elements(By.CSS_SELECTOR, track)
        assert [float(p.get_attribute("data-t")) for p in shown] == list(steps["t"])
        wrong = [p.get_attribute("class") == "point kind-wrong" for p in shown]
        assert wrong == list(steps["kind"].isin(["unparsed", "failed"]))


@pytest.mark.heavy  # reads the shared study run
def test_a_streamed_item(browser, social):
    r, folder = social
    said = STREAM_RESPONSES.read(r / "baselines" / "stream_baseline_responses.csv")
    events = PR_EVENT_SCORES.read(r / "scores" / "pr_event_scores.csv")
    judged = pd.read_csv(r / "scores" / "pr_judge_scores.csv", dtype={"judge": str})
    open_page(browser, (folder / "index.html").as_uri())
    Select(browser.find_element(By.ID, "f-benchmark")).select_by_value("streaming")
    for split, item in said[["split", "item_id"]].drop_duplicates().itertuples(index=False):
        show(browser, f"streaming:{split}:{item}")
        assert play(browser) > 0.3
        shown = rows(browser)
        mine = said[(said["split"] == split) & (said["item_id"] == item)]
        for model, group in mine.groupby("model"):
            spans = browser.find_elements(
                By.CSS_SELECTOR, f"#detail .track[data-track='{model}: said'] .span"
            )
            assert len(spans) == len(group)
            sentences = [r for r in shown if r["rater"] == model and r["modality"] == "stream"]
            assert [s["answer"] for s in sentences] == [
                f"{t:.1f} s" for t in group.sort_values("sentence_index")["start"]
            ]
        for event in events[(events["split"] == split) & (events["item_id"] == item)].to_dict("records"):
            row = next(
                r
                for r in shown
                if r["rater"] == event["model"]
                and r["answer"] == f"event {event['event_index']} at {event['time']:.1f} s"
            )
            assert same(row["score"], float(event["score"]))
        for judge in judged[
            (judged["split"] == split) & (judged["item_id"] == item) & (judged["judge"] != "all")
        ].to_dict("records"):
            row = next(r for r in shown if r["rater"] == f"{judge['judge']} on {judge['model']}")
            assert same(row["score"], float(judge["sample_score"]))
        if split.startswith("PR"):
            shot(browser, "streaming")

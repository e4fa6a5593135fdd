"""The results explorer's writer and its server (omnisocial.explorer; the page in a browser:
test_explorer_browser): the folder it writes, the stimuli copied once each, nothing silently
dropped, and `omnisocial explore` serving it on localhost with byte ranges."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from omnisocial.explorer import DATA_FILE, DETAIL_DIR, FLAGS, PAGE_FILES, write_explorer

ROOT = Path(__file__).resolve().parents[1]


def read_data(folder: Path) -> dict:
    text = (folder / DATA_FILE).read_text(encoding="utf-8")
    match = re.fullmatch(r"window\.EXPLORER_DATA = JSON\.parse\((.*)\);\n", text, re.S)
    assert match, text[:200]
    data = json.loads(json.loads(match.group(1)))
    # each item's detail is in its chunk's file, which the page loads when the item is shown
    details = {}
    for path in sorted((folder / DETAIL_DIR).glob("*.js")):
        chunk, body = re.fullmatch(
            r"EXPLORER_DETAIL\((\d+), (.*)\);\n", path.read_text(encoding="utf-8"), re.S
        ).groups()
        assert path.name == f"{int(chunk):04d}.js"
        details.update({i: {**d, "chunk": int(chunk)} for i, d in json.loads(body).items()})
    assert [i["chunk"] for i in data["items"]] == [details[i["id"]]["chunk"] for i in data["items"]]
    data["items"] = [{**i, **details[i["id"]]} for i in data["items"]]
    return data


def item(item_id: str, media: list[dict], **extra) -> dict:
    return {"id": item_id, "benchmark": "who", "truth": "A", "modalities": ["video"], "media": media,
            "answers": [{"rater": "m1", "type": "model", "answer": "B", "status": "answered",
                         "confidence": float("nan")}], **extra}  # fmt: skip


def test_the_folder_holds_the_page_its_data_and_each_stimulus_once(tmp_path):
    clip = tmp_path / "in" / "clip.mp4"
    clip.parent.mkdir()
    clip.write_bytes(b"\x00video bytes")
    same = tmp_path / "in" / "copy.MP4"
    same.write_bytes(b"\x00video bytes")
    media = [{"kind": "video", "label": "clip", "src": str(clip), "start": 0.0, "end": 2.5}]
    items = [
        item("who:1", media),
        item("who:2", [{**media[0], "src": str(same)}], difficulty=1.5),
        item("who:3", [{**media[0], "src": str(tmp_path / "gone.mp4")}]),
    ]
    counts = write_explorer(items, tmp_path / "out", title="t <run>")
    out = tmp_path / "out"
    assert all((out / name).is_file() for name in PAGE_FILES)
    data = read_data(out)
    assert counts["items"] == 3 and counts["media"] == 1  # the same bytes are stored once
    assert counts["missing"] == [str(tmp_path / "gone.mp4")]
    by_id = {i["id"]: i for i in data["items"]}
    assert by_id["who:1"]["media"][0]["src"] == by_id["who:2"]["media"][0]["src"]
    assert (out / by_id["who:1"]["media"][0]["src"]).read_bytes() == clip.read_bytes()
    assert by_id["who:3"]["media"] == [] and by_id["who:3"]["notes"] == [
        f"stimulus missing: {tmp_path / 'gone.mp4'}"
    ]
    assert any("1 stimulus file(s) missing" in note for note in data["notes"])
    assert "confidence" not in by_id["who:1"]["answers"][0]  # NaN: left out, never a bare NaN in JSON
    assert by_id["who:2"]["difficulty"] == 1.5 and by_id["who:1"]["models"] == ["m1"]
    assert by_id["who:1"]["status"] == {"m1": ["answered"]} and by_id["who:1"]["wrong"] == 0
    assert set(by_id["who:1"]["flags"]) == set(FLAGS)
    assert data["filters"]["model"] == ["m1"] and data["title"] == "t <run>"
    # every path the page links is relative to it: nothing from another site
    page = (
        (out / "index.html").read_text()
        + (out / "explorer.js").read_text()
        + (out / "explorer.css").read_text()
    )
    assert (
        not re.search(r"(src|href)=\"(https?:)?//", page) and "http://" not in page and "https://" not in page
    )


def test_an_item_id_given_twice_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="who:1"):
        write_explorer([item("who:1", []), item("who:1", [])], tmp_path, title="t")


def test_omnisocial_explore_serves_the_folder_with_byte_ranges(tmp_path):
    clip = tmp_path / "clip.wav"
    clip.write_bytes(bytes(range(256)) * 4)
    write_explorer(
        [item("who:1", [{"kind": "audio", "label": "a", "src": str(clip)}])], tmp_path / "x", title="t"
    )
    command = [sys.executable, "-m", "omnisocial.cli", "explore", str(tmp_path / "x"), "--port", "0"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    try:
        line = server.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line).group(0)
        with urllib.request.urlopen(url) as reply:
            assert reply.status == 200 and b"items.js" in reply.read()
        src = read_data(tmp_path / "x")["items"][0]["media"][0]["src"]
        request = urllib.request.Request(url + src, headers={"Range": "bytes=1000-"})
        with urllib.request.urlopen(request) as reply:
            assert reply.status == 206 and reply.headers["Content-Range"] == "bytes 1000-1023/1024"
            assert reply.read() == clip.read_bytes()[1000:]
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_explore_without_an_explorer_names_the_folder(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "omnisocial.cli", "explore", str(tmp_path), "--port", "0"],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and f"{tmp_path}: no explorer here" in result.stderr


def test_familiarity_items_of_a_released_design(tmp_path):
    """Real-shaped tables of two dyads, as a released design gives them (no clip times, no filter
    report, no speech): the crowd's share and majority, each model's label, confidence, status
    and reason, and the flags. Model m2 is the best (it ties m1 counting its non-answer wrong and
    is right on everything it answered), agrees with the crowd where it answered and gave no
    answer on D2: no item has the best model against the crowd; m1 and m2 differ on D1."""
    from omnisocial.familiarity.contracts import MAJORITY_VOTES, RESPONSES, STIMULI_MANIFEST
    from omnisocial.familiarity.explorer import explorer_items
    from omnisocial.tables import DESIGN, PREDICTIONS, TRIALS

    (tmp_path / "media").mkdir()
    (tmp_path / "media" / "D1.txt").write_text("A: hi\nB: hello again")
    design = pd.DataFrame(
        {"dyad_id": ["D1", "D2"], "interaction_id": ["I1", "I2"], "cell": ["s|familiar|ff", "s|stranger|mm"],
         "site": "s", "relationship": ["familiar", "stranger"], "gender_mix": ["ff", "mm"], "position": "",
         "clip_start": None, "clip_end": None, "n_turns": None, "participant_a": "a", "participant_b": "b"}
    )  # fmt: skip
    manifest = pd.DataFrame(
        [("D1", "text", "transcript", "media/D1.txt", None, "0", None, None)], columns=STIMULI_MANIFEST.names
    )
    trials = pd.DataFrame(
        {"rater_id": ["r1", "r2", "r3", "r1", "r2"], "dyad_id": ["D1", "D1", "D1", "D2", "D2"],
         "modality": "text", "response": ["familiar", "familiar", "stranger", "stranger", "stranger"]}
    )  # fmt: skip
    trials["correct"] = trials["response"] == trials["dyad_id"].map({"D1": "familiar", "D2": "stranger"})
    votes = pd.DataFrame(
        {"modality": "text", "item_id": ["D1", "D2"], "truth": ["familiar", "stranger"], "n_raters": [3, 2],
         "n_familiar": [2, 0], "n_stranger": [1, 2], "tie": False, "label": ["familiar", "stranger"],
         "vote_share": [2 / 3, 1.0], "source": ""}
    )  # fmt: skip
    predictions = pd.DataFrame(
        {"model": ["m1@v1", "m1@v1", "m2@v1", "m2@v1"], "modality": "text",
         "item_id": ["D1", "D2", "D1", "D2"], "truth": ["familiar", "stranger"] * 2,
         "label": ["stranger", "stranger", "familiar", ""], "confidence": [0.8, 0.7, 0.6, None]}
    )  # fmt: skip
    response = {name: "" for name in RESPONSES.names} | {
        "model": "m2@v1", "name": "m2", "modality": "text", "prompt_variant": "v1", "item_id": "D2",
        "truth": "stranger", "status": "failed", "error": "HTTP 429 after 3 retries", "attempts": 3,
    }  # fmt: skip
    paths = {name: tmp_path / f"{name}.csv" for name in ("design", "trials", "votes", "preds", "responses")}
    DESIGN.write(paths["design"], design)
    STIMULI_MANIFEST.write(tmp_path / "manifest.csv", manifest)
    TRIALS.write(paths["trials"], trials)
    MAJORITY_VOTES.write(paths["votes"], votes)
    PREDICTIONS.write(paths["preds"], predictions)
    RESPONSES.write(paths["responses"], pd.DataFrame([response]))
    items = explorer_items(
        {"design": paths["design"], "manifest": tmp_path / "manifest.csv", "trials": paths["trials"],
         "majority_votes": paths["votes"], "predictions": [paths["preds"]], "responses": [paths["responses"]]}
    )  # fmt: skip
    d1, d2 = items
    assert d1["transcript"] == "A: hi\nB: hello again" and d1["timeline"] is None and d2["media"] == []
    crowd = next(a for a in d1["answers"] if a["type"] == "crowd")
    assert (crowd["answer"], crowd["score"], crowd["correct"]) == ("familiar", 2 / 3, True)
    assert crowd["text"] == "2 of 3 raters answered familiar (share 0.67)"
    failed = next(a for a in d2["answers"] if a["rater"] == "m2@v1")
    assert (failed["answer"], failed["status"], failed["reason"], failed["correct"]) == (
        "", "failed", "HTTP 429 after 3 retries", None
    )  # fmt: skip
    m1 = next(a for a in d1["answers"] if a["rater"] == "m1@v1")
    assert (m1["answer"], m1["confidence"], m1["correct"], m1["status"]) == (
        "stranger",
        0.8,
        False,
        "answered",
    )
    assert d1["flags"] == {"models_vs_humans": False, "models_disagree": True}
    assert d2["flags"] == {"models_vs_humans": False, "models_disagree": False}
    assert ("clip", "not given (a released design)") in d1["facts"] and d1["difficulty"] is None


def test_the_truth_filter_keeps_labels_within_their_benchmark_and_no_free_text():
    """Issue 60: the truth filter mixed familiar/stranger with the how task's free-text reference
    replies; it offers `benchmark: label` choices only, and none for a free-text truth."""
    from omnisocial.explorer import summarise

    items = [
        {"id": "f:1", "benchmark": "familiarity", "truth": "familiar"},
        {"id": "f:2", "benchmark": "familiarity", "truth": "stranger"},
        {"id": "w:1", "benchmark": "who", "truth": "A"},
        {"id": "h:1", "benchmark": "how", "truth": "Oh, I had no idea you two had met before!"},
        {"id": "s:1", "benchmark": "streaming", "truth": "A person walks in from the left."},
    ]
    assert summarise(items)["truth"] == ["familiarity: familiar", "familiarity: stranger", "who: A"]
    script = (Path(__file__).resolve().parents[1] / "src/omnisocial/explorer/assets/explorer.js").read_text()
    assert 'item.benchmark + ": " + String(item.truth) !== s.truth' in script  # the page compares the same

"""Every shell command of README.md and docs/ works as written (issue 49): each is run by a test or
marked as an illustration (`<!-- illustration: why -->`, docs/development.md#doc-commands), and
each, run or not, reads as its program reads it (snakemake's and omnisocial's own parsers, the
Makefile's targets, the config files it names).

Which test runs which command is listed in RUN_BY; those tests take the command from the page
(`doc_commands.find`), so an edited command is the one they run, and a command that is neither
listed nor marked fails here.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from doc_commands import (
    REPO,
    SETUP,
    DocCommand,
    doc_commands,
    find,
    page_commands,
    problems,
    run_in_clean_shell,
    start_in_clean_shell,
)

SCORE = "omnisocial score PREDICTIONS.csv -o METRICS.csv"
SCORE_REPLIES = "omnisocial score REPLIES.csv --reply-column reply -o METRICS.csv"
GLMM = (
    'omnisocial glmm DATA.csv --formula "correct ~ 0 + modality + (1|rater_id) + (1|dyad_id)" -o SUMMARY.csv'
)
RASCH = "omnisocial rasch RESPONSES.csv --person rater_id --item dyad_id --correct correct -o ITEMS.csv"
GLMM_DEFAULT = "omnisocial glmm trials.csv -o summary.csv"
WALK = "tests/test_rating_workflow.py::test_a_study_from_the_readme_to_the_figures_and_report"
LAYOUTS = "tests/test_release_layouts.py::test_the_release_examples_run_to_their_figures"
CLI = "tests/test_doc_commands.py::test_the_statistics_commands_run_as_documented"
SETUP_TEST = "tests/test_doc_commands.py::test_the_documented_setup_puts_the_programs_on_path"
RUN_BY = {
    # the activation a new terminal needs; every other command runs after it (run_in_clean_shell)
    SETUP: SETUP_TEST,
    # a study in the Seamless layout, from the survey materials to the report (slow)
    "snakemake survey_materials --cores all --configfile config/my_study.yaml": WALK,
    "snakemake --cores all --configfile config/my_study.yaml": WALK,
    "snakemake figures --cores all --configfile config/my_study.yaml": WALK,
    "snakemake --report results/friendbench/report.html --configfile config/my_study.yaml": WALK,
    "snakemake -n": WALK,
    # the FriendBench release in each of its layouts, each with its preset (slow)
    "snakemake --cores all --configfile config/friendbench_release.example.yaml": LAYOUTS,
    "snakemake --cores all --configfile config/friendbench_val.example.yaml": LAYOUTS,
    "omnisocial friendbench-demo data/friendbench": LAYOUTS,
    SCORE: "tests/test_doc_commands.py::test_score_runs_as_documented",
    SCORE_REPLIES: "tests/test_doc_commands.py::test_score_runs_as_documented",
    GLMM: CLI,
    RASCH: CLI,
    GLMM_DEFAULT: CLI,
}


def unaccounted(commands: list[DocCommand]) -> list[str]:
    """Commands neither run by a test (RUN_BY) nor marked as illustrations."""
    return [f"{c.where}: {c.text}" for c in commands if c.illustration is None and c.text not in RUN_BY]


def test_every_documented_command_is_run_or_marked(record_property):
    commands = doc_commands()
    run = [c for c in commands if c.illustration is None]
    marked = [c for c in commands if c.illustration is not None]
    record_property(
        "summary",
        f"documented commands: {len(commands)} in README.md and docs/, {len(run)} run by tests "
        f"({len(set(c.text for c in run))} distinct), {len(marked)} marked as illustrations",
    )
    missing = unaccounted(commands)
    assert not missing, (
        "commands neither run by a test (tests/test_doc_commands.py RUN_BY) nor marked "
        "<!-- illustration: why --> (docs/development.md#doc-commands):\n" + "\n".join(missing)
    )
    shown = {c.text for c in commands}
    stale = [text for text in RUN_BY if text not in shown]
    assert not stale, "RUN_BY lists commands no page shows any more:\n" + "\n".join(stale)
    assert len(run) >= 10 and len(marked) >= 10  # the pages' commands are found at all


def test_every_documented_command_reads_as_its_program_reads_it():
    broken = [f"{c.where}: {c.text}: {'; '.join(p)}" for c in doc_commands() if (p := problems(c))]
    assert not broken, "documented commands that fail as written:\n" + "\n".join(broken)


def test_a_broken_or_unmarked_command_fails_the_checks(tmp_path):
    """The check on a page shaped like ours: the target swallowed by --configfile (issue 49's
    README bug), a misspelled target, a rejected option and an unmarked command are each found."""
    for name in ("Snakefile", "Makefile"):
        (tmp_path / name).write_text((REPO / name).read_text())
    (tmp_path / "workflow").symlink_to(REPO / "workflow")
    (tmp_path / "config").symlink_to(REPO / "config")
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(
        "Build the survey: `snakemake --cores all --configfile config/my_study.yaml survey_materials`.\n"
        "<!-- illustration: a cluster -->\n"
        "```bash\n"
        "snakemake --profile workflow/profiles/slurm   # on the login node\n"
        "```\n\n"
        "```sh\n"
        "snakemake survey_material --cores all \\\n"
        "  --configfile config/demo.yaml\n"
        "make tests\n"
        "omnisocial score --no-such-flag x.csv -o y.csv\n"
        "```\n"
    )
    commands = page_commands(tmp_path / "README.md", tmp_path)
    assert [(c.line, c.text, c.illustration) for c in commands] == [
        (1, "snakemake --cores all --configfile config/my_study.yaml survey_materials", None),
        (4, "snakemake --profile workflow/profiles/slurm", "a cluster"),
        (8, "snakemake survey_material --cores all --configfile config/demo.yaml", None),
        (10, "make tests", None),
        (11, "omnisocial score --no-such-flag x.csv -o y.csv", None),
    ]
    found = {c.line: problems(c, tmp_path) for c in commands}
    assert found[1] == [
        "--configfile survey_materials: no such file (a target after --configfile is read as a "
        "config file: name it first)"
    ]
    assert found[4] == []
    assert found[8] == ["no rule 'survey_material'"]
    assert found[10] == ["make has no target 'tests'"]
    assert found[11] == ["omnisocial rejects its arguments (see the usage above)"]
    assert [line.split(": ")[0] for line in unaccounted(commands)] == [
        "README.md:1",
        "README.md:8",
        "README.md:10",
        "README.md:11",
    ]


def _venv_folder(folder: Path) -> Path:
    """A folder shaped like the checkout as far as the setup is concerned: the venv `make setup` built."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".venv").symlink_to(REPO / ".venv")
    return folder


def run_as_documented(text: str, cwd: Path) -> str:
    """The documented command `text`, as the page writes it, in a clean shell after the README's
    setup; its console output (it must succeed)."""
    command = find(text)
    result = run_in_clean_shell(command.text, cwd, timeout=600)
    said = result.stdout + result.stderr
    assert result.returncode == 0, f"{command.where}: {text} failed:\n{said[-4000:]}"
    return said


def test_the_documented_setup_puts_the_programs_on_path(tmp_path):
    """Issue 60: a new terminal knows neither snakemake nor omnisocial (the README's own-study
    command failed with `snakemake: command not found`); after the README's one setup line
    (`. .venv/bin/activate`, shown on the page) both run, with no path added by the test."""
    find(SETUP)  # the README shows it
    folder = _venv_folder(tmp_path / "checkout")
    bare = run_in_clean_shell("snakemake --version; omnisocial --help", folder, setup=None)
    assert "snakemake: command not found" in bare.stderr and "omnisocial: command not found" in bare.stderr
    ready = run_in_clean_shell("snakemake --version && omnisocial --help", folder)
    assert ready.returncode == 0, ready.stderr
    assert ready.stdout.splitlines()[0].split(".")[0].isdigit()
    assert "rating-server" in ready.stdout


def _predictions(path: Path) -> None:
    rows = [
        {"model": m, "modality": modality, "item_id": f"D{i}", "truth": truth, "label": label}
        for m in ("a", "b")
        for modality in ("text", "audio")
        for i, (truth, label) in enumerate(
            [("familiar", "familiar"), ("stranger", "stranger"), ("familiar", "stranger"), ("stranger", "")]
        )
    ]
    pd.DataFrame(rows).to_csv(path, index=False)


@pytest.mark.heavy  # 3 CPU-s
def test_score_runs_as_documented(tmp_path):
    _venv_folder(tmp_path)
    _predictions(tmp_path / "PREDICTIONS.csv")
    run_as_documented(SCORE, tmp_path)
    metrics = pd.read_csv(tmp_path / "METRICS.csv")
    assert len(metrics) == 4 and set(metrics["coverage"]) == {0.75}
    assert metrics["accuracy"].round(4).tolist() == [round(2 / 3, 4)] * 4
    # the same answers as raw replies made elsewhere, read by the workflow's parser
    frame = pd.read_csv(tmp_path / "PREDICTIONS.csv", keep_default_na=False)
    frame["reply"] = [
        f'```json\n{{"relationship_label": "{label}", "confidence": 0.8}}\n```' if label else "I cannot tell."
        for label in frame.pop("label")
    ]
    frame.to_csv(tmp_path / "REPLIES.csv", index=False)
    (tmp_path / "METRICS.csv").unlink()
    said = run_as_documented(SCORE_REPLIES, tmp_path)
    assert "16 replies read, 4 gave no label (non-answers)" in said
    from_replies = pd.read_csv(tmp_path / "METRICS.csv")
    pd.testing.assert_frame_equal(
        from_replies.drop(columns=["ece"], errors="ignore"),
        metrics.drop(columns=["ece"], errors="ignore"),
        check_dtype=False,
    )


@pytest.mark.slow
@pytest.mark.heavy  # 9 CPU-s
def test_the_statistics_commands_run_as_documented(tmp_path):
    """omnisocial glmm and rasch as command-line.md and glmm-sampling.md show them, on trials of
    24 raters x 12 dyads in two modalities (the samplers at their defaults)."""
    import numpy as np

    rng = np.random.default_rng(4)
    rows = []
    for r in range(24):
        modality = ("text", "audio")[r % 2]
        for d in range(12):
            rows.append(
                {
                    "rater_id": f"R{r}",
                    "dyad_id": f"D{d}",
                    "modality": modality,
                    "correct": int(rng.random() < (0.55 if modality == "text" else 0.7)),
                }
            )
    trials = pd.DataFrame(rows)
    _venv_folder(tmp_path)
    for name in ("DATA.csv", "RESPONSES.csv", "trials.csv"):
        trials.to_csv(tmp_path / name, index=False)
    for text, output in [(GLMM, "SUMMARY.csv"), (RASCH, "ITEMS.csv"), (GLMM_DEFAULT, "summary.csv")]:
        run_as_documented(text, tmp_path)
        assert len(pd.read_csv(tmp_path / output)) > 0, text


def test_a_target_after_configfile_is_said_in_one_line(tmp_path):
    """Issue 60: `--configfile` takes several files, so a target written after it was read as one
    and Snakemake ended in a FileNotFoundError traceback; the venv's start hook (make setup,
    omnisocial.snakemake_hint) says it in one line, naming the fix the README gives."""
    from omnisocial.snakemake_hint import misplaced_target

    folder = _venv_folder(tmp_path)
    (folder / "config").symlink_to(REPO / "config")
    mistaken = "snakemake -n --cores all --configfile config/demo.yaml survey_materials"
    result = run_in_clean_shell(mistaken, folder, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        "snakemake: 'survey_materials' after --configfile is read as a config file (--configfile takes "
        "several): name the target first (snakemake survey_materials -n --cores all --configfile "
        "config/demo.yaml), or write --configfile=FILE"
    ]
    exists = {"config/a.yaml", "b"}.__contains__
    assert misplaced_target(["--configfile", "config/a.yaml", "all"], exists) == "all"
    assert misplaced_target(["--configfile", "config/a.yaml", "b"], exists) is None  # a second file
    assert misplaced_target(["all", "--configfile", "config/a.yaml", "-n"], exists) is None
    assert misplaced_target(["--configfile", "config/a.yaml", "config/missing.yaml"], exists) is None


SERVE = "omnisocial rating-server --experiment {results}/ratings/experiment --data collected/"
SERVE_STUDY = SERVE.format(results="results/friendbench")  # README: a study from seamless.example.yaml
SERVE_DEMO = SERVE.format(results="results/familiarity")  # docs/rating-experiment.md: the demo's
RUN_BY[SERVE_STUDY] = RUN_BY[SERVE_DEMO] = (
    "tests/test_doc_commands.py::test_the_rating_server_runs_as_documented"
)


def _json_blocks(page: str) -> list:
    text = (REPO / page).read_text(encoding="utf-8")
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", text, re.S)]


@pytest.mark.heavy  # 6 CPU-s
def test_the_rating_server_runs_as_documented(tmp_path):
    """Issue 60: `omnisocial rating-server` as README and docs/rating-experiment.md write it (the
    full form) serves a built study from a clean shell, and takes the request bodies the page
    documents (the start body, a consent, the documented rating record on the session's list)."""
    from rating_study import JSPSYCH_DIR, build_study

    if not (JSPSYCH_DIR / "jspsych").is_dir():
        pytest.skip("jsPsych not installed (make web-deps)")
    from test_rating_collect import Client

    built = build_study(tmp_path / "built", raters=2)
    folder = _venv_folder(tmp_path / "checkout")
    start_body, started, record_body = _json_blocks("docs/rating-experiment.md")
    for index, text in enumerate((SERVE_STUDY, SERVE_DEMO)):
        command = find(text)
        experiments = folder / command.argv[command.argv.index("--experiment") + 1]
        experiments.parent.mkdir(parents=True, exist_ok=True)
        experiments.symlink_to(built["experiments"])
        process = start_in_clean_shell(
            command.text, folder, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        try:
            links = [process.stdout.readline().strip() for _ in range(3)]
            assert [link.split(":", 1)[0] for link in links] == ["audio", "text", "video"], links
            port = int(links[0].split("127.0.0.1:", 1)[1].split("/", 1)[0])
            token = links[0].split("token=", 1)[1].split("&", 1)[0]  # a new one: --token left out
            client = Client(port)
            pid = f"P000{index}"
            body = start_body | {
                "token": token,
                "participant": start_body["participant"] | {"PROLIFIC_PID": pid},
            }
            status, session = client.post("/audio/api/start", body)
            assert (
                status == 200
                and set(session) == set(started)
                and set(session["done"]) == set(started["done"])
            )
            ids = {"token": token, "session_id": session["session_id"], "PROLIFIC_PID": pid}
            status, answer = client.post(
                "/audio/api/record", ids | {"record": {"kind": "consent", "agreed": True}}
            )
            assert status == 200 and answer["stored"] is True
            trial = session["trials"][1]
            record = record_body["record"] | {"order": trial["order"], "dyad_id": trial["dyad_id"]}
            status, answer = client.post("/audio/api/record", ids | {"record": record})
            assert status == 200 and answer["done"]["ratings"] == [trial["order"]], answer
        finally:
            process.terminate()
            process.wait(timeout=30)
        sessions = list((folder / "collected" / "audio" / "sessions").glob("*.jsonl"))
        assert sessions and all(s.stat().st_size > 0 for s in sessions)
        (folder / "collected").rename(folder / f"collected_{index}")  # the next server's is new

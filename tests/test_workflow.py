"""The whole workflow on a small demo corpus, in a temporary folder.

One full run (built once per session and shared by the xdist workers: conftest.shared_dir), then:
nothing left to do, also with the config's keys in another order; a seed change reruns sampling
and what follows, not the corpus or the filters; a threshold change reruns filtering and what
follows, not the corpus or the signal measurements; the demo's built-in failures are all excluded
with reasons; a second run in another folder (up to the stimuli) gives the same bytes; a malformed
config fails before any job, naming the key.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from config_order import reversed_keys
from conftest import shared_dir

from omnisocial.familiarity.contracts import FILTER_REPORT, STIMULI_MANIFEST
from omnisocial.tables import DESIGN

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile")]
pytestmark = pytest.mark.slow

FAILURES = [
    "placeholder_prompt",
    "not_either_or",
    "too_few_turns",
    "silent_speaker",
    "duplicated_tracks",
    "desynced_tracks",
    "too_little_speech",
    "truncated_video",
    "single_participant",
    "missing_transcript",
    "corrupt_video",
    "empty_audio",
    "unreadable_json",
]


# What lies upstream of filtering and of sampling: a seed or threshold change must not rerun it.
CORPUS_RULES = {
    "make_demo_corpus",
    "ingest_corpus",
    "transcribe_missing",
    "measure_signals",
    "select_clip_candidates",
}
FILTER_RULES = {"apply_filters"}


def small_config() -> dict:
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    # 50 s conversations (the shortest 40 s of speech allows; the demo config takes 58 s) built
    # for, and filtered at, 40 s of speech (F5), as in the demo config
    config["demo"].update(
        sites=["V00"], candidates_per_cell=2, duration_s=50, min_total_speech_s=40.0, failures=FAILURES
    )
    config["filters"]["min_total_speech_s"] = 40.0
    config["sampling"]["n_per_cell"] = 1
    config["corpus"]["missing_transcript"] = "exclude"
    config["social"]["enabled"] = False  # the social benchmarks have their own workflow test
    # the schema's formats, not the demo's PNG only: the study checks the PDFs a paper takes
    config["figures"] = {"formats": ["png", "pdf"]}
    return config


def snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [*SNAKEMAKE, "--directory", str(workdir), "--configfile", str(workdir / "config.yaml"), *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def planned_jobs(workdir: Path, *args: str) -> set[str]:
    """Rule names a dry run would execute."""
    output = snakemake(workdir, "-n", *args).stdout
    if "Nothing to be done" in output:
        return set()
    stats = output.split("Job stats:")[1].split("total")[0]
    return {m.group(1) for m in re.finditer(r"^(\w+)\s+\d+\s*$", stats, re.M)}


def write_config(workdir: Path, config: dict) -> None:
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def run_study(workdir: Path, *targets: str) -> None:
    write_config(workdir, small_config())
    snakemake(workdir, "--cores", "2", *targets)


def shared_study(tmp_path_factory) -> Path:
    """The one full run the tests below read, built once per session (conftest.shared_dir)."""
    return shared_dir(tmp_path_factory, "study", run_study)


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    return shared_study(tmp_path_factory)


# The tests that run snakemake in the study's folder (some rewrite its config for a while) go in
# sequence on one worker; the ones that only read its outputs may run on another.
in_the_study = pytest.mark.xdist_group("study")


def results(workdir: Path) -> Path:
    return workdir / "results" / "familiarity"


@pytest.mark.heavy  # reads the shared study run
def test_outputs_follow_their_contracts(study):
    report = FILTER_REPORT.read(results(study) / "filters" / "filter_report.csv")
    design = DESIGN.read(results(study) / "design" / "design.csv")
    manifest = STIMULI_MANIFEST.read(results(study) / "stimuli" / "manifest.csv")
    assert len(design) == 4  # 1 site x 2 relationships x 2 gender mixes x 1
    assert design["cell"].nunique() == 4
    assert set(design["interaction_id"]) <= set(report.loc[report["passed"], "interaction_id"])
    assert len(manifest) == len(design) * 4  # transcript, mix, stereo, side-by-side video
    assert manifest["modality"].value_counts().to_dict() == {"audio": 8, "text": 4, "video": 4}
    media = results(study) / "stimuli"
    for row in manifest.itertuples():
        assert (media / row.path).is_file(), row.path
        if row.modality != "text":
            assert abs(row.duration_s - (row.clip_end - row.clip_start)) < 0.15


@pytest.mark.heavy  # reads the shared study run
def test_every_built_in_failure_is_excluded_with_a_reason(study):
    truth = pd.read_csv(study / "data" / "demo" / "seamless" / "_demo_truth.csv", dtype=str)
    report = FILTER_REPORT.read(results(study) / "filters" / "filter_report.csv").set_index("interaction_id")
    expected_column = {
        "placeholder_prompt": "f1_prompt_pass",
        "not_either_or": "f1_prompt_pass",
        "too_few_turns": "f2_turns_pass",
        "silent_speaker": "f3_speech_pass",
        "duplicated_tracks": "f4_tracks_pass",
        "desynced_tracks": "f4_tracks_pass",
        "too_little_speech": "f5_amount_pass",
        "truncated_video": "f4_tracks_pass",
        "single_participant": "ingest_pass",
        "missing_transcript": "ingest_pass",
        "corrupt_video": None,  # fails measurement: any of ingest / F4
        "empty_audio": None,
        "unreadable_json": "ingest_pass",
    }
    for row in truth.itertuples():
        assert row.interaction_id in report.index, f"{row.interaction_id} ({row.expected}) silently dropped"
        outcome = report.loc[row.interaction_id]
        if row.expected == "pass":
            assert outcome["passed"], f"{row.interaction_id}: {outcome['reasons']}"
            continue
        assert not outcome["passed"], f"{row.expected} interaction passed"
        assert outcome["reasons"], f"{row.expected}: no reason"
        column = expected_column[row.expected]
        if column:
            assert not outcome[column], f"{row.expected}: {column} passed; reasons: {outcome['reasons']}"


@in_the_study
@pytest.mark.heavy  # reads the shared study run
def test_rerun_has_nothing_to_do(study):
    assert planned_jobs(study) == set()


@in_the_study
@pytest.mark.heavy  # reads the shared study run
def test_a_config_with_its_keys_reordered_has_nothing_to_do(study):
    """Snakemake compares dict params in key order; the validated config's mappings are sorted."""
    write_config(study, reversed_keys(small_config()))
    try:
        written = yaml.safe_load((study / "config.yaml").read_text())
        assert list(written) == list(reversed(list(small_config())))  # really reordered
        assert planned_jobs(study) == set()
    finally:
        write_config(study, small_config())


@in_the_study
@pytest.mark.heavy  # reads the shared study run
def test_seed_change_reruns_sampling_onward_only(study):
    config = small_config()
    config["sampling"]["seed"] = 7
    write_config(study, config)
    try:
        planned = planned_jobs(study)
        assert {"sample_design", "render_stimuli"} <= planned
        assert not planned & {*CORPUS_RULES, *FILTER_RULES}, planned & {*CORPUS_RULES, *FILTER_RULES}
    finally:
        write_config(study, small_config())


@in_the_study
@pytest.mark.heavy  # 4 CPU-s
def test_the_paper_numbers_rerun_for_a_number_setting_not_a_figure_setting(study):
    """Issue 63: a figure-only setting plans no paper rule (its numbers stay byte for byte); more
    GLMM draws plan the GLMM and the familiarity numbers, nothing upstream."""
    tex = results(study) / "paper" / "numbers.tex"
    assert "\\newcommand{\\AudioOverTextPP}{" in tex.read_text()
    config = small_config()
    config["figures"] = {"dpi": 300, "font_size": 9}
    write_config(study, config)
    try:
        planned = planned_jobs(study)
        assert planned and not {rule for rule in planned if rule.startswith("paper")}, planned
        config = small_config()
        # the study's draws are the package's choice (null) or a number: either way another number
        config["analysis"]["glmm"]["draws"] = (config["analysis"]["glmm"]["draws"] or 1000) + 100
        write_config(study, config)
        planned = planned_jobs(study)
        assert {"glmm", "paper_familiarity"} <= planned
        assert not planned & {"score_familiarity", "rasch", "rater_tests", *CORPUS_RULES}, planned
    finally:
        write_config(study, small_config())


@pytest.mark.heavy  # reads the shared study run
def test_every_good_demo_conversation_keeps_the_docs_example_min_turns(study):
    """The demo has the slack its docs' example edit needs (issue 49): every good conversation's
    clips hold one merged turn more than the default filters.min_turns of 4, so
    `filters.min_turns: 5` keeps them all and sample_design still fills."""
    truth = pd.read_csv(study / "data" / "demo" / "seamless" / "_demo_truth.csv", dtype=str)
    good = set(truth.loc[truth["expected"] == "pass", "interaction_id"])
    clips = pd.read_csv(results(study) / "clips" / "clip_candidates.csv", dtype={"interaction_id": str})
    turns = clips.loc[clips["interaction_id"].isin(good), "n_turns"]
    assert len(turns) == 2 * len(good) and turns.min() >= 5, turns.describe()


@pytest.mark.heavy  # reads the shared study run
def test_threshold_change_reruns_filters_onward_only(study):
    config = small_config()
    config["filters"]["min_total_speech_s"] = 35.0  # demo.min_total_speech_s stays 40: no corpus rerun
    write_config(study, config)
    try:
        planned = planned_jobs(study)
        assert {"apply_filters", "sample_design", "render_stimuli"} <= planned
        assert not planned & CORPUS_RULES, planned & CORPUS_RULES
    finally:
        write_config(study, small_config())


@pytest.mark.xdist_group("study_twin")  # queued with the study's group: the two runs side by side
@pytest.mark.heavy  # a second run of the corpus to the stimuli
def test_same_config_gives_the_same_bytes(tmp_path_factory, tmp_path):
    tables = ("filters/filter_report.csv", "design/design.csv", "stimuli/manifest.csv")
    # the jobs these tables need (corpus to stimuli), not the models, ratings and analyses after them
    run_study(tmp_path, *(f"results/familiarity/{table}" for table in tables))
    study = shared_study(tmp_path_factory)  # after the own run: under xdist it is built meanwhile
    for table in tables:
        assert (results(tmp_path) / table).read_bytes() == (results(study) / table).read_bytes(), table


def test_malformed_config_fails_before_any_job(tmp_path):
    config = small_config()
    config["filters"]["min_turns"] = "four"
    write_config(tmp_path, config)
    result = snakemake(tmp_path, "--cores", "1", check=False)
    assert result.returncode != 0
    assert "filters.min_turns: 'four' is not of type 'integer'" in result.stdout + result.stderr
    assert not (tmp_path / "data").exists() and not (tmp_path / "results").exists()


def test_a_demo_length_its_speech_threshold_cannot_fill_fails_before_any_job(tmp_path):
    config = small_config()
    config["demo"]["duration_s"] = 70  # above 62.2 s, the longest 40 s of speech allows
    write_config(tmp_path, config)
    result = snakemake(tmp_path, "--cores", "1", check=False)
    said = result.stdout + result.stderr
    assert result.returncode != 0
    assert "demo.duration_s (70) must be within 49.56-62.22 s for demo.min_total_speech_s 40" in said, said
    assert not (tmp_path / "data").exists() and not (tmp_path / "results").exists()


@pytest.mark.heavy  # 8 CPU-s
def test_missing_transcripts_route_to_the_asr_rule(study, tmp_path):
    """With `missing_transcript: asr` the transcribe_missing rule runs (on a tiny model)."""
    from test_asr import build_tiny_whisper

    shutil.copytree(study / "data", tmp_path / "data")  # the same corpus, a fresh study
    config = small_config()
    config["corpus"]["missing_transcript"] = "asr"
    model = build_tiny_whisper(tmp_path / "tiny-whisper")
    config["asr"].update(engine="faster-whisper", model=str(model), local_files_only=True, device="cpu")
    write_config(tmp_path, config)
    assert "transcribe_missing" in planned_jobs(tmp_path)
    target = "results/familiarity/corpus/asr_segments.csv"
    snakemake(tmp_path, "--cores", "2", target)
    truth = pd.read_csv(tmp_path / "data" / "demo" / "seamless" / "_demo_truth.csv", dtype=str)
    missing = truth.loc[truth["expected"] == "missing_transcript", "interaction_id"].item()
    segments = pd.read_csv(tmp_path / target, dtype=str)
    failures = pd.read_csv(tmp_path / "results/familiarity/corpus/asr_failures.csv", dtype=str)
    # A random-weight model transcribes garbage, or nothing: either way the interaction is
    # accounted for, as segments or as a recorded failure, never silently dropped.
    assert missing in set(segments["interaction_id"]) | set(failures["interaction_id"])
    assert set(segments["interaction_id"]) <= {missing}


@in_the_study
@pytest.mark.heavy  # 6 CPU-s
def test_a_dead_model_host_fails_its_job_fast_and_a_plain_rerun_resumes(study):
    """A registry entry whose host is down fails in seconds, not after hours of retries."""
    import socket
    import time

    from http_server import FakeChatServer

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = small_config()
    remote = {"name": "remote", "backend": "openai", "model": "m", "modalities": ["text"]}
    config["models"] = [*config["models"], {**remote, "base_url": f"http://127.0.0.1:{port}/v1"}]
    write_config(study, config)
    target = "results/familiarity/predictions/remote.csv"
    try:
        started = time.monotonic()
        failed = snakemake(study, "--cores", "2", target, check=False)
        assert failed.returncode != 0 and time.monotonic() - started < 30
        log = (results(study) / "logs" / "infer_model_remote.log").read_text()
        assert "probe" in log and "unreachable" in log and "no call was made" in log
        with FakeChatServer(port=port) as server:  # the host is back: a plain rerun makes the calls
            snakemake(study, "--cores", "2", target)
            assert server.requests == 4 * 2  # 4 dyads x 1 modality x 2 prompt variants
        history = (results(study) / "logs" / "infer_model_remote.log.attempts").read_text()
        assert "attempt 1," in history and "unreachable" in history and "attempt 2," in history
    finally:
        write_config(study, small_config())


@pytest.mark.heavy  # reads the shared study run
def test_summary_page_and_table_renderings(study):
    summary = results(study) / "summary"
    text = (summary / "summary.md").read_text()
    assert "## Filter funnel" in text and "## Convergence of every Bayesian fit" in text
    assert "SIMULATED DATA" in text
    # every registry model's calls, counted by finish reason (baselines give none)
    reasons = pd.read_csv(summary / "summary_finish_reasons.csv").set_index("model")
    responses = pd.concat(pd.read_csv(path) for path in (results(study) / "responses").glob("*.csv"))
    counts = responses.groupby("name").size()
    for name in reasons.index:
        assert reasons.loc[name, "calls"] == counts[name], name
    for name in ("chance", "behavioural"):
        assert reasons.loc[name, "(not given)"] == reasons.loc[name, "calls"] > 0, name
    assert "## Finish reasons per model (failed calls included)" in text
    # the simulated panel has the planned raters of every modality
    assert "## Raters: imported against the plan" in text and "Raters differ from the plan" not in text
    raters = pd.read_csv(summary / "summary_raters.csv")
    assert (raters["note"] == "as planned").all() and (raters["difference"] == 0).all(), raters
    for name in ("metrics", "mcnemar", "tost", "glmm_summary", "rasch_correlations"):
        for suffix in ("html", "md", "tex"):
            assert (results(study) / "analysis" / f"{name}.{suffix}").is_file(), (name, suffix)
    for figure in ("funnel", "coverage"):
        assert (results(study) / "figures" / f"{figure}.pdf").is_file()


def _browser() -> str | None:
    return next(
        (
            shutil.which(name)
            for name in ("chromium", "chromium-browser", "google-chrome")
            if shutil.which(name)
        ),
        None,
    )


@in_the_study
@pytest.mark.heavy  # 4 CPU-s
def test_report_opens_in_a_headless_browser(study):
    """`snakemake --report` of the small run, opened by headless chromium: the summary comes first
    and the tables are entries of the report (HTML, so they show inline)."""
    browser = _browser()
    if browser is None:
        pytest.skip("chromium not on PATH (make system-deps installs it; .ci/run runs that)")
    report = study / "report.html"
    snakemake(study, "--report", str(report))
    page = report.read_text()
    assert "0. Summary" in page and "summary.html" in page
    assert '"mime_type": "text/html"' in page or "text/html" in page
    dom = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=10000",
            "--dump-dom",
            report.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "0. Summary" in dom, dom[:2000]
    assert "Familiarity results" in dom
    # every entry is named by its labels in the side bar (not by its raw path)
    assert '"labels": {"page": "summary"}' in page and '"labels": {"table": "metrics' in page
    # one job renders every table, each captioned by its own rst (workflow/report/fam_metrics.rst)
    assert '"rule": "render_tables"' in page and '"rule": "render_table"' not in page
    assert "Accuracy on answered trials with its 95% Wilson interval" in page


@pytest.mark.heavy  # 6 CPU-s
def test_notebook_executes_against_the_run(study, tmp_path):
    nbclient = pytest.importorskip("nbclient", reason="make notebook-deps installs nbclient and ipykernel")
    import nbformat

    notebook = nbformat.read(ROOT / "notebooks" / "familiarity.ipynb", as_version=4)
    env_cell = nbformat.v4.new_code_cell(
        "import os\n"
        f"os.environ['OMNISOCIAL_RESULTS'] = {str(results(study))!r}\n"
        f"os.environ['OMNISOCIAL_NOTEBOOK_OUT'] = {str(tmp_path / 'figures')!r}"
    )
    notebook.cells.insert(0, env_cell)
    nbclient.NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(ROOT / "notebooks")}},
    ).execute()
    assert any((tmp_path / "figures").glob("*.png"))


# --- cores and order of the parallel stages (config threads:, CHAIN_PRIORITY) ---------------


def planned_job(said: str, rule: str) -> str:
    """The dry run's block of the (first) job of `rule`."""
    blocks = re.split(r"\n(?=\[[^\]]+\]\n)", said)
    found = [b for b in blocks if re.search(rf"^(local)?rule {rule}:", b, re.M)]
    assert found, f"no {rule} job planned"
    return found[0]


def planned_threads(said: str, rule: str) -> int:
    match = re.search(r"^\s+threads: (\d+)$", planned_job(said, rule), re.M)
    return int(match.group(1)) if match else 1  # Snakemake prints threads above 1 only


@pytest.mark.heavy  # 4 CPU-s
def test_the_demo_runs_its_parallel_stages_on_one_core_and_a_study_takes_the_rules_defaults(tmp_path):
    from test_release import seamless_example, snakemake

    demo = tmp_path / "demo"
    demo.mkdir()
    shutil.copy(ROOT / "config" / "demo.yaml", demo / "config.yaml")
    said = snakemake(demo, "-n", "--cores", "8").stdout
    stages = ("measure_signals", "render_stimuli", "glmm", "rasch")
    assert {rule: planned_threads(said, rule) for rule in ("make_demo_corpus", *stages)} == {
        "make_demo_corpus": 2,
        **dict.fromkeys(stages, 1),
    }
    # the longest chain goes first among ready jobs; the social benchmarks do not
    for rule in ("make_demo_corpus", "measure_signals", "render_stimuli", "baseline_predictions", "rasch"):
        assert "priority: 10" in planned_job(said, rule), rule
    assert "priority" not in planned_job(said, "social_demo")

    study = tmp_path / "study"
    study.mkdir()
    seamless_example(study)
    said = snakemake(study, "-n", "--cores", "8").stdout
    assert {rule: planned_threads(said, rule) for rule in stages} == {
        "measure_signals": 8,
        "render_stimuli": 8,
        "glmm": 2,
        "rasch": 2,
    }

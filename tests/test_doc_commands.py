"""Every shell command of README.md and docs/ works as written (issue 49): each is run by a test or
marked as an illustration (`<!-- illustration: why -->`, docs/development.md#doc-commands), and
each, run or not, reads as its program reads it (snakemake's and omnisocial's own parsers, the
Makefile's targets, the config files it names).

Which test runs which command is listed in RUN_BY; those tests take the command from the page
(`doc_commands.find`), so an edited command is the one they run, and a command that is neither
listed nor marked fails here.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from doc_commands import REPO, DocCommand, doc_commands, find, page_commands, problems

from omnisocial import cli

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
RUN_BY = {
    # a study in the Seamless layout, from the survey materials to the report (slow)
    "snakemake survey_materials --cores all --configfile config/my_study.yaml": WALK,
    "snakemake --cores all --configfile config/my_study.yaml": WALK,
    "snakemake figures --cores all --configfile config/my_study.yaml": WALK,
    "snakemake --report results/report.html --configfile config/my_study.yaml": WALK,
    "snakemake -n": WALK,
    # the FriendBench release in each of its layouts, each with its preset (slow)
    "snakemake --cores all --configfile config/friendbench_release.example.yaml": LAYOUTS,
    "snakemake --cores all --configfile config/friendbench_val.example.yaml": LAYOUTS,
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


def test_score_runs_as_documented(tmp_path, monkeypatch):
    command = find(SCORE)
    monkeypatch.chdir(tmp_path)
    _predictions(tmp_path / "PREDICTIONS.csv")
    assert cli.main(command.argv[1:]) == 0
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
    assert cli.main(find(SCORE_REPLIES).argv[1:]) == 0
    from_replies = pd.read_csv(tmp_path / "METRICS.csv")
    pd.testing.assert_frame_equal(
        from_replies.drop(columns=["ece"], errors="ignore"),
        metrics.drop(columns=["ece"], errors="ignore"),
        check_dtype=False,
    )


@pytest.mark.slow
def test_the_statistics_commands_run_as_documented(tmp_path, monkeypatch):
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
    monkeypatch.chdir(tmp_path)
    for name in ("DATA.csv", "RESPONSES.csv", "trials.csv"):
        trials.to_csv(tmp_path / name, index=False)
    for text, output in [(GLMM, "SUMMARY.csv"), (RASCH, "ITEMS.csv"), (GLMM_DEFAULT, "summary.csv")]:
        assert cli.main(find(text).argv[1:]) == 0, text
        assert len(pd.read_csv(tmp_path / output)) > 0, text

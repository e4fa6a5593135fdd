# The numbers a paper's results section quotes (omnisocial.paper; docs/outputs.md#paper): for every
# benchmark the study runs, numbers.tex (one LaTeX macro per number), numbers.json and a draft
# results.md, read from the analysis tables. Included after every study's common file.

from omnisocial.paper import (  # noqa: E402
    BENCHMARK_TABLES,
    PAPER_FILES,
    TABLES,
    number_settings,
)

# the settings a number can depend on (not where files go, cores or figure looks): a figure-only
# change reruns no paper rule, and the tables' config hashes are read from these
PAPER_SETTINGS = number_settings(config)


def paper_tables(benchmark, path):
    """The tables a benchmark's numbers are read from, by name (a released design has no filters)."""
    return {
        name: path(*TABLES[name][0].split("/"))
        for name in BENCHMARK_TABLES[benchmark]
        if name != "filter_report" or config["study"]["design_source"] == "pipeline"
    }


def paper_release_inputs():
    """The released predictions and their import report: the draft names the files and sets."""
    if not RELEASE_PREDICTION_FILES:
        return {}
    return {
        "release_predictions": out("release", "predictions.csv"),
        "release_report": out("release", "predictions_import_report.csv"),
    }


def paper_files(*folder):
    return {
        Path(name).suffix.lstrip("."): str(Path(*folder, name)) for name in PAPER_FILES
    }


def paper_outputs():
    """Every benchmark's numbers.tex, numbers.json and results.md (target `paper`, and `all`)."""
    outputs = list(paper_files(RESULTS, "paper").values())
    if SOCIAL["enabled"]:
        for benchmark in ("socialomni", "streaming"):
            outputs += paper_files(SOCIAL["results"], "paper", benchmark).values()
    return outputs


rule paper:
    """Every benchmark's paper numbers (numbers.tex, numbers.json) and draft results (results.md)."""
    input:
        paper_outputs(),
    # a target runs nothing; the env only satisfies tests/test_envs.py (every rule names one)
    conda:
        "../../envs/figures.yaml"


rule paper_familiarity:
    """The familiarity study's numbers, one LaTeX macro each, and its draft results section."""
    input:
        **paper_tables("familiarity", out),
        **paper_release_inputs(),
    output:
        **paper_files(RESULTS, "paper"),
    log:
        out("logs", "paper_familiarity.log"),
    conda:
        "../../envs/figures.yaml"
    params:
        benchmark="familiarity",
        config=PAPER_SETTINGS,
    script:
        "../scripts/paper.py"


if SOCIAL["enabled"]:

    rule paper_socialomni:
        """The who / when / how numbers, one LaTeX macro each, and their draft results section."""
        input:
            **paper_tables("socialomni", sout),
        output:
            **paper_files(SOCIAL["results"], "paper", "socialomni"),
        log:
            sout("logs", "paper_socialomni.log"),
        conda:
            "../../envs/figures.yaml"
        params:
            benchmark="socialomni",
            config=PAPER_SETTINGS,
        script:
            "../scripts/paper.py"

    rule paper_streaming:
        """The streaming numbers, one LaTeX macro each, and their draft results section."""
        input:
            **paper_tables("streaming", sout),
        output:
            **paper_files(SOCIAL["results"], "paper", "streaming"),
        log:
            sout("logs", "paper_streaming.log"),
        conda:
            "../../envs/figures.yaml"
        params:
            benchmark="streaming",
            config=PAPER_SETTINGS,
        script:
            "../scripts/paper.py"

    localrules:
        paper_socialomni,
        paper_streaming,


# Well under a second each: on a cluster they run in the main Snakemake process.
localrules:
    paper,
    paper_familiarity,

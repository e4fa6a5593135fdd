# Paths and input functions of the paper rules (workflow/rules/paper.smk): the tables each
# benchmark's numbers are read from and the files it writes. Included after every study's common
# file (it reads their paths).

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

# Config validation, shared paths and input functions (no logic beyond choosing inputs).
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from omnisocial.config import validate_config  # noqa: E402

validate_config(
    config, Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml"
)

RESULTS = config["results"]
CORPUS = config["corpus"]
ENVS = Path(workflow.basedir) / "envs"


def failure_policy_config():
    """The inference keys that decide when a model job fails (omnisocial.models.runner.FailurePolicy)."""
    keys = ("max_failed_share", "max_consecutive_failures", "probe_backends")
    return {key: config["inference"][key] for key in keys}


def out(*parts):
    """A path under this study's results folder."""
    return str(Path(RESULTS, *parts))


def corpus_root(wildcards=None):
    """The corpus folder: made by make_demo_corpus for the demo, read as given otherwise."""
    return CORPUS["root"]


def transcript_inputs(wildcards=None):
    """Corpus transcripts, plus ASR output when missing transcripts are transcribed."""
    inputs = {"transcripts": out("corpus", "transcript_segments.csv")}
    if CORPUS["missing_transcript"] == "asr":
        inputs["asr"] = out("corpus", "asr_segments.csv")
        inputs["asr_failures"] = out("corpus", "asr_failures.csv")
    return inputs


def final_outputs():
    return [
        out("filters", "filter_report.csv"),
        out("design", "design.csv"),
        out("stimuli", "manifest.csv"),
        # familiarity study: models, ratings, statistics, figures (familiarity_common.smk)
        *familiarity_outputs(),
    ]

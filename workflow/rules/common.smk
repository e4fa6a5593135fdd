# Config validation and shared paths of every study (each study's own input functions live in
# its folder: workflow/rules/familiarity/common.smk, social_common.smk).
import sys
from pathlib import Path

# This repository's root from this file's own folder (workflow/rules), not workflow.basedir:
# used as a module (`module omnisocial: snakefile: ...`), basedir is the outer workflow's.
REPO = Path(str(workflow.current_basedir)).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from omnisocial.config import validate_config  # noqa: E402

validate_config(
    config, REPO / "workflow" / "schemas" / "config.schema.yaml"
)

RESULTS = config["results"]
ENVS = REPO / "envs"


def failure_policy_config():
    """The inference keys that decide when a model job fails (omnisocial.models.runner.FailurePolicy)."""
    keys = ("max_failed_share", "max_consecutive_failures", "probe_backends")
    return {key: config["inference"][key] for key in keys}


def out(*parts):
    """A path under this study's results folder."""
    return str(Path(RESULTS, *parts))

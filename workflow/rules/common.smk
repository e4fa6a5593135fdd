# Config validation and shared paths of every study (each study's own input functions live in
# its folder: workflow/rules/familiarity/common.smk, social_common.smk).
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from omnisocial.config import check_study, validate_config  # noqa: E402

validate_config(
    config, Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml"
)
check_study(config)

RESULTS = config["results"]
ENVS = Path(workflow.basedir) / "envs"


def failure_policy_config():
    """The inference keys that decide when a model job fails (omnisocial.models.runner.FailurePolicy)."""
    keys = ("max_failed_share", "max_consecutive_failures", "probe_backends")
    return {key: config["inference"][key] for key in keys}


def out(*parts):
    """A path under this study's results folder."""
    return str(Path(RESULTS, *parts))

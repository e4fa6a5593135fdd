# Config validation and shared paths of every study (each study's own input functions live in
# its folder: workflow/rules/familiarity/common.smk, social_common.smk).
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from omnisocial.config import validate_config  # noqa: E402

validate_config(
    config, Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml"
)

RESULTS = config["results"]
ENVS = Path(workflow.basedir) / "envs"


def out(*parts):
    """A path under this study's results folder."""
    return str(Path(RESULTS, *parts))

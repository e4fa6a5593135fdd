"""Rule infer_model: one registry model on every stimulus, resumably.

The specification: docs/benchmarks/familiarity.md#inference.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.contracts import RESPONSES, STIMULI_MANIFEST
from omnisocial.familiarity.inference import infer_model
from omnisocial.models.runner import FailurePolicy
from omnisocial.tables import DESIGN, PREDICTIONS
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
predictions, responses = infer_model(
    dict(params.entry),
    STIMULI_MANIFEST.read(snakemake.input.manifest),
    DESIGN.read(snakemake.input.design),
    Path(snakemake.input.manifest).parent,
    list(params.modalities),
    list(params.variants),
    params.cache,
    policy=FailurePolicy.from_config(params.failure_policy),
)
RESPONSES.write(snakemake.output.responses, responses)
PREDICTIONS.write(snakemake.output.predictions, predictions)

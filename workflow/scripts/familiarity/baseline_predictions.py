"""Rule baseline_predictions: behavioural features, cross-validated behavioural model, chance, majority."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.contracts import FEATURES_TABLE, SEGMENTS, STIMULI_MANIFEST
from omnisocial.familiarity.inference import baseline_tables
from omnisocial.tables import DESIGN, PREDICTIONS
from omnisocial.workflow import start

log = start(snakemake)
features, predictions = baseline_tables(
    STIMULI_MANIFEST.read(snakemake.input.manifest),
    DESIGN.read(snakemake.input.design),
    SEGMENTS.read(snakemake.input.segments),
    Path(snakemake.input.manifest).parent,
    {**dict(snakemake.params.baselines), "merge_gap_s": snakemake.params.merge_gap_s},
)
log.info("%d dyads, %d baseline predictions", len(features), len(predictions))
FEATURES_TABLE.write(snakemake.output.features, features)
PREDICTIONS.write(snakemake.output.predictions, predictions)

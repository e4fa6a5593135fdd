"""Rule import_release: a released dyad table as the design, the stimuli manifest and an import report."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.contracts import STIMULI_MANIFEST
from omnisocial.familiarity.release import RELEASE_REPORT, detect_layout, import_design
from omnisocial.tables import DESIGN
from omnisocial.workflow import start

log = start(snakemake)
if snakemake.params.root:
    log.info(detect_layout(snakemake.params.root, snakemake.input.metadata)[1])
design, manifest, report = import_design(
    snakemake.input.metadata, dict(snakemake.params.mapping), snakemake.params.root or None
)
log.info("%d dyads, %d stimulus files", len(design), len(manifest))
DESIGN.write(snakemake.output.design, design)
STIMULI_MANIFEST.write(snakemake.output.manifest, manifest)
RELEASE_REPORT.write(snakemake.output.report, report)

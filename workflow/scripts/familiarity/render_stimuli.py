"""Rule render_stimuli: text, audio and video stimuli plus their manifest."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.contracts import INTERACTIONS, SEGMENTS, STIMULI_MANIFEST
from omnisocial.familiarity.stimuli import render_stimuli
from omnisocial.tables import DESIGN
from omnisocial.workflow import start, threads

log = start(snakemake)
manifest = render_stimuli(
    DESIGN.read(snakemake.input.design),
    INTERACTIONS.read(snakemake.input.interactions),
    SEGMENTS.read(snakemake.input.segments),
    Path(snakemake.output.media),
    dict(snakemake.params.stimuli),
    workers=threads(snakemake),
    manifest_dir=Path(snakemake.output.manifest).parent,
)
log.info("%d stimulus files", len(manifest))
STIMULI_MANIFEST.write(snakemake.output.manifest, manifest)

"""Rule rating_jatos: one modality's built experiment as a JATOS study archive (.jzip)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.ratings.jatos import build_jatos_study
from omnisocial.workflow import start

log = start(snakemake)
jas = build_jatos_study(snakemake.input[0], snakemake.output[0], snakemake.params.ids)
log.info(
    "%s: JATOS study %r (uuid %s kept in %s, folder %s)",
    snakemake.wildcards.modality,
    jas["data"]["title"],
    jas["data"]["uuid"],
    snakemake.params.ids,
    jas["data"]["dirName"],
)

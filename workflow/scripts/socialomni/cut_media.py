"""Rule socialomni_cut_media: every item's clip, cut once for models of one input modality."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.socialomni.contracts import WHEN_ITEMS, WHO_ITEMS
from omnisocial.socialomni.requests import cut_all_media
from omnisocial.workflow import start, threads

log = start(snakemake)
params = snakemake.params
count = cut_all_media(
    WHO_ITEMS.read(snakemake.input.who_items),
    WHEN_ITEMS.read(snakemake.input.when_items),
    params.root,
    params.media_root,
    snakemake.wildcards.modality,
    threads=threads(snakemake),
    who_protocol=params.who_protocol,
)
log.info("%d clips cut for %s models", count, snakemake.wildcards.modality)

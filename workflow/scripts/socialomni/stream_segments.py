"""Rule socialomni_stream_segments: each when stream item cut once into its step segments for one modality."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.socialomni.contracts import WHEN_STREAM_ITEMS
from omnisocial.socialomni.stream import stream_items
from omnisocial.streaming.media import cut_all_segments
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
items = stream_items(
    WHEN_STREAM_ITEMS.read(snakemake.input.when_stream_items), params.root, float(params.step_s)
)
window = None if params.window_s is None else float(params.window_s)
n = cut_all_segments(items, window, params.segments_root, snakemake.wildcards.modality, snakemake.threads)
log.info("%d items cut into %d segments (%s)", len(items), n, snakemake.wildcards.modality)

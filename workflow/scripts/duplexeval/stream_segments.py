"""Rule duplexeval_stream_segments: each stream item cut once into the video segments of its steps."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.duplexeval.contracts import STREAM_ITEMS
from omnisocial.duplexeval.streamed import cut_stream_segments, video_seconds
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
Path(snakemake.output[0]).mkdir(parents=True, exist_ok=True)  # no items: an empty folder
count = cut_stream_segments(
    STREAM_ITEMS.read(snakemake.input.stream_items),
    params.root,
    float(params.step_s),
    params.window_s,
    params.segments_root,
    probe=video_seconds,
    threads=snakemake.threads,
)
log.info("%d segments under %s", count, snakemake.output[0])

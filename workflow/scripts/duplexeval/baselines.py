"""Rule duplexeval_baselines: delayed caption stream and frame-difference reminders."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.duplexeval.baselines import caption_responses, detection_prf, detector_baseline
from omnisocial.duplexeval.contracts import DETECTIONS, STREAM_EVENTS, STREAM_ITEMS, STREAM_RESPONSES
from omnisocial.io import write_csv
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
items = STREAM_ITEMS.read(snakemake.input.stream_items)
events = STREAM_EVENTS.read(snakemake.input.stream_events)
captions = caption_responses(items, events, float(params.caption_delay_s))
detections, reminders = detector_baseline(items, params.root, dict(params.detector))
prf = detection_prf(detections, events, list(params.deltas))
log.info(
    "%d caption sentences, %d detections, %d reminder sentences",
    len(captions),
    len(detections),
    len(reminders),
)
STREAM_RESPONSES.write(snakemake.output.responses, pd.concat([captions, reminders], ignore_index=True))
DETECTIONS.write(snakemake.output.detections, detections)
write_csv(snakemake.output.prf, prf)

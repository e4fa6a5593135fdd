"""Rule socialomni_stream_when: a registry model streamed through the every-second "speak now?" protocol."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

import pandas as pd

from omnisocial.models.registry import build_backend
from omnisocial.models.runner import FailurePolicy
from omnisocial.socialomni.contracts import WHEN_STREAM_ITEMS, WHEN_STREAM_RESPONSES
from omnisocial.socialomni.runs import model_modality
from omnisocial.socialomni.stream import BENCHMARK, stream_items, when_protocol, when_stream_responses
from omnisocial.streaming import STREAM_STEPS, STREAM_SUMMARY, stream
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
entry = dict(params.entry)
modality = model_modality(entry)
items = WHEN_STREAM_ITEMS.read(snakemake.input.when_stream_items)
streamed = stream_items(items, params.root, float(params.step_s))
window = None if params.window_s is None else float(params.window_s)
run = stream(
    build_backend(entry),
    streamed,
    when_protocol(modality, params.parser, window),
    modality=modality,
    segments_root=params.segments_root,
    cache_path=params.cache,
    entry=entry,
    benchmark=BENCHMARK,
    policy=FailurePolicy.from_config(params.failure_policy),
)
STREAM_STEPS.write(snakemake.output.steps, run.steps)
WHEN_STREAM_RESPONSES.write(
    snakemake.output.responses, when_stream_responses(entry["name"], run.steps, items)
)
STREAM_SUMMARY.write(snakemake.output.summary, pd.DataFrame([run.summary]))

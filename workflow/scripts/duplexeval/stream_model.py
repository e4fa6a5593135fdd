"""Rule duplexeval_stream_model: a registry model streamed through RTD and PR into released response files."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.duplexeval.contracts import STREAM_ITEMS, STREAM_RESPONSES
from omnisocial.duplexeval.importers import load_stream_responses
from omnisocial.duplexeval.streamed import DUPLEX_STREAM_STEPS, StreamFailed, stream_model, video_seconds
from omnisocial.models.registry import build_backend
from omnisocial.models.runner import FailurePolicy
from omnisocial.streaming import STREAM_SUMMARY
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
entry = dict(params.entry)
items = STREAM_ITEMS.read(snakemake.input.stream_items)
folder = Path(snakemake.output.folder)
folder.mkdir(parents=True, exist_ok=True)
backend = build_backend(entry)
try:
    steps, summaries, failed = stream_model(
        backend,
        entry,
        items,
        params.root,
        folder,
        step_s=float(params.step_s),
        window_s=params.window_s,
        segments_root=params.segments_root,
        cache_path=params.cache,
        policy=FailurePolicy.from_config(params.failure_policy),
        probe=video_seconds,
        progress=True,  # as the model jobs: a progress line in the job's log
    )
finally:
    close = getattr(backend, "close", None)
    if callable(close):
        close()
if failed:  # a partial response would be scored as a silent one: no outputs, the cache keeps every answer
    raise StreamFailed(
        f"{entry['name']}: {len(failed)} item streams failed ({', '.join(failed)}); rerun to resume"
    )
# the files are read back by the released reader: scored exactly like imported responses
responses = load_stream_responses(folder, items, model=entry["name"])
STREAM_RESPONSES.write(snakemake.output.responses, responses)
DUPLEX_STREAM_STEPS.write(snakemake.output.steps, steps)
STREAM_SUMMARY.write(snakemake.output.summary, summaries)
log.info("%s: %d sentences in %d response files", entry["name"], len(responses), len(items))

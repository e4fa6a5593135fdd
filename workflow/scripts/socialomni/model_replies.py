"""Rule socialomni_model_replies: one registry model run (full input or an ablation) on the social items."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.models.registry import build_backend
from omnisocial.models.runner import FailurePolicy, run_inference
from omnisocial.socialomni.contracts import REPLIES, WHEN_ITEMS, WHO_ITEMS
from omnisocial.socialomni.requests import replies_from_results, social_requests
from omnisocial.socialomni.runs import run_modality, run_name
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
entry = dict(params.entry)
ablation = params.ablation or None
run = run_name(entry["name"], ablation)
requests = social_requests(
    entry,
    WHO_ITEMS.read(snakemake.input.who_items),
    WHEN_ITEMS.read(snakemake.input.when_items),
    params.media_root,
    include_asr=bool(params.include_asr),
    ablation=ablation,
)
if requests:
    policy = FailurePolicy.from_config(params.failure_policy)
    results = run_inference(
        build_backend(entry), [request for _, _, request in requests], params.cache, policy=policy
    )
    replies = replies_from_results(run, run_modality(entry, ablation), requests, results)
else:
    replies = REPLIES.empty()
log.info("%s: %d replies, %d failed", run, len(replies), int((~replies["ok"]).sum()))
REPLIES.write(snakemake.output.replies, replies)

"""Rule duplexeval_llm_judge: one LLM judge (a registry entry) on the streaming responses, resumably."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.duplexeval.contracts import STREAM_ITEMS, STREAM_RESPONSES
from omnisocial.duplexeval.judge_requests import judge_specs
from omnisocial.judges.llm import LLM_JUDGE_REPLIES, run_judge, stream_jobs
from omnisocial.models.runner import FailurePolicy
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
responses = STREAM_RESPONSES.validate(
    pd.concat(
        [
            STREAM_RESPONSES.read(snakemake.input.baselines),
            STREAM_RESPONSES.read(snakemake.input.imported),
            *(STREAM_RESPONSES.read(path) for path in snakemake.input.streamed),  # streamed models
        ],
        ignore_index=True,
    )
)
specs = judge_specs(
    list(params.tasks),
    responses,
    STREAM_ITEMS.read(snakemake.input.stream_items),
    params.root,
    fps=float(params.judge_fps),
)
jobs = stream_jobs(specs, params.entry, params.frames)
table = run_judge(params.entry, jobs, params.cache, FailurePolicy.from_config(params.failure_policy))
LLM_JUDGE_REPLIES.write(snakemake.output.replies, table)

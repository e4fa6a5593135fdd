"""Rule socialomni_llm_judge: one LLM judge (a registry entry) on the how candidates, resumably."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.judges.llm import LLM_JUDGE_REPLIES, how_jobs, run_judge
from omnisocial.models.runner import FailurePolicy
from omnisocial.socialomni.contracts import HOW_REFERENCES, REPLIES, answered
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
replies = pd.concat([REPLIES.read(path) for path in snakemake.input.replies], ignore_index=True)
jobs = how_jobs(answered(replies, "how"), HOW_REFERENCES.read(snakemake.input.references))
table = run_judge(params.entry, jobs, params.cache, FailurePolicy.from_config(params.failure_policy))
LLM_JUDGE_REPLIES.write(snakemake.output.replies, table)

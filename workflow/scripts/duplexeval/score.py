"""Rule duplexeval_score: real-time description and reminder scores with offline judges."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.duplexeval.agreement import STREAM_JUDGE_AGREEMENT, stream_judge_agreement
from omnisocial.duplexeval.contracts import (
    PR_EVENT_SCORES,
    PR_SCORES,
    RTD_SCORES,
    RTD_SENTENCES,
    STREAM_EVENTS,
    STREAM_ITEMS,
    STREAM_RESPONSES,
)
from omnisocial.duplexeval.description import score_rtd
from omnisocial.duplexeval.judged import judge_split_metrics, score_judge_runs
from omnisocial.duplexeval.metrics import stream_step_counts, streaming_metrics
from omnisocial.duplexeval.reminders import reminder_judge, score_pr
from omnisocial.duplexeval.streamed import DUPLEX_STREAM_STEPS
from omnisocial.importing import concat_frames
from omnisocial.io import write_csv
from omnisocial.judges.embedding import EmbeddingJudge
from omnisocial.judges.lexical import keyword_match
from omnisocial.judges.replies import LLM_JUDGE_REPLIES
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
items = STREAM_ITEMS.read(snakemake.input.stream_items)
events = STREAM_EVENTS.read(snakemake.input.stream_events)
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
# every streamed model is scored, with or without a sentence (silent or unparsed throughout)
steps = concat_frames(
    [DUPLEX_STREAM_STEPS.read(path) for path in snakemake.input.streamed_steps], DUPLEX_STREAM_STEPS
)
streamed_models = sorted(steps["model"].astype(str).unique())
judge = EmbeddingJudge()
sentences, rtd = score_rtd(
    responses,
    items,
    events,
    judge,
    late_s=list(params.late_s),
    relevance_threshold=float(params.relevance_threshold),
    judge_fps=float(params.judge_fps),
    models=streamed_models,
)
reminders = reminder_judge(judge, params.reminder_judge, float(params.keyword_share), keyword_match)
pr_events, pr = score_pr(responses, items, reminders, streamed_models)
metrics = streaming_metrics(rtd, pr, stream_step_counts(steps))
for row in metrics[metrics["split"] == "all"].itertuples():
    log.info(
        "%s: temporal %.1f, content %.1f, reminders %.1f%s",
        row.model,
        row.temporal_100,
        row.content_100,
        row.reminder_100,
        ""
        if pd.isna(row.n_stream_steps)
        else f" ({row.n_stream_steps} steps: {row.n_silent_steps} silent, {row.n_unparsed_steps} unparsed)",
    )
# LLM judges: their replies read by social.parser through duplexeval.judged (as the CLI reads files)
runs = {
    name: LLM_JUDGE_REPLIES.read(path)
    for name, path in zip(params.llm_judges, snakemake.input.llm, strict=True)
}
rtd_judged, pr_judged = score_judge_runs(
    responses, items, runs, params.parser, models=streamed_models, tasks=params.llm_judge_tasks
)
for name, table in runs.items():
    log.info(
        "%s: %d streaming judge calls, %d failed (never scores)", name, len(table), int((~table["ok"]).sum())
    )
agreement = stream_judge_agreement(rtd_judged, pr_judged, rtd, pr)
for row in agreement[agreement["split"] == "all"].itertuples():
    log.info(
        "%s %s: %d judges on %d items, ICC(2,1) %.2f",
        row.task,
        row.model,
        row.n_judges,
        row.n_items,
        row.icc_2_1,
    )
write_csv(snakemake.output.rtd_judges, rtd_judged)
write_csv(snakemake.output.pr_judges, pr_judged)
write_csv(snakemake.output.rtd_judge_metrics, judge_split_metrics(rtd_judged, "rtd"))
write_csv(snakemake.output.pr_judge_metrics, judge_split_metrics(pr_judged, "pr"))
RTD_SENTENCES.write(snakemake.output.sentences, sentences)
RTD_SCORES.write(snakemake.output.rtd, rtd)
PR_EVENT_SCORES.write(snakemake.output.pr_events, pr_events)
PR_SCORES.write(snakemake.output.pr, pr)
write_csv(snakemake.output.metrics, metrics)
STREAM_JUDGE_AGREEMENT.write(snakemake.output.agreement, agreement)

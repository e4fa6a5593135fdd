"""Rule socialomni_judge_how: next utterances judged by the offline judges and the LLM judges' replies."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.io import write_csv
from omnisocial.judges.embedding import EmbeddingJudge
from omnisocial.judges.lexical import LexicalJudge
from omnisocial.judges.replies import LLM_JUDGE_REPLIES
from omnisocial.socialomni.contracts import HOW_JUDGEMENTS, HOW_REFERENCES, REPLIES, WHEN_ITEMS, WHEN_SCORES
from omnisocial.socialomni.how import how_agreement, how_metrics, how_released, judge_how, llm_how_judgements
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
builders = {"embedding": EmbeddingJudge, "lexical": lambda: LexicalJudge(params.lexical_unit)}
judges = {}
for name in params.judges:
    judge = builders[name]()
    judges[judge.name] = judge
replies = pd.concat([REPLIES.read(path) for path in snakemake.input.replies], ignore_index=True)
references = HOW_REFERENCES.read(snakemake.input.references)
when_scores = WHEN_SCORES.read(snakemake.input.when_scores)
runs = {
    name: LLM_JUDGE_REPLIES.read(path)
    for name, path in zip(params.llm_judges, snakemake.input.llm, strict=True)
}
judgements = pd.concat(
    [judge_how(replies, references, judges), llm_how_judgements(replies, references, runs, params.parser)],
    ignore_index=True,
)
judgements = HOW_JUDGEMENTS.validate(judgements)
llm = list(params.llm_judges)
metrics = how_metrics(judgements, when_scores, llm)
released = how_released(
    judgements, replies, when_scores, WHEN_ITEMS.read(snakemake.input.when_items), references, llm
)
released.insert(2, "parser", params.parser)
agreement = how_agreement(judgements)
for row in metrics[metrics["judge"].isin(["all", "llm"])].itertuples():
    log.info(
        "%s %s (%s): mean %.1f with zeros, %.1f without, %d judge calls failed",
        row.scoring,
        row.model,
        row.judge,
        row.mean_with_zeros,
        row.mean_without_zeros,
        row.n_judge_failed,
    )
HOW_JUDGEMENTS.write(snakemake.output.judgements, judgements)
write_csv(snakemake.output.metrics, metrics)
write_csv(snakemake.output.released, released)
write_csv(snakemake.output.agreement, agreement)

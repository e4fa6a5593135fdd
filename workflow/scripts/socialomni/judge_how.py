"""Rule socialomni_judge_how: next utterances judged by the reference-similarity and lexical judges."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.io import write_csv
from omnisocial.judges.embedding import EmbeddingJudge
from omnisocial.judges.lexical import LexicalJudge
from omnisocial.socialomni.contracts import HOW_JUDGEMENTS, HOW_REFERENCES, REPLIES, WHEN_SCORES
from omnisocial.socialomni.how import how_agreement, how_metrics, judge_how
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
builders = {"embedding": EmbeddingJudge, "lexical": lambda: LexicalJudge(params.lexical_unit)}
judges = {}
for name in params.judges:
    judge = builders[name]()
    judges[judge.name] = judge
replies = pd.concat([REPLIES.read(path) for path in snakemake.input.replies], ignore_index=True)
judgements = judge_how(replies, HOW_REFERENCES.read(snakemake.input.references), judges)
metrics = how_metrics(judgements, WHEN_SCORES.read(snakemake.input.when_scores))
agreement = how_agreement(judgements)
for row in metrics[metrics["judge"] == "all"].itertuples():
    log.info(
        "%s %s: mean %.1f with zeros, %.1f without",
        row.scoring,
        row.model,
        row.mean_with_zeros,
        row.mean_without_zeros,
    )
HOW_JUDGEMENTS.write(snakemake.output.judgements, judgements)
write_csv(snakemake.output.metrics, metrics)
write_csv(snakemake.output.agreement, agreement)

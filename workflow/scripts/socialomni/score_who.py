"""Rule socialomni_score_who: who accuracy, breakdowns, confusion matrices and McNemar tests."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.io import write_csv
from omnisocial.socialomni.contracts import (
    ACCURACY_BREAKDOWN,
    REPLIES,
    WHO_COPIES,
    WHO_ITEMS,
    WHO_SCORES,
    WRITTEN_ANSWERS,
)
from omnisocial.socialomni.who import mcnemar_models, score_who_replies
from omnisocial.workflow import start

log = start(snakemake)
items = WHO_ITEMS.read(snakemake.input.who_items)
replies = pd.concat([REPLIES.read(path) for path in snakemake.input.replies], ignore_index=True)
# released mode scores the answers as written and every copy of a duplicated id, as released
written = WRITTEN_ANSWERS.read(snakemake.input.written_answers)
copies = WHO_COPIES.read(snakemake.input.who_copies)
scores = score_who_replies(items, replies, snakemake.params.parser, written, copies)
for row in scores.summary.itertuples():
    log.info("%s (%s): accuracy %.3f over %d items", row.model, row.modality, row.accuracy, row.n)
analysis = scores.breakdown[scores.breakdown["breakdown"] == "analysis"]
for row in analysis.itertuples():  # differs from the above only where a who id repeats
    log.info(
        "%s (%s): the released analysis's accuracy %.3f over %d ids",
        row.model,
        row.modality,
        row.accuracy,
        row.n,
    )
WHO_SCORES.write(snakemake.output.scores, scores.items)
write_csv(snakemake.output.metrics, scores.summary)
ACCURACY_BREAKDOWN.write(snakemake.output.breakdown, scores.breakdown)
write_csv(snakemake.output.confusion, scores.confusion)
write_csv(snakemake.output.mcnemar, mcnemar_models(scores.items))

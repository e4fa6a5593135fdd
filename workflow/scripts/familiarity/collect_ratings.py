"""Rule collect_ratings: the rating experiment's sessions into the exports import_ratings reads."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

import pandas as pd

from omnisocial.familiarity.ratings.collect import collected_exports, sessions_note
from omnisocial.io import write_csv
from omnisocial.workflow import start

log = start(snakemake)
answers, sessions = [], []
for modality, experiment in zip(snakemake.params.modalities, snakemake.input.experiments, strict=True):
    trials, questionnaires, table = collected_exports(snakemake.params.collected, experiment)
    log.info("%s: %d trial rows; %s", modality, len(trials), sessions_note(table))
    write_csv(snakemake.output[modality], trials)
    answers.append(questionnaires)
    sessions.append(table)
write_csv(snakemake.output.covariates, pd.concat(answers, ignore_index=True))
write_csv(snakemake.output.sessions, pd.concat(sessions, ignore_index=True))

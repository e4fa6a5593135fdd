"""Rule collect_ratings: the rating experiment's sessions (its server's data folder, or JATOS
result exports) into the exports import_ratings reads."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

import pandas as pd

from omnisocial.familiarity.ratings.collect import collected_exports, read_counts, sessions_note
from omnisocial.io import write_csv
from omnisocial.workflow import start

log = start(snakemake)
answers, sessions = [], []
for modality, experiment in zip(snakemake.params.modalities, snakemake.input.experiments, strict=True):
    jatos = snakemake.input.get(f"jatos_{modality}")
    if jatos:
        from omnisocial.familiarity.ratings.jatos import jatos_exports

        trials, questionnaires, table = jatos_exports(jatos, experiment)
        where = f"JATOS results {jatos}"
    else:
        collected = Path(snakemake.input.manifest).parent
        trials, questionnaires, table = collected_exports(collected, experiment)
        where = str(collected)
    n_sessions, n_records = read_counts(table)
    log.info("%s: read %d session(s), %d record(s) from %s", modality, n_sessions, n_records, where)
    print(f"collect_ratings {modality}: read {n_sessions} session(s), {n_records} record(s) from {where}")
    log.info("%s: %d trial rows; %s", modality, len(trials), sessions_note(table))
    write_csv(snakemake.output[modality], trials)
    answers.append(questionnaires)
    sessions.append(table)
write_csv(snakemake.output.covariates, pd.concat(answers, ignore_index=True))
write_csv(snakemake.output.sessions, pd.concat(sessions, ignore_index=True))

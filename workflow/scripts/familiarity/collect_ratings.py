"""Rule collect_ratings: the rating experiment's sessions (its server's data folder, or JATOS
result exports) into the exports import_ratings reads."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

import pandas as pd

from omnisocial.familiarity.ratings.collect import collected_exports, read_counts, sessions_note
from omnisocial.familiarity.ratings.frozen import (
    DESIGN_RECORD,
    export_record_path,
    pseudonym_key,
    pseudonymizer,
)
from omnisocial.io import write_csv, write_json
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
# raters are named by the study's pseudonyms; the Prolific ids stay in the collected data
alias = pseudonymizer(pseudonym_key(params.pseudonym_folder) if params.pseudonym_folder else None)
answers, sessions = [], []
for modality, experiment in zip(params.modalities, snakemake.input.experiments, strict=True):
    jatos = snakemake.input.get(f"jatos_{modality}")
    lists = json.loads((Path(experiment) / "lists.json").read_text(encoding="utf-8"))
    if jatos:
        from omnisocial.familiarity.ratings.jatos import jatos_exports

        trials, questionnaires, table = jatos_exports(jatos, experiment, alias)
        where = f"JATOS results {jatos}"
        record = export_record_path(jatos)
    else:
        collected = Path(snakemake.input.manifest).parent
        trials, questionnaires, table = collected_exports(collected, experiment, alias)
        where = str(collected)
        record = collected / modality / DESIGN_RECORD  # the server writes it; older servers did not
    if len(table) and not record.is_file():
        # the design these answers were collected on: the workflow stops on a change of it
        shown = {list_id: [t.get("shown", "") for t in e["trials"]] for list_id, e in lists.items()}
        write_json(record, {"keys": dict(params.design_keys), "lists": shown})
        log.info("%s: recorded the collected design in %s", modality, record)
    n_sessions, n_records = read_counts(table)
    log.info("%s: read %d session(s), %d record(s) from %s", modality, n_sessions, n_records, where)
    print(f"collect_ratings {modality}: read {n_sessions} session(s), {n_records} record(s) from {where}")
    log.info("%s: %d trial rows; %s", modality, len(trials), sessions_note(table))
    write_csv(snakemake.output[modality], trials)
    answers.append(questionnaires)
    sessions.append(table)
write_csv(snakemake.output.covariates, pd.concat(answers, ignore_index=True))
write_csv(snakemake.output.sessions, pd.concat(sessions, ignore_index=True))

"""Rule ingest_corpus: read a Seamless-layout corpus into the interactions contract."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.familiarity.contracts import INTERACTIONS, SEGMENTS, SPEECH
from omnisocial.familiarity.corpus.seamless import ingest
from omnisocial.workflow import start

log = start(snakemake)
p = snakemake.params
interactions, segments, speech = ingest(
    Path(snakemake.input.corpus),
    label=p.label,
    gender_table=Path(p.gender_table) if p.gender_table else None,
    interactions_csv=p.interactions_csv or None,
    relationships_csv=p.relationships_csv or None,
    participants_csv=p.participants_csv or None,
    shard_dir=p.shard_dir or None,
)
if p.missing_transcript == "exclude":
    without = interactions["ingest_ok"] & ~interactions["has_transcript"]
    interactions.loc[without, "ingest_ok"] = False
    interactions.loc[without, "ingest_reason"] = "no transcript (corpus.missing_transcript: exclude)"
log.info(
    "%d interactions, %d usable, %d without transcript",
    len(interactions),
    int(interactions["ingest_ok"].sum()),
    int((~interactions["has_transcript"]).sum()),
)
INTERACTIONS.write(snakemake.output.interactions, interactions)
SEGMENTS.write(snakemake.output.segments, segments)
SPEECH.write(snakemake.output.speech, speech)

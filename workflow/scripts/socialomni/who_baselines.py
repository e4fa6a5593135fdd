"""Rule socialomni_who_baselines: panel-motion and chance replies to the who items."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.socialomni.baselines import who_chance_replies, who_signal_replies
from omnisocial.socialomni.contracts import PANELS, REPLIES, WHO_EVIDENCE, WHO_ITEMS
from omnisocial.workflow import start

log = start(snakemake)
params = snakemake.params
items = WHO_ITEMS.read(snakemake.input.who_items)
panels = PANELS.read(snakemake.input.panels)
signal, evidence = who_signal_replies(
    items, panels, params.root, float(params.who["panel_fps"]), float(params.who["min_motion"]), params.seed
)
if panels.empty:
    log.info("no screen panels (released data): only the chance baseline answers who items")
log.info(
    "panel motion answered %d of %d items; speaker right on %d, drawn at random on %d",
    len(signal),
    len(items),
    int((evidence["speaker"] == evidence["true_speaker"]).sum()),
    int(evidence["fallback"].sum()),
)
REPLIES.write(snakemake.output.replies, pd.concat([signal, who_chance_replies(items, params.seed)]))
WHO_EVIDENCE.write(snakemake.output.evidence, evidence)

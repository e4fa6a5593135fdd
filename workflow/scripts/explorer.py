"""Rule explorer: the run's results explorer (omnisocial.explorer; docs/explorer.md), every
item of every benchmark the run has beside its stimulus, the truth and every answer."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

from omnisocial.explorer import write_explorer, write_link_page
from omnisocial.workflow import start

log = start(snakemake)
inputs = dict(snakemake.input.items())
params = snakemake.params


def own(prefix: str, names: list[str]) -> dict:
    """A benchmark's inputs (the rule names them with its prefix: fam_, so_, de_)."""
    return {name: inputs[prefix + name] for name in names if prefix + name in inputs}


items = []
if params.familiarity:
    from omnisocial.familiarity import explorer as familiarity

    items += familiarity.explorer_items(own("fam_", params.familiarity))
if params.socialomni:
    from omnisocial.socialomni import explorer as socialomni

    items += socialomni.explorer_items(own("so_", params.socialomni), params.socialomni_root)
if params.duplexeval:
    from omnisocial.duplexeval import explorer as duplexeval

    items += duplexeval.explorer_items(own("de_", params.duplexeval), params.duplexeval_root)
counts = write_explorer(items, snakemake.output.folder, title=params.title)
write_link_page(snakemake.output.link, snakemake.output.folder, counts)
log.info("explorer: %s", counts)
for missing in counts["missing"]:
    log.warning("stimulus missing, left out of its item: %s", missing)

"""Rules paper_*: a benchmark's numbers.tex, numbers.json and results.md (omnisocial.paper)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

from omnisocial.paper import build_paper, write_paper
from omnisocial.summary import read_optional
from omnisocial.workflow import start

log = start(snakemake)
tables = {name: read_optional(path) for name, path in snakemake.input.items()}
paper = build_paper(snakemake.params.benchmark, dict(snakemake.params.config), tables)
paths = write_paper(paper, Path(snakemake.output.tex).parent)
flagged = sum(bool(number.flag) for number in paper.numbers)
missing = sum(bool(number.missing) for number in paper.numbers)
log.info(
    "%s: %d numbers (%d flagged, %d n/a); wrote %s",
    snakemake.params.benchmark,
    len(paper.numbers),
    flagged,
    missing,
    ", ".join(map(str, paths)),
)

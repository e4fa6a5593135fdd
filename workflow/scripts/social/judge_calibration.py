"""Rule social_judge_calibration: Spearman between judge scores and human scores."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

from omnisocial.io import read_csv_strings
from omnisocial.judges.calibration import HUMAN_SCORES, JUDGE_CALIBRATION, calibrate_judges
from omnisocial.workflow import start

log = start(snakemake)
table = calibrate_judges(
    HUMAN_SCORES.read(snakemake.input.human),
    read_csv_strings(snakemake.input.how),
    read_csv_strings(snakemake.input.rtd),
)
log.info("%d (task, judge) calibrations", len(table))
JUDGE_CALIBRATION.write(snakemake.output.calibration, table)

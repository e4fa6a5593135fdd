"""Rule social_judge_calibration: Spearman between judge scores and human scores."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[2] / "src"))

import pandas as pd

from omnisocial.io import read_csv_strings
from omnisocial.judges.calibration import HUMAN_SCORES, JUDGE_CALIBRATION, calibrate_judges
from omnisocial.workflow import start

log = start(snakemake)
table = calibrate_judges(
    HUMAN_SCORES.read(snakemake.input.human),
    read_csv_strings(snakemake.input.how),
    pd.concat(
        [read_csv_strings(snakemake.input.rtd), read_csv_strings(snakemake.input.rtd_judges)],
        ignore_index=True,
    ),
    pd.concat(
        [read_csv_strings(snakemake.input.pr), read_csv_strings(snakemake.input.pr_judges)],
        ignore_index=True,
    ),
)
log.info("%d (task, judge) calibrations", len(table))
JUDGE_CALIBRATION.write(snakemake.output.calibration, table)

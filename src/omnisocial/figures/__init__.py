"""Figures of the familiarity study, one module per family (tables in, PNG + PDF out).

- `accuracy.accuracy_figure`: accuracy by modality (raters, crowd, models, Wilson intervals);
- `sdt.sdt_figure`: d' against c for raters, crowd and models;
- `crowds.crowd_figure`: majority-vote accuracy against crowd size, per modality;
- `difficulty.difficulty_figure` (+ `dyad_accuracy`, `from_rasch`): dyad difficulty across
  modalities and between humans and models;
- `glmm.glmm_contrast_figure`: GLMM modality contrasts with 95% HDIs and P(> 0);
- `calibration.calibration_figure` (+ `calibration.reliability_table`): reliability diagrams;
- `power.power_figure`: dyads needed against effect size (McNemar, TOST).

Every function takes DataFrames (never paths to read), a path stem to write
`<stem>.png` and `<stem>.pdf` to (via `style.save_figure`, atomic and byte-reproducible), and
title / subtitle / caption text. `simulated=None` flags simulated inputs automatically from a
`source` column mentioning "simulated"; the subtitle then says so.
"""

from omnisocial.figures.accuracy import accuracy_figure
from omnisocial.figures.calibration import calibration_figure, reliability_table
from omnisocial.figures.crowds import crowd_figure
from omnisocial.figures.difficulty import difficulty_figure, dyad_accuracy, from_rasch
from omnisocial.figures.glmm import glmm_contrast_figure
from omnisocial.figures.power import power_figure
from omnisocial.figures.sdt import sdt_figure
from omnisocial.figures.style import save_figure

__all__ = [
    "accuracy_figure",
    "calibration_figure",
    "crowd_figure",
    "difficulty_figure",
    "dyad_accuracy",
    "from_rasch",
    "glmm_contrast_figure",
    "power_figure",
    "reliability_table",
    "save_figure",
    "sdt_figure",
]

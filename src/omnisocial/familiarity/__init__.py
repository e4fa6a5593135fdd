"""Glue of the familiarity study (benchmarks.md section 1): stimuli -> models and people -> statistics.

The workflow scripts `workflow/scripts/fam_*.py` each call one function of these modules;
the statistics, models and figures themselves live in `omnisocial.stats`, `omnisocial.models`,
`omnisocial.familiarity.ratings` and `omnisocial.figures`. The glue is split by stage so that each rule's
conda env holds only what its stage imports (tests/test_envs.py follows imports):

- `contracts`: the data contract of every table these stages write;
- `inference`: inference requests from the stimuli manifest and the design, run results into
  PREDICTIONS and RESPONSES, behavioural features and the offline baselines;
- `ratings`: the planned-missing rating design, the simulated panel, the survey import;
- `analysis`: scoring, paired tests, power, individual differences, GLMM and Rasch tables;
- `figures`: the inputs of each figure family and the call that draws it.

This `__init__` imports nothing on purpose (see above).
"""

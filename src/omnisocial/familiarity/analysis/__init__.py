"""Statistics of the familiarity study into tables (docs/statistics.md).

Inputs are the model PREDICTIONS (every `{name}@{variant}` of the registry, and the registry's
and offline baselines, each once without a variant), the human trials (`RATED_TRIALS`, with
their `source`) and the design (the truth).
Each function returns a dict of tables named like the files the workflow writes. One module
per stage: `inputs`, `scoring` (rule score_familiarity), `rater_tests` (rule rater_tests) and
`glmm_rasch` (rules glmm and rasch); their names are re-exported here.

Choices made here (the published analysis leaves them open):

- humans: every rater is scored as a 'model' named by rater id (rater_type `human`), and the
  majority vote per modality and dyad as `human_majority` (rater_type `crowd`; ties broken by a
  coin seeded with `analysis.seed`, the tie record is in majority_votes.csv);
- the best model of a modality (for the McNemar and TOST comparison with the crowd) is the
  model with the highest accuracy counting non-answers as wrong (a model cannot win by refusing),
  ties broken by accuracy on answered items, then name. It is chosen on the same dyads it is
  tested on, so its comparison with the crowd is optimistic for the model;
- paired tests (McNemar, TOST, prompt sensitivity) use the dyads both raters answered: a
  non-answer is left out of the pair, like accuracy is on answered items;
- modality pairs are tested within every model (each prompt variant its own model) and within
  the crowd, paired on dyads;
- TOST uses the `analysis.tost_method` interval (Tango's score interval by default: its exact
  type-I error stays near alpha, 0.048 at 96 dyads but 0.053 at 60 and 0.057 at 200 for alpha
  0.05 and the margin 0.1, where the Wald and Agresti-Min intervals reach 0.08-0.14 at the
  small discordance of prompt variants of one model, and it is finite without discordant
  dyads); power.csv states the exact size at the design's number of dyads (tost_size_design);
- calibration covers models only (the crowd's vote share is not a stated confidence);
- Rasch: dyad difficulty per modality for humans (persons = raters) and for models (persons =
  every model@variant and baseline that answered in that modality; answered predictions only),
  each fit's person abilities (posterior means, 95% HDIs, the difficulties' scale) in rasch_persons;
  the per-dyad human accuracy is the share of raters who were right, the model accuracy the
  mean over the models' answered predictions; partial correlations control for the true class
  by correlating the residuals after removing each class's mean (n - 3 degrees of freedom);
- correlations of Rasch difficulties (across modalities; humans vs models) are reported raw
  (between posterior means, which shrinkage and noise attenuate) and corrected for
  attenuation, r / sqrt(rel_x rel_y) capped at +/- 1, with each fit's EAP reliability
  (`omnisocial.stats.reliability`) from the posterior SDs of the relative difficulties
  (`sd_relative`: b_i minus the fit's mean difficulty; the fits' hierarchical prior on the
  difficulties, `omnisocial.stats.rasch`, makes that reliability right); the accuracy
  measure uses the binomial sampling variance
  of the per-dyad shares. The p-values are those of the raw correlations;
- "crowd accuracy" per dyad in the Rasch tables is the share of the raters who were right,
  not the majority vote (the majority vote is the `human_majority` rater of the other tables);
- a model's rows say where its predictions came from (`source`): "model inference" for the
  registry models and baselines run here, "release" for a release's predictions (the scripts
  pass `released_sources`); a row over several models joins them;
- Holm's correction runs over each family of paired tests: the McNemar rows, and the TOST
  rows, of one comparison kind (best model vs crowd; modality pairs), beside the raw p-values.
"""

from omnisocial.familiarity.analysis.glmm_rasch import (  # noqa: F401
    _correlation,
    _responses,
    corrected_partial,
    glmm_tables,
    partial_correlation,
    rasch_tables,
)
from omnisocial.familiarity.analysis.inputs import (  # noqa: F401
    _correct,
    _trials,
    human_source,
    joined_sources,
    model_predictions,
    model_sources,
    released_sources,
)
from omnisocial.familiarity.analysis.rater_tests import (  # noqa: F401
    _pair,
    best_models,
    comparisons,
    paired_tests,
    power_analysis,
    rater_tests,
)
from omnisocial.familiarity.analysis.scoring import (  # noqa: F401
    _accuracy,
    _sourced,
    calibration_table,
    crowd_sizes,
    human_predictions,
    prompt_sensitivity,
    rater_types,
    score_familiarity,
)

"""Human ratings of the familiarity study: design, import, simulated panel.

The specification: docs/benchmarks/familiarity.md#ratings.

One module per stage: `design` (blocks, rater assignments, survey lists; `rating_design` for
the rule), `frozen` (what each answer showed, the collected design and its stop on a change,
raters' pseudonyms), `importing` (survey exports and questionnaires), `differences` (rater covariates),
`simulate` (the demo's simulated panel; `simulate_exports` for the rule) and `panel` (the
rule import_ratings: exports of the configured `ratings.source` into trials). The names below
are re-exported here.

Three separate experiments, one per modality. The planned-missing design splits the sampled
dyads into blocks; every rater rates `blocks_per_rater` blocks (6 blocks of 16 and 2 blocks per
rater: 32 of 96 dyads), so about 90 raters give every dyad 30 ratings.

Design
------
- `block_design`: every design cell's dyads are shuffled (seeded) and dealt round-robin over the
  blocks. The deal runs on from cell to cell, cells taken by relationship then cell name, so
  every block holds every cell within one dyad, the blocks' sizes differ by at most one, and
  so do their numbers of familiar and of stranger dyads. Within a cell the shuffled dyads are
  dealt early clips first, so clip positions spread over blocks too.
- `rater_assignments`: raters are dealt the C(n_blocks, blocks_per_rater) block combinations in
  cycles; a full cycle uses every combination once, so after each full cycle every block (and
  so every dyad) has the same number of raters. For pairs of an even number of blocks a cycle
  is a round-robin schedule (the "circle method"): n_blocks - 1 rounds of n_blocks / 2 disjoint
  pairs, so after each round every block has one more rater and at any point the raters per
  dyad differ by at most one. Otherwise each rater takes the unused combination whose blocks
  have the fewest raters (seeded ties), and the spread never exceeds one cycle's worth
  (`blocks_per_rater * C(n_blocks, blocks_per_rater) / n_blocks`).
- `survey_table` / `survey_lists` / `write_survey_lists`: one list per rater and modality, the
  rater's dyads in an order drawn from `numpy.random.default_rng([seed, crc32(modality),
  crc32(rater_id)])`, so a rater's order does not change when other raters are added; written
  as `{surveys_dir}/{modality}/{rater_id}.csv` with columns order, dyad_id, stimulus.

Import
------
`import_ratings` reads one survey export (CSV, TSV, JSON, JSON lines or parquet, one per
experiment) through a column mapping (`DEFAULT_MAPPING` lists every key). Long exports hold
one row per trial; wide exports (`wide: true`) one row per rater and one column per dyad
named by `column_pattern`, where `{dyad_id}` stands for the dyad id (a blank cell there is a
dyad the rater was not shown: the planned-missing design, counted as `not_shown`, not as an
exclusion). Every column matching the pattern is an answer column, except the rater id,
`require` and `ignore_columns` columns, so a matching column of an unknown dyad (e.g.
`D999_rating`) shows up as `unknown_dyad`. Every trial of the export lands in exactly one
row of the import report (`IMPORT_REPORT`), checked in this order:

  not_shown         wide exports only: a blank cell;
  filtered          the row fails a `require` condition (e.g. Finished must be True);
  practice          a practice / attention-check stimulus listed in `practice_dyads` (as the
                    dyad column writes it, or as the dyad id after `dyad_pattern`);
  unanswered        the `answered_column` says false: a trial of a rater's list that an
                    incomplete session never reached (the rating experiment's exports);
  no_consent        the `exclude_column` says so: an answer stored for a session that had not
                    given consent, or had declined it (never imported, not lost);
  playback_flagged  the `exclude_column` says so: a clip played faster than real time or
                    seeked (an answer given, not imported, not counted as lost);
  missing_rater_id  blank rater id;
  unknown_dyad      the dyad id (after `dyad_pattern`) is blank or not in the design truth;
  empty_response    blank response (long exports), or a value listed in `empty_values`;
  invalid_response  a response that is none of `response_values` (matched trimmed and
                    case-insensitively);
  duplicate         another valid rating of the same (rater, dyad) with the same answer as
                    the kept one (`keep`: the first valid rating in file order, or the last);
  conflict          another valid rating of the same (rater, dyad) with a different answer;
                    `keep: error` raises on any repeated pair instead;
  imported          the trials returned.

The report lists only the reasons that can apply to the export (`applicable_reasons`: no
`not_shown` for a long export, no `filtered` without `require`, ...); its examples name the
trial as "row N" in CSV / TSV (header = row 1, a spreadsheet's numbering) and "record N"
(from 1) in JSON, JSON lines and parquet, with the answer column of a wide export.

Nothing is dropped silently. `missing_rater_id`, `unknown_dyad`, `invalid_response` and
`conflict` lose an answer someone gave (`LOST_REASONS`, the report's `lost` column); the
others are expected (the design, the study's filters, a rater's non-answer, a repeat).
`check_losses` (run by `import_panel`) fails when a modality's lost trials exceed
`ratings.max_lost_share` (default 0) of its trials other than not_shown / filtered /
practice / unanswered, and always when a modality imported no trial; its message gives the reason
counts and the first example of each. A mapping that names a column the export lacks (a
configuration error) raises ValueError naming it.

Rater covariates and individual differences
-------------------------------------------
`import_covariates` scores questionnaire scales (mean of the answered items after
reverse-keying, NaN when fewer than `min_items` were answered) and copies single items.
`individual_differences` relates every covariate to each rater's accuracy, d' and c
(`stats.crowds.per_rater_sdt`), per modality: Pearson and Spearman r with p-values on the raters
with both values. It adds one OLS (statsmodels) of per-rater accuracy on all covariates together
with modality fixed effects (intercept plus a dummy per non-reference modality), listwise
complete raters; standard errors are HC3 when every rater is in one experiment and clustered by
rater when a rater appears in several.

Simulated panel (demo)
----------------------
`simulate_panel` draws a rater panel from a logistic model and writes it as survey exports in
the shape `SIMULATED_MAPPING` reads, then imports them, so the import path runs end to end.
For rater r, dyad d with truth y (+1 familiar, -1 stranger) in modality m:

    P(response "familiar") = logistic(y * (mu_m + skill_r - difficulty_d - difficulty_dm) - bias_r)

so P(correct) = logistic(mu_m + skill_r - difficulty_d -/+ bias_r) and bias_r > 0 leans toward
"stranger" (c > 0). skill ~ N(0, skill_sd), bias ~ N(0, bias_sd), difficulty_d ~ N(0, dyad_sd)
shared by the modalities, difficulty_dm ~ N(0, dyad_modality_sd). A rater id is one person
across modalities. The questionnaire's latent trait is covariate_r * skill / skill_sd +
sqrt(1 - covariate_r^2) * noise; the social information processing items (1-7, the last one
reverse-keyed) load on it, the cue-use items (1-5) are unrelated. Every output carries
`SIMULATED_LABEL` in a `source` column, and written files have `simulated` in their names.
"""

from omnisocial.familiarity.ratings.design import (
    ASSIGNMENTS,
    BLOCKS,
    MODALITIES,
    RATER_PREFIX,
    STIMULUS_PATTERNS,
    SURVEY_LIST,
    SURVEY_TABLE,
    RatingDesign,
    assignments_by_modality,
    block_design,
    rater_assignments,
    raters_per_dyad,
    rating_design,
    survey_lists,
    survey_table,
    write_survey_lists,
)
from omnisocial.familiarity.ratings.differences import (
    DIFFERENCE_COLUMNS,
    individual_differences,
)
from omnisocial.familiarity.ratings.importing import (
    DEFAULT_MAPPING,
    IMPORT_REPORT,
    KEEP_RULES,
    LOST_REASONS,
    REASONS,
    ImportLossError,
    applicable_reasons,
    check_losses,
    import_covariates,
    import_experiments,
    import_ratings,
    loss_summary,
)
from omnisocial.familiarity.ratings.panel import (
    SOURCED_IMPORT_REPORT,
    SOURCES,
    covariate_mapping,
    export_plan,
    import_mapping,
    import_panel,
    raters_vs_plan,
    read_covariates,
    source_label,
)
from omnisocial.familiarity.ratings.simulate import (
    DEFAULT_PANEL_PARAMS,
    SIMULATED_COVARIATE_MAPPING,
    SIMULATED_MAPPING,
    simulate_exports,
    simulate_panel,
)
from omnisocial.tables import SIMULATED_LABEL

__all__ = [
    "ASSIGNMENTS",
    "BLOCKS",
    "DEFAULT_MAPPING",
    "DEFAULT_PANEL_PARAMS",
    "DIFFERENCE_COLUMNS",
    "IMPORT_REPORT",
    "ImportLossError",
    "KEEP_RULES",
    "LOST_REASONS",
    "MODALITIES",
    "RATER_PREFIX",
    "REASONS",
    "RatingDesign",
    "SIMULATED_COVARIATE_MAPPING",
    "SIMULATED_LABEL",
    "SIMULATED_MAPPING",
    "SOURCED_IMPORT_REPORT",
    "SOURCES",
    "STIMULUS_PATTERNS",
    "SURVEY_LIST",
    "SURVEY_TABLE",
    "applicable_reasons",
    "assignments_by_modality",
    "block_design",
    "check_losses",
    "covariate_mapping",
    "export_plan",
    "import_covariates",
    "import_experiments",
    "import_mapping",
    "import_panel",
    "import_ratings",
    "loss_summary",
    "individual_differences",
    "rater_assignments",
    "raters_vs_plan",
    "raters_per_dyad",
    "rating_design",
    "read_covariates",
    "simulate_exports",
    "simulate_panel",
    "source_label",
    "survey_lists",
    "survey_table",
    "write_survey_lists",
]

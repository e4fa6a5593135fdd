"""Statistics of the familiarity study (docs/statistics.md).

Modules:

- `sdt`: accuracy, Wilson interval, exact binomial test, signal detection (d', c),
  scoring of a PREDICTIONS table into a METRICS table, non-answer sensitivity, and the
  conversion of human TRIALS into per-rater and majority-vote predictions;
- `tests`: exact McNemar test, TOST equivalence of paired accuracies (Tango score interval by
  default), exact power and sample sizes, Holm's correction;
- `crowds`: crowd-size curve of the human majority vote, per-rater signal detection;
- `calibration`: expected calibration error, reliability bins, AUROC from confidence, their
  bootstrap intervals and the ECE of a perfectly calibrated model;
- `reliability`: reliability of estimates and correlations corrected for attenuation;
- `glmm`, `rasch`: Bayesian crossed random-effects GLMM and Rasch-style item difficulty.

"familiar" is the signal class throughout.
"""

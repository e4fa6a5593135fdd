"""The estimators and tests every benchmark scores with (docs/statistics.md).

This layer knows tables of answers and truths, not benchmarks: the familiarity study
(`familiarity.analysis`), SocialOmni who/when (`socialomni`) and Omni-DuplexEval
(`duplexeval`) call it, and it imports none of them.

Modules:

- `sdt`: accuracy, Wilson interval, exact binomial test, signal detection (d', c),
  scoring of a PREDICTIONS table into a METRICS table, non-answer sensitivity, and the
  conversion of human TRIALS into per-rater and majority-vote predictions;
- `tolerance`: tolerance-window precision / recall / F1 of predicted against true event times
  (SocialOmni streaming when, the Omni-DuplexEval detector baseline);
- `convergence`: the convergence targets every Bayesian fit is checked against;
- `tests`: exact McNemar test (also who's paired model comparisons), TOST equivalence of
  paired accuracies (Tango score interval by default), exact power and sample sizes, Holm's
  correction;
- `crowds`: crowd-size curve of the human majority vote, per-rater signal detection;
- `calibration`: expected calibration error, reliability bins, AUROC from confidence, their
  bootstrap intervals and the ECE of a perfectly calibrated model;
- `reliability`: reliability of estimates and correlations corrected for attenuation;
- `glmm`, `rasch`: Bayesian crossed random-effects GLMM and Rasch-style item difficulty.

In the familiarity study's signal detection "familiar" is the signal class.
"""

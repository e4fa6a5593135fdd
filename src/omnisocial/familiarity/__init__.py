"""The familiarity study (docs/benchmarks/familiarity.md), split by stage like its rules.

Stages, in workflow order (rules in workflow/rules/familiarity/*.smk, thin adapters in
workflow/scripts/familiarity/<rule>.py that each call one function here):

- `corpus` (`corpus.seamless` ingest, `corpus.demo` the demo generator), `asr`, `transcripts`;
- `signals` (stream durations, speech, sync), `turns`, `intervals` (interval unions, used by
  these stages only);
- `filters` (F1-F5 and the prompt audit), `clips` (clip candidates), `sampling` (the design),
  `stimuli` (text, audio and video renders);
- `inference` (requests, run results, behavioural features and the offline baselines);
- `ratings` (design, survey import, the simulated panel, rater differences);
- `analysis` (scoring, rater tests, GLMM and Rasch tables), `figures` (one module per family),
  `contracts` (the data contract of every table these stages write).

The package uses only the shared layers (`omnisocial.media`, `models`, `stats`,
`figures.style`, `tables`, `io`, `config`, `workflow`, `prompt_templates`); each rule's conda
env holds only what its stage imports (tests/test_envs.py follows imports), so this `__init__`
imports nothing on purpose.
"""

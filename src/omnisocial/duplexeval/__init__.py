"""Omni-DuplexEval-style benchmark: streaming real-time description ("rtd") and proactive reminders ("pr").

Implements the exactly-specified parts of docs/benchmarks/duplexeval.md, split by stage:

- `importers`: readers for the released items (JSON, CSV, parquet, `datasets` folders) and
  per-item streaming response files, each sentence read with its released scorer's keys;
- `contracts`: the table contracts of items, responses, events and scores;
- `demo`: the generated visual-event demo clips in the released format;
- `baselines`: delayed ground-truth captions and a frame-difference event detector;
- `description`: judge windows, frame times, temporal sensitivity, irrelevant-duration
  ratio and the text-judge rtd scorer;
- `reminders`: reminder windows and the pr scorer;
- `metrics`: per model and split summaries;
- `figures`: the streaming figure.
- `judged`: judge replies made elsewhere parsed as released (or `strict`) and re-scored
  without any API, per item and per split;
- `cli`: `omnisocial duplexeval rtd|pr ITEMS RESPONSES_DIR --judge-replies JUDGED -o METRICS`.

Judge calibration against human scores spans both benchmarks and lives in
`omnisocial.judges.calibration`. Shared layers only; nothing of `omnisocial.socialomni`.
"""

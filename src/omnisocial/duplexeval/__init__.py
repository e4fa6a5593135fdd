"""Omni-DuplexEval-style benchmark: streaming real-time description ("rtd") and proactive reminders ("pr").

Implements the exactly-specified parts of benchmarks.md section 3, split by stage:

- `importers`: readers for the released items and per-item streaming response files;
- `contracts`: the table contracts of items, responses, events and scores;
- `demo`: the generated visual-event demo clips in the released format;
- `baselines`: delayed ground-truth captions and a frame-difference event detector;
- `description`: judge windows, frame times, temporal sensitivity, irrelevant-duration
  ratio and the text-judge rtd scorer;
- `reminders`: reminder windows and the pr scorer;
- `metrics`: per model and split summaries;
- `figures`: the streaming figure.

Judge calibration against human scores spans both benchmarks and lives in
`omnisocial.judges.calibration`. Shared layers only; nothing of `omnisocial.socialomni`.
"""

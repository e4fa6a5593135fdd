"""Who / when / how in multi-party dialogue and streaming real-time behaviour.

Implements the exactly-specified parts of benchmarks.md sections 2 (SocialOmni-style)
and 3 (Omni-DuplexEval-style):

- `importers`: readers for the released SocialOmni level-1 / level-2 files, the
  Omni-DuplexEval items (JSON or CSV) and per-item streaming response files, with
  strict errors that name file, item and field (or an error table when collecting);
- `contracts`: the table contracts of those items, responses and scores;
- `who`: letter extraction, the who-MCQ scorer, McNemar between models, prompts per
  modality and a builder of factorial 4-way items for new corpora;
- `when`: the released single-cut YES/NO scorer and the streaming turn-taking protocol
  (response time, offset labels, on-time/early/late rates, tolerance-window P/R/F1,
  the silence (VAD end-of-turn) baseline);
- `how`: judge-score parsing (snapping to {0, 25, 50, 75, 100}) and aggregation over
  judges with and without zeros;
- `streaming`: judge windows, frame times, temporal sensitivity, irrelevant-duration
  ratio, 0-100 mapping, reminder scoring and judge calibration;
- `baselines`: a frame-difference event detector and a delayed caption stream.

Judges and model backends live elsewhere: the scorers here take their replies or
scores as plain values, tables or callables, so they run without any model.
"""

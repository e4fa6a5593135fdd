"""SocialOmni-style benchmark: who speaks, when to speak and how to reply in multi-party dialogue.

Implements the exactly-specified parts of docs/benchmarks/socialomni.md, split by stage:

- `importers`: readers for the released level-1 (who) / level-2 (when / how) files and the
  demo's ground truth (`import_socialomni`);
- `contracts`: the table contracts of items, replies and scores;
- `demo`: the generated multi-party demo clips in the released formats;
- `baselines`: panel motion / silence after VAD / previous utterance, and chance;
- `requests`: registry models' requests (who: the whole clip by default, or cut at the
  query time; when / how: cut at the cut time) and replies;
- `parsing`: reading replies as the released code does (default) or strictly;
- `cli`: `omnisocial socialomni who|when|how`, scoring replies made elsewhere;
- `who`: letter extraction, the who-MCQ scorer, McNemar between models, prompts per
  modality and a builder of factorial 4-way items for new corpora;
- `when`: the released single-cut YES/NO scorer and the streaming turn-taking protocol;
- `stream`: registry models streamed through that protocol (every `stream_step_s` along
  each when stream item, via the shared `omnisocial.streaming` driver), their response
  times and the timing table per model;
- `how`: judge-score parsing, judging the candidates, aggregation, the released scripts'
  averages, response coverage and the large-gap rate, and judge agreement;
- `profile`: one row per model with perception and generation ranks;
- `figures`: profile, timing and rank figures.

Shared layers only (`omnisocial.importing`, `media`, `models`, `streaming`, `judges`, `stats`,
`tables`, `io`, `figures.style`); nothing of `omnisocial.duplexeval`.
"""

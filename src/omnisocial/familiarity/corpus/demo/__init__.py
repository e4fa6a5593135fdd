"""Generate the demo corpus: synthetic dyadic conversations in the Seamless Interaction layout.

`generate_demo_corpus(root, params)` writes, from the `demo:` block of the config alone,
a small corpus that the workflow reads exactly like the real one (see
docs/input-formats.md#seamless): one `.wav`, `.mp4` and `.json` per participant under
`{root}/naturalistic/{split}/{batch:04d}/{archive:04d}/`, and the metadata tables
`interactions.csv`, `relationships.csv`, `participants.csv`, `filelist.csv`, plus
`participant_genders.csv` (the optional gender table) and `_demo_truth.csv` (which
interactions should pass the quality filters, and which check each other one is built to
fail; not part of the Seamless layout).

How a conversation is made:
- design: every site x relationship {familiar, stranger} x gender composition
  {female-female, male-male} cell gets `candidates_per_cell` good Either-Or conversations,
  each with two new participants (nobody appears twice); then one interaction per entry
  of `failures`, sites round-robin, relationship alternating;
- speech: espeak-ng, one voice variant (`en+m1..m7` / `en+f1..f5`), pitch and speed per
  participant; the speed comes from the relationship's `words_per_minute`. The
  sentences of one participant are synthesized in one espeak-ng call (SSML, separated by
  long breaks, split on the silences) and cached per (voice, sentence) inside one
  interaction, so the output never depends on which worker ran what before;
- timeline: alternating turns; the gap before a turn is exponential(`gap_mean_s`) (capped
  at 3 means), with probability `overlap_prob` the next turn starts 0.2-0.8 s before the
  current one ends, and the listener says "yeah" / "mm-hm" / "right" mid-turn with
  probability `backchannel_prob`. A timeline is accepted only when it meets the targets
  of its kind (`timeline_stats`): a good one holds `min_total_speech_s` + 1 s of speech
  (91 s at the default 90 s), >= 4 merged turns in every 20 s window (also counting onsets
  from any turn onset, as a clip snapped to a turn would) and >= 3.5 s of each speaker in
  every window; otherwise the layout is redrawn
  (seeded), and after a fixed number of tries generation fails with a message;
- audio: each microphone holds its owner's speech, the other speaker at `crosstalk_db`,
  and faint seeded noise; mono 16-bit PCM at `sample_rate`;
- video: numpy frames (participant-specific background, a face, a mouth whose height
  follows the owner's own speech envelope, so the picture shows who speaks), piped to
  ffmpeg: H.264 yuv420p plus an AAC copy of the microphone;
- json: transcript segments (one per sentence; word times spread over the sentence in
  proportion to word length) and VAD segments, straight from the timeline.

`min_total_speech_s` is the F5 threshold (`filters.min_total_speech_s`) the corpus is built
against; the whole-interaction targets follow from it (`design.speech_targets`), the
values tuned at 90 s scaled: too_little_speech holds 40/90-75/90 of it, and `duration_s` must
lie within 110/91 of the speech target and 140/90 of the threshold (110-140 s at 90 s;
about 49.6-62.2 s at 40 s): shorter, a stranger conversation with 0.9 s gaps cannot hold
the speech target; longer, too_little_speech cannot stay far below the threshold while
keeping 4 turns in every 20 s window.

Determinism: every random draw comes from a `numpy` generator seeded by (`seed`, the
interaction's position), tables and json are written with fixed formatting, wav headers
are fixed, and ffmpeg runs single-threaded with bit-exact flags, so the same params give
byte-identical files. Work runs in at most two processes. The corpus is built in
`{root}.tmp` and renamed onto `root` when complete.

The stages, one module each:

- `design`: the `demo:` checks (`validate_params`), ids, people and file locations (`plan_corpus`);
- `conversations`: prompts, sentence banks, and `Supply` (the sentences each speaker says);
- `voices`: espeak-ng speech synthesis (`Synth`);
- `timeline`: laying out turns until they meet their targets (`build_timeline`);
- `scenes`: microphones, video frames and the mp4 encoding;
- `layout`: participant json and the metadata tables of the Seamless layout;
- `broken`: the deliberately broken interactions;
- `generate`: `generate_demo_corpus`, the entry point (rule `make_demo_corpus`).

espeak-ng runs, wav writing and the build-then-rename of the folder come from
`omnisocial.demo_kit`, the mp4 encoding (an ffmpeg-python graph) from
`omnisocial.media.pipe.encode_raw_mp4`; the social demos use the same functions.
"""

from omnisocial.familiarity.corpus.demo.design import FAILURES, GENDER_MIXES, gender_mix, speech_targets
from omnisocial.familiarity.corpus.demo.generate import generate_demo_corpus
from omnisocial.familiarity.corpus.demo.timeline import build_timeline, merged_turns, timeline_stats

__all__ = [
    "FAILURES",
    "GENDER_MIXES",
    "build_timeline",
    "gender_mix",
    "generate_demo_corpus",
    "merged_turns",
    "speech_targets",
    "timeline_stats",
]

"""The generated who / when / how demo: multi-party clips in the released SocialOmni formats.

`write_socialomni(folder, params, workdir)` writes, deterministically from the
`social.demo` parameters (`omnisocial.demo_kit.validate_params`), under `{root}/socialomni/`:

    {root}/socialomni/data/level_1/dataset.json     who items (SocialOmni level 1)
    {root}/socialomni/data/level_2/annotations.json when / how items (SocialOmni level 2)
    {root}/socialomni/videos/{clip}.mp4, audio/{clip}.wav
    {root}/socialomni/truth/turns.csv               clip_id, speaker, start, end, text
    {root}/socialomni/truth/panels.csv              which screen panel shows which speaker
    {root}/socialomni/truth/how_references.csv      true next utterance + paraphrases per item
    {root}/socialomni/truth/when_stream.csv         every turn transition (streaming protocol)

and returns its counts for the manifest; `omnisocial.demo_kit.build_demo` runs it with the
streaming demo's writer into one folder. A package, not one module, because the scripted
conversations (`topics`) alone are about 230 lines: `topics` holds them, `clips` the
generator.

Multi-party clips (`n_multiparty`, 15-25 s by default):
- 3 or 4 named speakers (`speakers` is cycled over the clips), each an espeak-ng voice
  variant with its own pitch and speed, take turns through one of the scripted
  conversations below, one line per turn, nobody speaking twice in a row and nobody
  overlapping. The gap before a turn is short (0.15-0.45 s) with probability
  `short_gap_prob`, else long (`cut_lag_s` + 0.5 to 1.2 s); the when items sit on long gaps.
- video (`video` width x height at fps): a 2 x 2 grid of panels, one per on-screen speaker,
  with the speaker's colour, a face, a name tag and a mouth bar whose height follows that
  speaker's own speech envelope, so the picture shows who talks. In every second clip
  (odd index) one speaker (not the first) is off-screen: heard but never shown, which
  makes the who items about that speaker audio-visually inconsistent, as in SocialOmni.
- audio: the mono mix of all voices plus faint seeded noise; the mp4 carries it as AAC.
- who items: `socialomni.who.build_who_items` over the clip's turns with a window reaching
  back to the clip start (so the question's times are clip times); per clip
  `who_items_per_clip` of them, at least one about the off-screen speaker when there is one.
- when items: at `when_transitions_per_clip` turn transitions with a long gap, a YES item
  whose cut is `cut_lag_s` after the true end of the turn (inside the silent gap, before
  the next speaker starts: the released cut marks where the next turn should begin) and a
  NO item cut in the middle of the same turn. question_1.timestamp is written as the
  released builder's Excel cells hold it (`importing.format_excel_time`: 17 s ->
  "00:17:00", 5.8 s -> "00:05:80"), so the default excel reading gets the cut back.
  Both ask "should <next speaker> speak now?";
  question_2 asks what they should say, answered by their true next line; full_asr holds
  the turns completed before the cut as "Name: text" lines. how_references.csv adds two
  hand-written paraphrases of that line.
- when_stream.csv: every transition of every clip: the first query time (0.5 s after the
  ending turn starts, once it is under way, so speech detected a little late at its onset
  cannot pass for a pause), the turn's true end, the next turn's start and the clip end.
"""

from __future__ import annotations

from omnisocial.socialomni.demo.clips import write_socialomni
from omnisocial.socialomni.demo.topics import NAMES, TOPICS

__all__ = ["NAMES", "TOPICS", "write_socialomni"]

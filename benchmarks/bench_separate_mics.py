"""Simultaneous speech, speech seconds, turns and backchannels on real voices, one microphone per talker.

    .venv/bin/python benchmarks/bench_separate_mics.py

The voices are the two speakers of the 30 s telephone call pyannote.audio ships, each on
its own microphone (`omnisocial.media.recorded.separate_mics`): the recording inside each
speaker's human reference turns (stretches where the reference has both talking are left
out of both, since the mono recording mixes them), the second speaker 6 dB softer and
moved 0.6 s earlier so that each of her turns starts over the end of the first speaker's,
and three short utterances cut from the call laid inside the other's turns (two of 0.2 s,
under silero's 0.25 s minimum, and one of 0.56 s). Its reference is exact by
construction, up to the human reference turns' own edges (their uncertainty, a few
hundredths of a second each). Each layout goes through the study's stages with the demo
config (`omnisocial.familiarity.recorded.evaluate_separate`): as recorded, with a -60 dBFS
noise floor, with each microphone hearing the other at -20 dB, and (no targets) both, and
the second speaker 12 and 18 dB softer (instead of 6) under the -60 dBFS floor: a soft
speaker 16 and 10 dB over the floor, whose speech edges the edge rule trims.

Prints one markdown row per layout: speech seconds per speaker, overlap seconds (total, and
the part each speaker started), merged turns and backchannels per speaker, each against the
reference, with the former attribution (all speech under the louder microphone dropped,
`signals.own_speech_excess_db: null`, and one noise floor per track) beside it. Exits 1 when
a target is missed on the first three layouts: overlap within 15%, speech within 3% per
speaker, turns and backchannels exact.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from omnisocial.config import load_config
from omnisocial.familiarity import recorded

ROOT = Path(__file__).resolve().parents[1]
TARGETS = 3  # the layouts with targets: as recorded, -60 dBFS floor, -20 dB cross-mix


def _former(config: dict) -> dict:
    signals = {**config.get("signals", {}), "own_speech_excess_db": None, "noise_floor_window_s": None}
    return {**config, "signals": signals}


def _pair(row: dict, key: str, fmt: str = "{:.2f}") -> str:
    return f"{fmt.format(row[key])} / {fmt.format(row['ref_' + key])}"


def _error(row: dict, key: str) -> float:
    return row[key] / row["ref_" + key] - 1.0


def missed(row: dict) -> list[str]:
    out = []
    if abs(_error(row, "overlap_s")) > 0.15:
        out.append(f"{row['layout']}: overlap {_error(row, 'overlap_s'):+.1%}")
    for speaker in ("a", "b"):
        if abs(_error(row, f"speech_s_{speaker}")) > 0.03:
            out.append(f"{row['layout']}: speech of {speaker} {_error(row, f'speech_s_{speaker}'):+.1%}")
    for key in ("turns", "backchannels_a", "backchannels_b"):
        if row[key] != row["ref_" + key]:
            out.append(f"{row['layout']}: {key} {row[key]} of {row['ref_' + key]}")
    return out


def main() -> int:
    config = recorded.study_config(load_config(ROOT / "config" / "demo.yaml"))
    layouts = list(recorded.SEPARATE_LAYOUTS)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        new = recorded.evaluate_separate(Path(folder) / "new", layouts, config).to_dict("records")
        old = recorded.evaluate_separate(Path(folder) / "old", layouts, _former(config)).to_dict("records")
    seconds = time.perf_counter() - started
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"separate microphones, real voices: {len(layouts)} layouts x 2 rules measured in {seconds:.1f} s "
          f"(load {load})\n")  # fmt: skip
    print("measured / reference\n")
    print("| layout | rule | speech a (s) | speech b (s) | overlap (s) | error | overlap a / b started (s) "
          "| turns | backchannels a | backchannels b |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    failures = []
    for index, (row_new, row_old) in enumerate(zip(new, old, strict=True)):
        for rule, row in (("kept on both", row_new), ("former", row_old)):
            cells = [
                row["layout"],
                rule,
                f"{_pair(row, 'speech_s_a')} ({_error(row, 'speech_s_a'):+.1%})",
                f"{_pair(row, 'speech_s_b')} ({_error(row, 'speech_s_b'):+.1%})",
                _pair(row, "overlap_s"),
                f"{_error(row, 'overlap_s'):+.0%}",
                f"{row['overlap_s_a']:.2f} / {row['overlap_s_b']:.2f} "
                f"(ref {row['ref_overlap_s_a']:.2f} / {row['ref_overlap_s_b']:.2f})",
                _pair(row, "turns", "{}"),
                _pair(row, "backchannels_a", "{}"),
                _pair(row, "backchannels_b", "{}"),
            ]
            print("| " + " | ".join(cells) + " |")
        if index < TARGETS:
            failures += missed(row_new)
    for line in failures:
        print("MISSED:", line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

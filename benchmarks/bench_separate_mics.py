"""Simultaneous speech, speech seconds, turns and backchannels on real voices, one microphone per talker.

    .venv/bin/python benchmarks/bench_separate_mics.py

**Real two-line calls.** First, three real telephone calls recorded one line per talker
(SpokenWOZ, CC BY-NC 4.0, `tests/data/spokenwoz/`): as recorded, with a -60 dBFS white
noise floor added to each line, with each line hearing the other at -20 dB (a hybrid's echo),
and (no targets) both, and the other at -20 dB through a modelled room of RT60 0.2 and 0.5 s
(`telephone.room_response`: bleed that no 32 ms linear path explains, cancelled over its
0.25 s path, `signals.bleed_path_s`; without cancellation the attribution rules alone judge
it, with the room's tail that the microphones show, `signals.bleed_tail_s`). Each goes
through the study's stages with the demo
config (`omnisocial.familiarity.recorded.evaluate_calls`) and is scored against the
reference of its clean lines (`omnisocial.media.telephone.reference`: silero on each line
alone, ends at the line's own level). The rules compared: the study's (`signals.cancel_bleed`
on, own speech kept on both microphones, a room's tail where a microphone shows one), the
same without the tail (`signals.bleed_tail_s: null`), the same without bleed cancellation,
and the former
rule (all speech under the louder microphone dropped, one noise floor per track, no
cancellation). A second table bounds the reference: per line, its speech seconds beside
an energy reading that shares nothing with silero (frames 10, 15 and 20 dB over the line's
noise, near its owner's words; `telephone.energy_speech_seconds`) and the dataset's
utterance seconds; its merged turns beside those of the dataset's utterances. Targets on the
first three layouts, per call: speech within 3% per speaker, overlap within 15% where the
reference has at least 0.5 s of it (and pooled over the calls), merged turns and
backchannels equal to the reference.

**Built layouts.** Then the voices are the two speakers of the 30 s telephone call
pyannote.audio ships, each on its own microphone
(`omnisocial.media.recorded.separate_mics`): the recording inside each speaker's human
reference turns (stretches where the reference has both talking are left out of both, since
the mono recording mixes them), the second speaker 6 dB softer and moved 0.6 s earlier so
that each of her turns starts over the end of the first speaker's, and three short
utterances cut from the call laid inside the other's turns (two of 0.2 s, under silero's
0.25 s minimum, and one of 0.56 s). Its reference is exact by construction, up to the human
reference turns' own edges (their uncertainty, a few hundredths of a second each). Each
layout goes through the study's stages with the demo config
(`omnisocial.familiarity.recorded.evaluate_separate`): as recorded, with a -60 dBFS noise
floor, with each microphone hearing the other at -20 dB, and (no targets) both, and the
second speaker 12 and 18 dB softer (instead of 6) under the -60 dBFS floor: a soft speaker
16 and 10 dB over the floor, whose speech edges the edge rule trims.

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
from omnisocial.media import telephone

ROOT = Path(__file__).resolve().parents[1]
TARGETS = 3  # the layouts with targets: as recorded, -60 dBFS floor, -20 dB cross-mix
CALLS_FOLDER = ROOT / "tests" / "data" / "spokenwoz"
MIN_OVERLAP_S = 0.5  # a call's overlap is held to 15% when its reference has at least this much


def _former(config: dict) -> dict:
    signals = {
        **config.get("signals", {}),
        "own_speech_excess_db": None,
        "noise_floor_window_s": None,
        "cancel_bleed": False,
    }
    return {**config, "signals": signals}


def _uncancelled(config: dict) -> dict:
    return {**config, "signals": {**config.get("signals", {}), "cancel_bleed": False}}


def _no_tail(config: dict) -> dict:
    return {**config, "signals": {**config.get("signals", {}), "bleed_tail_s": None}}


def _pair(row: dict, key: str, fmt: str = "{:.2f}") -> str:
    return f"{fmt.format(row[key])} / {fmt.format(row['ref_' + key])}"


def _error(row: dict, key: str) -> float:
    return row[key] / row["ref_" + key] - 1.0


def missed(row: dict, min_overlap_s: float = 0.0) -> list[str]:
    out = []
    if row["ref_overlap_s"] >= min_overlap_s and abs(_error(row, "overlap_s")) > 0.15:
        out.append(f"{row.get('call', 'built')} {row['layout']}: overlap {_error(row, 'overlap_s'):+.1%}")
    for speaker in ("a", "b"):
        if abs(_error(row, f"speech_s_{speaker}")) > 0.03:
            out.append(
                f"{row.get('call', 'built')} {row['layout']}: "
                f"speech of {speaker} {_error(row, f'speech_s_{speaker}'):+.1%}"
            )
    for key in ("turns", "backchannels_a", "backchannels_b"):
        if row[key] != row["ref_" + key]:
            out.append(f"{row.get('call', 'built')} {row['layout']}: {key} {row[key]} of {row['ref_' + key]}")
    return out


def _row_cells(row: dict, rule: str) -> list[str]:
    return [
        rule,
        f"{_pair(row, 'speech_s_a')} ({_error(row, 'speech_s_a'):+.1%})",
        f"{_pair(row, 'speech_s_b')} ({_error(row, 'speech_s_b'):+.1%})",
        _pair(row, "overlap_s"),
        f"{_error(row, 'overlap_s'):+.0%}" if row["ref_overlap_s"] else "n/a",
        _pair(row, "turns", "{}"),
        _pair(row, "backchannels_a", "{}"),
        _pair(row, "backchannels_b", "{}"),
    ]


def reference_bounds(rows: list[dict]) -> None:
    """Print each call's reference (from its measured `rows`) beside the energy reading and the
    dataset's utterances."""
    from omnisocial.familiarity.intervals import union_seconds

    print("reference of the clean lines, and what bounds it (seconds)\n")
    print(
        "| call | speaker | reference | energy +10 / +15 / +20 dB | utterances "
        "| merged turns: reference / utterances |"
    )
    print("|---|---|---|---|---|---|")
    references = {row["call"]: row for row in rows}  # the reference is the same in every layout
    for name, row in references.items():
        call = telephone.read_call(CALLS_FOLDER, name)
        spoken = {k: [(s, e) for who, s, e, _ in telephone.utterances(call) if who == k] for k in ("a", "b")}
        turns = f"{row['ref_turns']} / {recorded.turn_count(spoken, None)}"
        for speaker in ("a", "b"):
            energy = " / ".join(
                f"{telephone.energy_speech_seconds(call, speaker, above):.2f}" for above in (10.0, 15.0, 20.0)
            )
            cells = [name, speaker, f"{row[f'ref_speech_s_{speaker}']:.2f}", energy,
                     f"{union_seconds(spoken[speaker]):.2f}", turns if speaker == "a" else ""]  # fmt: skip
            print("| " + " | ".join(cells) + " |")
    print()


def real_calls(config: dict) -> list[str]:
    """Print the real calls' table; returns the targets missed."""
    layouts = list(recorded.CALL_LAYOUTS)
    rules = (
        ("study's", config),
        ("no room tail", _no_tail(config)),
        ("no cancellation", _uncancelled(config)),
        ("former", _former(config)),
    )
    started = time.perf_counter()
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for label, rule_config in rules:
            frame = recorded.evaluate_calls(
                Path(folder) / label, CALLS_FOLDER, telephone.CALL_NAMES, layouts, rule_config
            )
            results[label] = frame.to_dict("records")
    seconds = time.perf_counter() - started
    print(f"real two-line calls: {len(results[rules[0][0]])} call layouts x {len(rules)} rules measured "
          f"in {seconds:.1f} s\n")  # fmt: skip
    reference_bounds(results[rules[0][0]])
    print("measured / reference\n")
    print("| call | layout | rule | speech a (s) | speech b (s) | overlap (s) | error | turns "
          "| backchannels a | backchannels b |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    failures = []
    pooled = {}
    for index, row in enumerate(results[rules[0][0]]):
        for label, _ in rules:
            other = results[label][index]
            print("| " + " | ".join([row["call"], row["layout"], *_row_cells(other, label)]) + " |")
        if row["layout"] in {layout.name for layout in layouts[:TARGETS]}:
            failures += missed(row, MIN_OVERLAP_S)
            total = pooled.setdefault(row["layout"], [0.0, 0.0])
            total[0] += row["overlap_s"]
            total[1] += row["ref_overlap_s"]
    print()
    for layout, (measured, reference) in pooled.items():
        error = measured / reference - 1.0
        print(f"pooled overlap, {layout}: {measured:.2f} / {reference:.2f} s ({error:+.0%})")
        if abs(error) > 0.15:
            failures.append(f"pooled {layout}: overlap {error:+.1%}")
    print()
    return failures


def main() -> int:
    config = recorded.study_config(load_config(ROOT / "config" / "demo.yaml"))
    call_failures = real_calls(config)
    layouts = list(recorded.SEPARATE_LAYOUTS)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        new = recorded.evaluate_separate(Path(folder) / "new", layouts, config).to_dict("records")
        old = recorded.evaluate_separate(Path(folder) / "old", layouts, _former(config)).to_dict("records")
    seconds = time.perf_counter() - started
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"built separate microphones, real voices: {len(layouts)} layouts x 2 rules "
          f"measured in {seconds:.1f} s "
          f"(load {load})\n")  # fmt: skip
    print("measured / reference\n")
    print("| layout | rule | speech a (s) | speech b (s) | overlap (s) | error | overlap a / b started (s) "
          "| turns | backchannels a | backchannels b |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    failures = []
    for index, (row_new, row_old) in enumerate(zip(new, old, strict=True)):
        for rule, row in (("kept on both", row_new), ("former", row_old)):
            cells = _row_cells(row, rule)
            started_by = (
                f"{row['overlap_s_a']:.2f} / {row['overlap_s_b']:.2f} "
                f"(ref {row['ref_overlap_s_a']:.2f} / {row['ref_overlap_s_b']:.2f})"
            )
            cells = [row["layout"], *cells[:5], started_by, *cells[5:]]
            print("| " + " | ".join(cells) + " |")
        if index < TARGETS:
            failures += missed(row_new)
    failures = call_failures + failures
    for line in failures:
        print("MISSED:", line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

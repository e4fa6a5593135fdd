"""Generate the demo corpus: synthetic dyadic conversations in the Seamless Interaction layout.

Length (about 1,300 lines): moved here whole from corpus/demo.py; its split into a `demo/`
package (voices and speech synthesis, video rendering, corpus layout, broken-interaction
variants) is still to do, together with moving its ffmpeg calls to the shared media helper.

`generate_demo_corpus(root, params)` writes, from the `demo:` block of the config alone,
a small corpus that the workflow reads exactly like the real one (see
docs/data-formats.md): one `.wav`, `.mp4` and `.json` per participant under
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
  of its kind (`timeline_stats`): a good one holds >= 91 s of speech, >= 4 merged turns in
  every 20 s window (also counting onsets from any turn onset, as a clip snapped to a turn
  would) and >= 3.5 s of each speaker in every window; otherwise the layout is redrawn
  (seeded), and after a fixed number of tries generation fails with a message;
- audio: each microphone holds its owner's speech, the other speaker at `crosstalk_db`,
  and faint seeded noise; mono 16-bit PCM at `sample_rate`;
- video: numpy frames (participant-specific background, a face, a mouth whose height
  follows the owner's own speech envelope, so the picture shows who speaks), piped to
  ffmpeg: H.264 yuv420p plus an AAC copy of the microphone;
- json: transcript segments (one per sentence; word times spread over the sentence in
  proportion to word length) and VAD segments, straight from the timeline.

`duration_s` must lie within 110-140 s: shorter, a stranger conversation with 0.9 s gaps
cannot hold the 90 s of speech filter F5 asks for; longer, too_little_speech cannot stay
far below 90 s while keeping 4 turns in every 20 s window.

Determinism: every random draw comes from a `numpy` generator seeded by (`seed`, the
interaction's position), tables and json are written with fixed formatting, wav headers
are fixed, and ffmpeg runs single-threaded with bit-exact flags, so the same params give
byte-identical files. Work runs in at most two processes. The corpus is built in
`{root}.tmp` and renamed onto `root` when complete.
"""

from __future__ import annotations

import colorsys
import json
import logging
import multiprocessing
import os
import re
import shutil
import subprocess
import tempfile
import time
import wave
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np
import pandas as pd
from scipy.signal import resample_poly

from omnisocial.familiarity.intervals import union_seconds
from omnisocial.familiarity.sampling import clip_candidates
from omnisocial.io import atomic_path, write_csv, write_json, write_text
from omnisocial.media.pipe import run_with_stdin, yuv420p

log = logging.getLogger(__name__)

LABEL = "naturalistic"
RELATIONSHIP_LEVELS = ("familiar", "stranger")
GENDER_MIXES = ("female-female", "male-male")
FAMILIAR_DETAILS = ("friends", "coworkers", "siblings", "dating", "spouse", "family-generic")
STRANGER_DETAILS = ("", "none")
SPLITS = ("dev", "test")
FILES_PER_ARCHIVE = 7  # odd, so that some pairs straddle two archives as in a real download
ARCHIVES_PER_BATCH = 3
BIG_FIVE = ("extraversion", "agreeableness", "conscientiousness", "neuroticism", "openness")
MALE_VARIANTS = tuple(f"m{k}" for k in range(1, 8))
FEMALE_VARIANTS = tuple(f"f{k}" for k in range(1, 6))
A_SUFFIX_SHARE = 0.12  # share of participant ids that end in `A`, as `P0299A` does

FAILURES = (
    "placeholder_prompt",
    "not_either_or",
    "too_few_turns",
    "silent_speaker",
    "duplicated_tracks",
    "desynced_tracks",
    "too_little_speech",
    "truncated_video",
    "single_participant",
    "missing_transcript",
    "corrupt_video",
    "empty_audio",
    "unreadable_json",
)

# Targets the timelines are built to meet; they mirror the defaults of the `filters:` block
# (turn_gap_s 0.3, min_turns 4, min_speaker 3 s, min_total_speech 90 s) with a margin.
WINDOW_S = 20.0
WINDOW_STEP_S = 0.5
# The workflow's default clip settings (config `clips:`), used to check good conversations.
DEFAULT_CLIPS = {"duration_s": 20.0, "early_start_s": 5.0, "late_end_margin_s": 5.0, "snap_tolerance_s": 4.0}
TURN_GAP_S = 0.3
SPEECH_TARGET_S = 91.0
MIN_TURNS = 4
MIN_SPEAKER_S = 3.5
DURATION_RANGE_S = (110.0, 140.0)
LITTLE_SPEECH_S = (40.0, 75.0)  # too_little_speech: about half the interaction voiced, far below 90 s
DESYNC_S = 1.5
TRUNCATED_SHARE = 0.4
CORRUPT_BYTES = 2048
MAX_TRIES = 60
RESHUFFLE_EVERY = 10
NOISE_RMS = 0.0015  # about -56 dBFS
OVERLAP_S = (0.2, 0.8)
IN_TURN_PAUSE_S = (0.12, 0.25)  # between sentences of one turn: below TURN_GAP_S, so one turn
SOLO_PAUSE_S = (0.45, 0.7)  # silent_speaker: above TURN_GAP_S, so each sentence is its own turn
SPARSE_GAP_S = (1.2, 2.0)
SPARSE_TURN_SPEECH_S = 2.0  # too_little_speech: speech per turn
MONOLOGUE_S = (11.0, 13.5)  # too_few_turns: a 20 s window then spans at most three turns
MONOLOGUE_MAX_S = 14.5
SPLIT_BREAK_MS = 1500
SPLIT_QUIET_S = 0.8
SPLIT_QUIET_LEVEL = 4 / 32768  # espeak-ng's breaks stay within +-1 LSB, a little more once resampled
TRIM_LEVEL = 0.006  # about -44 dBFS: where a sentence starts and ends
SYNTH_BATCH = 14

# --------------------------------------------------------------------------- text banks


@dataclass(frozen=True)
class Prompt:
    key: str
    prompt_id: str
    text: str
    opening: str
    sentences: tuple[str, ...]
    either_or: bool = True


EITHER_OR_PROMPTS = (
    Prompt(
        "sea_mountains",
        "NAT_EO_01",
        "Would you rather live by the sea or in the mountains?",
        "Okay, so the question is, would you rather live by the sea or in the mountains?",
        (
            "I would go with the sea, because waking up to the sound of waves sounds amazing.",
            "The mountains for me, I love hiking and the air is so clean up there.",
            "Living by the sea means fresh fish every day, which is a big plus for me.",
            "But winters in the mountains can be really long and pretty lonely, I think.",
            "I grew up near the coast, so the ocean always feels like home to me.",
            "You could go skiing every weekend if you lived up in the mountains.",
            "The beach gets so crowded in the summer that it would drive me crazy.",
            "I like the idea of a small cabin with a fireplace and a view of the peaks.",
            "Swimming in the ocean every morning would be such a great way to start the day.",
            "Storms by the sea can be scary though, especially in an old wooden house.",
            "Mountain towns are usually quiet, and I think I would enjoy that kind of calm.",
            "Sunsets over the water are hard to beat, I could watch them every single evening.",
        ),
    ),
    Prompt(
        "fly_invisible",
        "NAT_EO_02",
        "Would you rather be able to fly or be invisible?",
        "Alright, would you rather be able to fly or be invisible, what do you think?",
        (
            "Flying, definitely, I would never have to sit in traffic on the way to work again.",
            "Being invisible sounds fun, but I think I would feel really lonely after a while.",
            "If I could fly I would visit my family every weekend without buying any tickets.",
            "Invisibility seems a bit creepy to me, you would hear things you should not hear.",
            "Imagine flying over the city at night and seeing all the lights below you.",
            "I would use invisibility to sneak into concerts, I have to admit that much.",
            "Flying in the rain would be miserable, so I would need a really good jacket.",
            "People would always want something from you if they knew that you could fly.",
            "Being invisible at work would be perfect for avoiding all those long meetings.",
            "I am a little afraid of heights, so flying might not be ideal for me.",
            "With flying you get a view of the world that nobody else ever gets to see.",
            "Invisible people probably get bumped into all the time on a busy sidewalk.",
        ),
    ),
    Prompt(
        "past_future",
        "NAT_EO_03",
        "Would you rather travel to the past or to the future?",
        "So our question is, would you rather travel to the past or to the future?",
        (
            "The past for me, I would love to see how people lived a few hundred years ago.",
            "I would pick the future, I want to know if we ever figure out climate change.",
            "Going to the past sounds dangerous, there were no vaccines and no real hospitals.",
            "The future could be scary though, what if things get a lot worse than now?",
            "I would visit my grandparents when they were young, that would be amazing.",
            "I am really curious about what technology will look like in a hundred years.",
            "If you went back you could warn people, but that might change everything.",
            "Maybe I would just go fifty years ahead and see what my town looks like.",
            "Ancient Rome would be my choice, I have always loved that part of history.",
            "I would be worried about not being able to come back home again afterwards.",
            "Seeing the first moon landing live on television would be incredible, honestly.",
            "The future might have flying cars, and I really want to try one of those.",
        ),
    ),
    Prompt(
        "party_dinner",
        "NAT_EO_04",
        "Would you rather have a big party or a quiet dinner on your birthday?",
        "Okay, would you rather have a big party or a quiet dinner on your birthday?",
        (
            "A quiet dinner for me, big parties always make me a little bit nervous.",
            "I love a big party, the more people the better, with loud music and dancing.",
            "A small dinner with close friends is where the best conversations happen.",
            "Planning a big party is so much work that I would be too tired to enjoy it.",
            "Last year I had a huge party and it was one of the best nights ever.",
            "I would pick a nice restaurant, good food and maybe three of my friends.",
            "At a big party you barely get to talk to anyone for more than a minute.",
            "Dancing all night on my birthday sounds like exactly what I would want.",
            "My family always does a quiet dinner, so a party would feel like a nice change.",
            "I think it depends on the year, some years I want noise and some years calm.",
            "Cooking dinner at home with candles and a good bottle of wine sounds perfect.",
            "Surprise parties are the worst, I would hate walking into a room full of people.",
        ),
    ),
)

# The not_either_or conversation: neither these nor GENERIC say "rather" or " or ", so a
# keyword audit of the prompt label agrees with what is said.
OPEN_PROMPT = Prompt(
    "best_trip",
    "NAT_QA_01",
    "Tell your partner about the best trip you have ever taken.",
    "Okay, so we should each talk about the best trip we have ever taken.",
    (
        "The best trip I ever took was a week in Lisbon with two of my old friends.",
        "We walked everywhere and ate way too many custard tarts, it was great.",
        "My favorite trip was camping by a lake when I was about twelve years old.",
        "We got lost on the way there, which turned out to be the fun part of it.",
        "I went to Japan last spring and the cherry blossoms were just unbelievable.",
        "The trains there are so clean and they always leave exactly on time.",
        "One summer we drove across the whole country in a very old camper van.",
        "The van broke down twice, but people were incredibly kind to us every time.",
        "I still think about the food at that tiny market almost every single week.",
        "We stayed in a small guest house run by a very funny old couple.",
        "The flight home was awful, but the trip was completely worth it in the end.",
        "I took so many photos that my phone ran out of space on the third day.",
        "Next year I want to go back there and stay for a little bit longer.",
        "Have you ever been somewhere that you really did not want to leave?",
    ),
    either_or=False,
)
PLACEHOLDER_PROMPT_ID = "NAT_EO_00"
PLACEHOLDER_TEXT = "placeholder"

GENERIC = (
    "That is a really good point, I had not thought about it that way before.",
    "Honestly, I go back and forth on this one every time somebody asks me.",
    "I think my answer would change a lot depending on how old I was at the time.",
    "What about you, which one would you pick if you had to choose today?",
    "That makes sense, I can totally see why you would say that about it.",
    "My sister would pick the same thing, she always says exactly that too.",
    "I feel like most people would choose the first one without even thinking.",
    "Okay, but you have to commit to it for the rest of your whole life.",
    "I guess I am more practical than adventurous when it comes down to it.",
    "It is funny, I would have guessed that you would choose the other one.",
    "Let me think about that for a second before I give you my answer.",
    "I read an article about this once, and it changed my mind a little bit.",
    "That is fair, there are good arguments on both sides of it, I suppose.",
    "I think the money would matter too, some places are really expensive to live.",
    "You would get used to it after a few weeks, I am pretty sure about that.",
    "My friends would probably laugh at me for picking that one, to be honest.",
    "It sounds great in theory, but real life is usually a lot more complicated.",
    "I can imagine that, it would be a totally different kind of life for sure.",
    "So we agree on that part at least, which is kind of surprising to me.",
    "I do not know, I keep changing my mind the more we talk about it.",
    "That reminds me of a trip I took a few years ago with my two cousins.",
    "Yes, exactly, that is what I was trying to say a minute ago, I think.",
    "I would miss my daily routine though, I am such a creature of habit.",
    "Maybe the best answer is a little bit of both, if that is even allowed.",
    "I think about this kind of thing way too much when I cannot sleep.",
    "You make it sound so easy, but I am not sure it would be that simple.",
    "Wait, so what would you actually do on the very first day of it?",
    "That is a good question, nobody has ever asked me that one before.",
    "I bet most people our age would say the same thing if you asked them.",
    "It would take some time to adjust, but I think I could do it eventually.",
)

SHORT = (
    "I guess so.",
    "That sounds nice.",
    "Maybe, I am not sure.",
    "Good question.",
    "I like that idea.",
    "Hmm, let me think.",
    "Yes, probably.",
    "Not really, no.",
    "That is true.",
    "Fair enough.",
    "I see what you mean.",
    "Sounds fun to me.",
    "I would like that.",
    "Probably the first one.",
)

# (what espeak-ng says, what the transcript shows)
BACKCHANNELS = (("Yeah.", "Yeah."), ("Mm hmm.", "Mm-hm."), ("Right.", "Right."))

# --------------------------------------------------------------------------- helpers


def gender_mix(g1: str, g2: str) -> str:
    """The gender composition of a pair: the two genders sorted and joined by '-'."""
    return "-".join(sorted((g1, g2)))


@dataclass(frozen=True)
class Voice:
    variant: str
    pitch: int
    speed: int

    @property
    def name(self) -> str:
        return f"en+{self.variant}"


@dataclass(frozen=True)
class Person:
    participant_id: str  # digits, maybe ending in A, without the P
    gender: str
    voice: Voice
    colour: tuple[int, int, int]
    gain: float


@dataclass(frozen=True)
class Plan:
    index: int
    vendor: str  # "V00"
    session: str  # "0894"
    prompt_hash: str  # "00000582"
    prompt_key: str
    relationship: str
    detail: str
    expected: str  # "pass" or a failure name
    people: tuple[Person, Person]
    split: str
    locations: tuple[tuple[int, int], ...] = ()  # (batch, archive) per participant written

    @property
    def interaction_id(self) -> str:
        return f"{self.vendor}_S{self.session}_I{self.prompt_hash}"

    def file_id(self, who: int) -> str:
        return f"{self.interaction_id}_P{self.people[who].participant_id}"

    @property
    def n_files(self) -> int:
        return 1 if self.expected == "single_participant" else 2

    def relative_stem(self, who: int) -> str:
        batch, archive = self.locations[who]
        return f"{LABEL}/{self.split}/{batch:04d}/{archive:04d}/{self.file_id(who)}"


@dataclass
class Piece:
    """One stretch of one speaker's speech: a sentence or a backchannel."""

    speaker: int
    start: float
    text: str
    audio: np.ndarray  # float32 at the corpus sample rate
    sample_rate: int
    backchannel: bool = False
    span: float | None = None  # the sentence's full duration when `audio` was cut short

    @property
    def duration(self) -> float:
        return len(self.audio) / self.sample_rate

    @property
    def end(self) -> float:
        return self.start + self.duration

    def words(self) -> list[tuple[str, float, float]]:
        """Word times: the sentence's duration spread over its words in proportion to length."""
        tokens = self.text.split()
        weights = np.array([max(1, len(re.sub(r"\W", "", t))) for t in tokens], dtype=float)
        edges = self.start + np.concatenate([[0.0], np.cumsum(weights)]) / weights.sum() * (
            self.span or self.duration
        )
        return [(t, float(edges[k]), float(edges[k + 1])) for k, t in enumerate(tokens)]


# --------------------------------------------------------------------------- parameters


def _validate(params) -> dict:
    """Check the `demo:` block; return it as plain JSON types (Snakemake passes its own mappings)."""
    params = json.loads(json.dumps(params, default=dict))
    required = (
        "seed",
        "sites",
        "candidates_per_cell",
        "duration_s",
        "sample_rate",
        "video",
        "crosstalk_db",
        "style",
        "failures",
    )
    missing = [key for key in required if key not in params]
    if missing:
        raise ValueError(f"demo params lack {', '.join(missing)}")
    sites = list(params["sites"])
    bad = [site for site in sites if not re.fullmatch(r"V\d{2}", str(site))]
    if not sites or bad:
        raise ValueError(f"demo sites must be vendor ids like V00, got {sites}")
    if len(set(sites)) != len(sites):
        raise ValueError(f"demo sites repeat: {sites}")
    unknown = [name for name in params["failures"] if name not in FAILURES]
    if unknown:
        raise ValueError(f"unknown demo failure(s) {unknown}; known: {', '.join(FAILURES)}")
    if len(set(params["failures"])) != len(params["failures"]):
        raise ValueError("demo failures repeat")
    for rel in RELATIONSHIP_LEVELS:
        style = params["style"].get(rel)
        keys = ("gap_mean_s", "overlap_prob", "backchannel_prob", "words_per_minute")
        if style is None or any(key not in style for key in keys):
            raise ValueError(f"demo style.{rel} needs {', '.join(keys)}")
    video = params["video"]
    if int(video["width"]) % 2 or int(video["height"]) % 2:
        raise ValueError("demo video width and height must be even (yuv420p)")
    low, high = DURATION_RANGE_S
    if not low <= float(params["duration_s"]) <= high:
        raise ValueError(
            f"demo duration_s must be within {low:g}-{high:g} s: a good stranger conversation needs "
            f"{low:g} s to hold {SPEECH_TARGET_S:g} s of speech (filter F5), and too_little_speech "
            f"cannot keep 4 turns per 20 s window below {LITTLE_SPEECH_S[1]:g} s of speech beyond {high:g} s"
        )
    if int(params["candidates_per_cell"]) < 0:
        raise ValueError("demo candidates_per_cell must be >= 0")
    return params


# --------------------------------------------------------------------------- the design


def _plan(params: dict) -> tuple[list[Plan], list[Prompt]]:
    """Every interaction with its ids, people and file locations, from the master seed."""
    rng = np.random.default_rng([int(params["seed"]), 0])
    sites = list(params["sites"])
    specs = []  # (site, relationship, genders, expected)
    for site in sites:
        for rel in RELATIONSHIP_LEVELS:
            for mix in GENDER_MIXES:
                gender = mix.split("-")[0]
                for _ in range(int(params["candidates_per_cell"])):
                    specs.append((site, rel, (gender, gender), "pass"))
    for k, name in enumerate(params["failures"]):
        genders = tuple(str(g) for g in rng.choice(["female", "male"], size=2))
        specs.append((sites[k % len(sites)], RELATIONSHIP_LEVELS[k % 2], genders, name))

    n = len(specs)
    sessions = rng.choice(np.arange(100, 10000), size=n, replace=False)
    numbers = rng.choice(np.arange(1, 10000), size=2 * n, replace=False)
    n_suffix = max(1, round(A_SUFFIX_SHARE * 2 * n))
    suffixed = set(rng.choice(2 * n, size=n_suffix, replace=False).tolist())
    pids = [f"{int(num):04d}" + ("A" if k in suffixed else "") for k, num in enumerate(numbers)]

    prompts = list(EITHER_OR_PROMPTS)
    if "not_either_or" in params["failures"]:
        prompts.append(OPEN_PROMPT)
    hashes = rng.choice(np.arange(1, 3000), size=len(prompts) + 1, replace=False)
    prompt_hash = {p.key: f"{int(h):08d}" for p, h in zip(prompts, hashes, strict=False)}
    prompt_hash["placeholder"] = f"{int(hashes[-1]):08d}"
    eo_order = rng.permutation(len(EITHER_OR_PROMPTS))

    plans = []
    for index, (site, rel, genders, expected) in enumerate(specs):
        people = tuple(_person(rng, pids[2 * index + who], genders[who], rel, params) for who in range(2))
        if expected == "not_either_or":
            key = OPEN_PROMPT.key
        else:
            key = EITHER_OR_PROMPTS[int(eo_order[index % len(eo_order)])].key
        hash_key = "placeholder" if expected == "placeholder_prompt" else key
        details = FAMILIAR_DETAILS if rel == "familiar" else STRANGER_DETAILS
        plans.append(
            Plan(
                index=index,
                vendor=site,
                session=f"{int(sessions[index]):04d}",
                prompt_hash=prompt_hash[hash_key],
                prompt_key=key,
                relationship=rel,
                detail=str(details[int(rng.integers(len(details)))]),
                expected=expected,
                people=people,
                split=SPLITS[int(rng.integers(len(SPLITS)))],
            )
        )
    # Files fill archives in order within each split, so a pair may straddle two archives.
    counters = dict.fromkeys(SPLITS, 0)
    placed = []
    for plan in plans:
        locations = []
        for _ in range(plan.n_files):
            archive = counters[plan.split] // FILES_PER_ARCHIVE
            locations.append((archive // ARCHIVES_PER_BATCH, archive))
            counters[plan.split] += 1
        placed.append(replace(plan, locations=tuple(locations)))
    return placed, prompts


def _person(rng: np.random.Generator, pid: str, gender: str, rel: str, params: dict) -> Person:
    if gender == "male":
        variant = MALE_VARIANTS[int(rng.integers(len(MALE_VARIANTS)))]
        pitch = int(rng.integers(25, 51))
    else:
        variant = FEMALE_VARIANTS[int(rng.integers(len(FEMALE_VARIANTS)))]
        pitch = int(rng.integers(50, 81))
    wpm = float(params["style"][rel]["words_per_minute"])
    speed = int(np.clip(round(wpm + rng.integers(-8, 9)), 80, 450))
    hue = float(rng.random())
    r, g, b = colorsys.hsv_to_rgb(hue, 0.55, 0.75)
    colour = (int(r * 255), int(g * 255), int(b * 255))
    gain = float(rng.uniform(0.55, 0.8))
    return Person(pid, gender, Voice(variant, pitch, speed), colour, gain)


# --------------------------------------------------------------------------- speech synthesis


def _read_wav(path: Path) -> tuple[np.ndarray, int]:
    with wave.open(str(path), "rb") as handle:
        rate = handle.getframerate()
        data = np.frombuffer(handle.readframes(handle.getnframes()), dtype="<i2")
        if handle.getnchannels() > 1:
            data = data.reshape(-1, handle.getnchannels())[:, 0]
    return data, rate


def _espeak(voice: Voice, text: str, path: Path, ssml: bool, sample_rate: int) -> np.ndarray:
    """Run espeak-ng once; its recording as float32 at `sample_rate`."""
    command = ["espeak-ng", "-v", voice.name, "-p", str(voice.pitch), "-s", str(voice.speed), "-w", str(path)]
    if ssml:
        command.insert(1, "-m")
    subprocess.run([*command, text], check=True, capture_output=True)
    samples, rate = _read_wav(path)
    x = samples.astype(np.float32) / 32768.0
    if rate != sample_rate:
        ratio = Fraction(sample_rate, rate)
        x = resample_poly(x, ratio.numerator, ratio.denominator).astype(np.float32)
    return x


def _split_on_silence(x: np.ndarray, sample_rate: int) -> list[np.ndarray]:
    """Cut a batch recording at its long silences (the SSML breaks); speech never pauses that long."""
    loud = np.flatnonzero(np.abs(x) > SPLIT_QUIET_LEVEL)
    if loud.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(loud) > SPLIT_QUIET_S * sample_rate)
    starts = np.concatenate([[loud[0]], loud[breaks + 1]])
    ends = np.concatenate([loud[breaks], [loud[-1]]]) + 1
    return [x[s:e] for s, e in zip(starts, ends, strict=True)]


def _finish(x: np.ndarray, sample_rate: int) -> np.ndarray:
    """Trim near-silence at both ends and fade the edges (5 ms) so no piece starts with a click."""
    loud = np.flatnonzero(np.abs(x) > TRIM_LEVEL)
    if loud.size == 0:
        raise RuntimeError("espeak-ng produced silence")
    x = x[loud[0] : loud[-1] + 1].copy()
    fade = min(len(x) // 2, int(0.005 * sample_rate))
    if fade:
        ramp = np.linspace(0.0, 1.0, fade, dtype=np.float32)
        x[:fade] *= ramp
        x[-fade:] *= ramp[::-1]
    return x


class Synth:
    """espeak-ng speech for one interaction, cached per (voice, sentence).

    Uncached sentences of one voice are synthesized together in one call (SSML breaks
    between them, split on the silences); when the split does not give one piece per
    sentence, each sentence is synthesized on its own instead.
    """

    def __init__(self, sample_rate: int, workdir: Path):
        self.sample_rate = sample_rate
        self.workdir = workdir
        self.cache: dict[tuple[Voice, str], np.ndarray] = {}
        self.calls = 0

    def prefetch(self, voice: Voice, texts: list[str]) -> None:
        todo = list(dict.fromkeys(t for t in texts if (voice, t) not in self.cache))
        if not todo:
            return
        path = self.workdir / f"espeak{self.calls}.wav"
        self.calls += 1
        body = "".join(f'{escape(t)} <break time="{SPLIT_BREAK_MS}ms"/> ' for t in todo)
        recording = _espeak(voice, f"<speak>{body}</speak>", path, True, self.sample_rate)
        pieces = _split_on_silence(recording, self.sample_rate)
        if len(pieces) != len(todo):
            log.debug("espeak batch of %d gave %d pieces; synthesizing one by one", len(todo), len(pieces))
            pieces = []
            for text in todo:
                pieces.append(_espeak(voice, text, path, False, self.sample_rate))
                self.calls += 1
        for text, piece in zip(todo, pieces, strict=True):
            self.cache[(voice, text)] = _finish(piece, self.sample_rate)

    def audio(self, voice: Voice, text: str) -> np.ndarray:
        if (voice, text) not in self.cache:
            self.prefetch(voice, [text])
        return self.cache[(voice, text)]


@dataclass
class Supply:
    """The ordered sentences each speaker says, handed out turn by turn, synthesized in batches."""

    synth: Synth
    voices: tuple[Voice, Voice]
    orders: list[list[str]]  # per speaker, main sentences (opening first for speaker 0)
    short: list[list[str]]
    cursor: list[int] = field(default_factory=lambda: [0, 0])
    short_cursor: list[int] = field(default_factory=lambda: [0, 0])

    def reset(self, rng: np.random.Generator | None = None) -> None:
        """Start again from the first sentence; with `rng`, reshuffle all but an opening line."""
        self.cursor = [0, 0]
        self.short_cursor = [0, 0]
        if rng is not None:
            for who in range(2):
                head = self.orders[who][:1] if _is_opening(self.orders[who][0]) else []
                tail = self.orders[who][len(head) :]
                self.orders[who] = head + [tail[k] for k in rng.permutation(len(tail))]

    def _take(self, who: int, bank: list[str], cursor: list[int]) -> tuple[str, np.ndarray]:
        position = cursor[who]
        text = bank[position % len(bank)]
        if (self.voices[who], text) not in self.synth.cache:
            ahead = [bank[(position + k) % len(bank)] for k in range(SYNTH_BATCH)]
            if cursor is self.cursor:  # the first batch also brings the backchannels
                ahead += [spoken for spoken, _ in BACKCHANNELS]
            self.synth.prefetch(self.voices[who], ahead)
        cursor[who] += 1
        return text, self.synth.audio(self.voices[who], text)

    def sentence(self, who: int) -> tuple[str, np.ndarray]:
        return self._take(who, self.orders[who], self.cursor)

    def short_sentence(self, who: int) -> tuple[str, np.ndarray]:
        return self._take(who, self.short[who], self.short_cursor)

    def backchannel(self, who: int, rng: np.random.Generator) -> tuple[str, np.ndarray]:
        spoken, shown = BACKCHANNELS[int(rng.integers(len(BACKCHANNELS)))]
        return shown, self.synth.audio(self.voices[who], spoken)


def _is_opening(text: str) -> bool:
    return any(text == p.opening for p in (*EITHER_OR_PROMPTS, OPEN_PROMPT))


# --------------------------------------------------------------------------- timelines

MODES = {
    "too_few_turns": "monologues",
    "silent_speaker": "solo",
    "too_little_speech": "sparse",
}


@dataclass(frozen=True)
class TimelineStats:
    speech_s: float  # union of both speakers' speech over the interaction
    min_turns: int  # fewest merged turns overlapping any 20 s window
    max_turns: int  # most merged turns overlapping any 20 s window
    min_onsets: int  # fewest merged-turn onsets in a 20 s window that starts at a turn onset
    min_speaker_s: float  # least speech of either speaker in any 20 s window


def merged_turns(pieces: list[Piece], gap: float = TURN_GAP_S) -> list[tuple[int, float, float]]:
    """Main (non-backchannel) pieces in time order, same-speaker runs closer than `gap` merged."""
    turns: list[list] = []
    for piece in sorted((p for p in pieces if not p.backchannel), key=lambda p: (p.start, p.speaker)):
        if turns and turns[-1][0] == piece.speaker and piece.start - turns[-1][2] < gap:
            turns[-1][2] = max(turns[-1][2], piece.end)
        else:
            turns.append([piece.speaker, piece.start, piece.end])
    return [(s, a, b) for s, a, b in turns]


def timeline_stats(pieces: list[Piece], duration: float, window: float = WINDOW_S) -> TimelineStats:
    """Measure a timeline the way the quality filters will (turns, speech per window, total)."""
    speech = union_seconds([(p.start, p.end) for p in pieces])
    turns = merged_turns(pieces)
    starts = np.arange(0.0, duration - window + 1e-9, WINDOW_STEP_S)
    if not turns or starts.size == 0:
        return TimelineStats(speech, 0, 0, 0, 0.0)
    ts = np.array([t[1] for t in turns])
    te = np.array([t[2] for t in turns])
    lo, hi = starts[:, None], starts[:, None] + window
    inside = np.clip(np.minimum(te, hi) - np.maximum(ts, lo), 0.0, None)
    counts = (inside > 0.1).sum(axis=1)
    anchors = ts[ts + window <= duration]
    onsets = [int(((ts >= a) & (ts < a + window)).sum()) for a in anchors]
    per_speaker = []
    for who in range(2):
        own = [p for p in pieces if p.speaker == who and not p.backchannel]
        if not own:
            per_speaker.append(0.0)
            continue
        ps = np.array([p.start for p in own])
        pe = np.array([p.end for p in own])
        per_speaker.append(float(np.clip(np.minimum(pe, hi) - np.maximum(ps, lo), 0.0, None).sum(1).min()))
    return TimelineStats(
        speech_s=speech,
        min_turns=int(counts.min()),
        max_turns=int(counts.max()),
        min_onsets=min(onsets) if onsets else 0,
        min_speaker_s=min(per_speaker),
    )


def clips_pass(pieces: list[Piece], duration: float) -> bool:
    """Whether the workflow's own clip selection finds F2/F3-passing early and late clips.

    The sliding-window statistics above cannot see how a clip's start and end snap to turn
    edges, so a good conversation is also checked with `sampling.clip_candidates` at the
    default clip settings, exactly as the workflow will cut it.
    """
    segments = pd.DataFrame(
        {
            "interaction_id": "x",
            "speaker": ["a" if p.speaker == 0 else "b" for p in pieces],
            "start": [p.start for p in pieces],
            "end": [p.end for p in pieces],
        }
    )
    signals = pd.DataFrame(
        {"interaction_id": ["x"], "duration_audio_a": [duration], "duration_audio_b": [duration]}
    )
    clips = clip_candidates(
        pd.DataFrame({"interaction_id": ["x"]}), segments, None, signals, DEFAULT_CLIPS, TURN_GAP_S
    )
    return (
        len(clips) == 2
        and bool((clips["n_turns"] >= MIN_TURNS).all())
        and bool((clips[["speech_s_a", "speech_s_b"]].min(axis=1) >= MIN_SPEAKER_S).all())
    )


def accept(mode: str, stats: TimelineStats, duration: float) -> bool:
    """Whether a timeline of `mode` meets its targets (see the module docstring)."""
    if mode == "dialogue":
        return (
            stats.speech_s >= SPEECH_TARGET_S
            and stats.min_turns >= MIN_TURNS
            and stats.min_onsets >= MIN_TURNS
            and stats.min_speaker_s >= MIN_SPEAKER_S
        )
    if mode == "monologues":
        return (
            stats.speech_s >= SPEECH_TARGET_S
            and stats.max_turns < MIN_TURNS
            and stats.min_speaker_s >= MIN_SPEAKER_S
        )
    if mode == "solo":
        return (
            stats.speech_s >= SPEECH_TARGET_S
            and stats.min_turns >= MIN_TURNS
            and stats.min_onsets >= MIN_TURNS
        )
    if mode == "sparse":
        low, high = LITTLE_SPEECH_S
        return (
            low <= stats.speech_s <= high
            and stats.min_turns >= MIN_TURNS
            and stats.min_onsets >= MIN_TURNS
            and stats.min_speaker_s >= MIN_SPEAKER_S
        )
    raise ValueError(f"unknown timeline mode {mode!r}")


class _Timeline:
    """Pieces being laid out, keeping each speaker's own speech from overlapping itself."""

    def __init__(self, duration: float, sample_rate: int):
        self.duration = duration
        self.sample_rate = sample_rate
        self.pieces: list[Piece] = []
        self.last_end = [0.0, 0.0]

    def earliest(self, who: int, proposed: float) -> float:
        return max(proposed, self.last_end[who] + 0.15)

    def add(self, who: int, start: float, text: str, audio: np.ndarray, backchannel: bool = False) -> bool:
        """Place a piece; cut it at the end of the recording. False once nothing more fits."""
        limit = self.duration - 0.05
        if start + 0.5 > limit:
            return False
        piece = Piece(who, round(start, 3), text, audio, self.sample_rate, backchannel)
        if piece.end > limit:
            if backchannel:
                return False
            piece = _cut(piece, limit)
            if piece is None:
                return False
        self.pieces.append(piece)
        self.last_end[who] = max(self.last_end[who], piece.end)
        return True


def _cut(piece: Piece, limit: float) -> Piece | None:
    """The part of a sentence said before the recording stops, words that end in it only."""
    words = [w for w in piece.words() if w[2] <= limit]
    if not words:
        return None
    keep = int(round((limit - piece.start) * piece.sample_rate))
    audio = piece.audio[:keep].copy()
    fade = min(len(audio), int(0.02 * piece.sample_rate))
    audio[len(audio) - fade :] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
    return Piece(
        piece.speaker,
        piece.start,
        " ".join(w[0] for w in words),
        audio,
        piece.sample_rate,
        piece.backchannel,
        span=piece.duration,
    )


def _turn_gap(rng: np.random.Generator, style: dict) -> float:
    """Signed gap before the next turn: negative for an overlap."""
    if rng.random() < float(style["overlap_prob"]):
        return -float(rng.uniform(*OVERLAP_S))
    mean = float(style["gap_mean_s"])
    return float(min(rng.exponential(mean), 3.0 * mean)) if mean > 0 else 0.0


def _layout_dialogue(rng, supply: Supply, style: dict, line: _Timeline) -> None:
    t = float(rng.uniform(0.3, 0.7))
    who = 0
    while True:
        start = line.earliest(who, t)
        text, audio = supply.sentence(who)
        pieces = [(text, audio)]
        if len(audio) / line.sample_rate < 2.5:  # a short sentence: say another one in the same turn
            pieces.append(supply.sentence(who))
        turn_start = start
        for k, (text, audio) in enumerate(pieces):
            if k:
                start = line.pieces[-1].end + float(rng.uniform(*IN_TURN_PAUSE_S))
            if not line.add(who, start, text, audio):
                return
        turn_end = line.pieces[-1].end
        listener = 1 - who
        if turn_end - turn_start >= 2.0 and rng.random() < float(style["backchannel_prob"]):
            shown, bc = supply.backchannel(listener, rng)
            at = turn_start + float(rng.uniform(0.35, 0.65)) * (turn_end - turn_start)
            if at >= line.last_end[listener] + 0.3 and at + len(bc) / line.sample_rate < turn_end - 0.2:
                line.add(listener, at, shown, bc, backchannel=True)
        gap = _turn_gap(rng, style)
        t = max(turn_end + gap, turn_start + 0.5)
        who = listener


def _layout_monologues(rng, supply: Supply, style: dict, line: _Timeline) -> None:
    t = float(rng.uniform(0.3, 0.7))
    who = 0
    while True:
        target = float(rng.uniform(*MONOLOGUE_S))
        start = line.earliest(who, t)
        turn_start = start
        while True:
            text, audio = supply.sentence(who)
            length = len(audio) / line.sample_rate
            if start - turn_start + length > MONOLOGUE_MAX_S and start > turn_start:
                break
            if not line.add(who, start, text, audio):
                return
            start = line.pieces[-1].end + float(rng.uniform(*IN_TURN_PAUSE_S))
            if line.pieces[-1].end - turn_start >= target:
                break
        gap = _turn_gap(rng, style)
        t = max(line.pieces[-1].end + max(gap, 0.05), turn_start + 0.5)
        who = 1 - who


def _layout_solo(rng, supply: Supply, style: dict, line: _Timeline) -> None:
    t = float(rng.uniform(0.3, 0.7))
    while True:
        text, audio = supply.sentence(0)
        if not line.add(0, line.earliest(0, t), text, audio):
            return
        t = line.pieces[-1].end + float(rng.uniform(*SOLO_PAUSE_S))


def _layout_sparse(rng, supply: Supply, style: dict, line: _Timeline) -> None:
    t = float(rng.uniform(0.5, 1.5))
    who = 0
    while True:
        start = line.earliest(who, t)
        turn_start = start
        # Turns of about 2 s of speech keep each speaker above MIN_SPEAKER_S in every 20 s
        # window; the gaps between turns keep the total far below 90 s.
        spoken = 0.0
        for k in range(3):
            if k:
                start = line.pieces[-1].end + float(rng.uniform(*IN_TURN_PAUSE_S))
            # The very first line is the prompt's opening, as in every demo conversation.
            text, audio = supply.sentence(who) if not line.pieces else supply.short_sentence(who)
            if not line.add(who, start, text, audio):
                return
            spoken += line.pieces[-1].end - line.pieces[-1].start
            if spoken >= SPARSE_TURN_SPEECH_S:
                break
        t = max(line.pieces[-1].end + float(rng.uniform(*SPARSE_GAP_S)), turn_start + 0.5)
        who = 1 - who


LAYOUTS = {
    "dialogue": _layout_dialogue,
    "monologues": _layout_monologues,
    "solo": _layout_solo,
    "sparse": _layout_sparse,
}


def build_timeline(
    mode: str,
    rng: np.random.Generator,
    supply: Supply,
    style: dict,
    duration: float,
    sample_rate: int,
    label: str = "",
) -> tuple[list[Piece], TimelineStats]:
    """Lay out a conversation of `mode`, redrawing (seeded) until it meets its targets."""
    for attempt in range(MAX_TRIES):
        reshuffle = attempt and attempt % RESHUFFLE_EVERY == 0
        supply.reset(rng if reshuffle else None)
        line = _Timeline(duration, sample_rate)
        LAYOUTS[mode](rng, supply, style, line)
        stats = timeline_stats(line.pieces, duration)
        if accept(mode, stats, duration) and (mode != "dialogue" or clips_pass(line.pieces, duration)):
            if attempt:
                log.debug("%s: %s timeline accepted at try %d", label, mode, attempt + 1)
            return line.pieces, stats
    raise RuntimeError(
        f"demo corpus: could not lay out a {mode!r} conversation for {label or 'an interaction'} in "
        f"{MAX_TRIES} tries (last: {stats}); duration_s={duration:g} may be too short for "
        f"{SPEECH_TARGET_S:g} s of speech with this style"
    )


def make_supply(rng: np.random.Generator, plan: Plan, synth: Synth) -> Supply:
    """The sentence order of each speaker: the prompt's topic plus small talk, shuffled."""
    prompt = OPEN_PROMPT if plan.prompt_key == OPEN_PROMPT.key else _prompt(plan.prompt_key)
    generic = [s for s in GENERIC if prompt.either_or or (" or " not in s and "rather" not in s)]
    pool = list(prompt.sentences) + generic
    orders = []
    for who in range(2):
        order = [pool[k] for k in rng.permutation(len(pool))]
        orders.append([prompt.opening, *order] if who == 0 else order)
    short = [[SHORT[k] for k in rng.permutation(len(SHORT))] for _ in range(2)]
    return Supply(synth, (plan.people[0].voice, plan.people[1].voice), orders, short)


def _prompt(key: str) -> Prompt:
    return next(p for p in (*EITHER_OR_PROMPTS, OPEN_PROMPT) if p.key == key)


# --------------------------------------------------------------------------- audio, video, json


def _render_speech(pieces: list[Piece], who: int, n_samples: int, gain: float) -> np.ndarray:
    signal = np.zeros(n_samples, dtype=np.float32)
    for piece in pieces:
        if piece.speaker != who:
            continue
        begin = int(round(piece.start * piece.sample_rate))
        chunk = piece.audio[: max(0, n_samples - begin)]
        signal[begin : begin + len(chunk)] += gain * chunk
    return signal


def _to_pcm(signal: np.ndarray) -> bytes:
    return np.round(np.clip(signal, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


def write_wav(path: Path, pcm: bytes, sample_rate: int) -> None:
    """Mono 16-bit PCM, written atomically (the header holds no date, so bytes are reproducible)."""
    with atomic_path(path) as tmp, wave.open(str(tmp), "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(sample_rate)
        handle.writeframes(pcm)


def mouth_openings(
    speech: np.ndarray, sample_rate: int, fps: float, n_frames: int, height: int
) -> np.ndarray:
    """Half-height in pixels of the mouth in each frame, from the RMS envelope of `speech`."""
    per_frame = sample_rate / fps
    if per_frame.is_integer() and n_frames * int(per_frame) <= len(speech):
        block = speech[: n_frames * int(per_frame)].reshape(n_frames, int(per_frame))
        rms = np.sqrt(np.mean(np.square(block, dtype=np.float64), axis=1))
    else:
        edges = np.minimum(np.round(np.arange(n_frames + 1) * per_frame).astype(int), len(speech))
        power = np.concatenate([[0.0], np.cumsum(np.square(speech, dtype=np.float64))])
        rms = np.sqrt((power[edges[1:]] - power[edges[:-1]]) / np.maximum(np.diff(edges), 1))
    voiced = rms[rms > 1e-3]
    reference = float(np.percentile(voiced, 90)) if voiced.size else 1.0
    envelope = np.clip(rms / max(reference, 1e-6), 0.0, 1.0)
    return 1 + np.round(envelope * height * 0.1).astype(int)


def _face(person: Person, width: int, height: int, half: int) -> np.ndarray:
    """One RGB frame: background colour, a face, two eyes and a mouth `2 * half - 1` rows tall."""
    frame = np.empty((height, width, 3), dtype=np.uint8)
    frame[:] = person.colour
    frame[int(height * 0.15) : int(height * 0.9), int(width * 0.3) : int(width * 0.7)] = (224, 188, 160)
    eye = max(2, height // 20)
    ey = int(height * 0.4)
    for ex in (int(width * 0.42), int(width * 0.58)):
        frame[ey - eye // 2 : ey + eye - eye // 2, ex - eye // 2 : ex + eye - eye // 2] = (40, 30, 30)
    mouth_y = int(height * 0.7)
    rows = slice(max(0, mouth_y - half + 1), min(height, mouth_y + half))
    frame[rows, int(width * 0.42) : int(width * 0.58)] = (120, 20, 30)
    return frame


def video_frames(speech: np.ndarray, person: Person, video: dict, sample_rate: int, n_frames: int) -> bytes:
    """The camera as raw yuv420p: the mouth of each frame follows the owner's own speech."""
    width, height, fps = int(video["width"]), int(video["height"]), float(video["fps"])
    openings = mouth_openings(speech, sample_rate, fps, n_frames, height)
    looks = {int(h): yuv420p(_face(person, width, height, int(h))) for h in np.unique(openings)}
    return b"".join(looks[int(h)] for h in openings)


def _encode_mp4(path: Path, frames: bytes, pcm: bytes, video: dict, sample_rate: int, workdir: Path) -> None:
    """H.264 yuv420p + AAC, single-threaded and bit-exact so the bytes are reproducible."""
    width, height, fps = int(video["width"]), int(video["height"]), float(video["fps"])
    seconds = len(frames) / (width * height * 3 // 2) / fps
    audio = workdir / "mp4_audio.wav"
    write_wav(audio, pcm, sample_rate)
    errors = workdir / "ffmpeg.log"
    with atomic_path(path) as tmp:
        command = [
            "ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-threads", "1",
            "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", f"{width}x{height}",
            "-framerate", str(video["fps"]), "-i", "pipe:0", "-i", str(audio),
            "-map", "0:v:0", "-map", "1:a:0", "-t", f"{seconds:.6f}",
            "-c:v", "libx264", "-preset", "ultrafast", "-threads", "1", "-pix_fmt", "yuv420p",
            "-c:a", "aac", "-aac_coder", "fast", "-b:a", "32k",
            "-fflags", "+bitexact", "-flags:v", "+bitexact", "-flags:a", "+bitexact",
            "-map_metadata", "-1", str(tmp),
        ]  # fmt: skip
        code = run_with_stdin(command, frames, errors)
        if code:
            message = errors.read_text(errors="replace")[-500:]
            raise RuntimeError(f"ffmpeg failed for {path.name}: {message}")


def _participant_json(
    plan: Plan, who: int, pieces: list[Piece], rng: np.random.Generator, transcript: bool = True
) -> dict:
    own = sorted((p for p in pieces if p.speaker == who), key=lambda p: p.start)
    data: dict = {"id": plan.file_id(who)}
    if transcript:
        segments = []
        for piece in own:
            words = [
                {
                    "word": w,
                    "start": round(a, 3),
                    "end": round(b, 3),
                    "score": round(float(rng.uniform(0.55, 0.99)), 3),
                }
                for w, a, b in piece.words()
            ]
            segments.append(
                {
                    "start": round(piece.start, 3),
                    "end": round(piece.end, 3),
                    "transcript": piece.text,
                    "words": words,
                }
            )
        data["metadata:transcript"] = segments
    data["metadata:vad"] = [{"start": round(p.start, 3), "end": round(p.end, 3)} for p in own]
    return data


def _make_interaction(task: tuple[Plan, dict, str]) -> dict:
    """Lay out, synthesize and write one interaction's participant files; return its measures."""
    plan, params, root = task
    rng = np.random.default_rng([int(params["seed"]), 1, plan.index])
    sample_rate = int(params["sample_rate"])
    duration = float(params["duration_s"])
    video = params["video"]
    style = params["style"][plan.relationship]
    mode = MODES.get(plan.expected, "dialogue")
    out = Path(root)
    with tempfile.TemporaryDirectory(prefix="omnisocial-demo-") as scratch:
        workdir = Path(scratch)
        synth = Synth(sample_rate, workdir)
        supply = make_supply(rng, plan, synth)
        pieces, stats = build_timeline(
            mode, rng, supply, style, duration, sample_rate, label=f"{plan.interaction_id} ({plan.expected})"
        )
        n_samples = int(round(duration * sample_rate))
        crosstalk = 10.0 ** (float(params["crosstalk_db"]) / 20.0)
        speech = [_render_speech(pieces, who, n_samples, plan.people[who].gain) for who in range(2)]
        mics = []
        for who in range(2):
            noise = rng.normal(0.0, NOISE_RMS, n_samples).astype(np.float32)
            mics.append(speech[who] + crosstalk * speech[1 - who] + noise)
        pcm = [_to_pcm(mic) for mic in mics]
        if plan.expected == "duplicated_tracks":
            pcm[1] = pcm[0]
        if plan.expected == "desynced_tracks":
            shift = int(round(DESYNC_S * sample_rate))
            lead = rng.normal(0.0, NOISE_RMS, shift).astype(np.float32)
            pcm[1] = _to_pcm(np.concatenate([lead, mics[1][: n_samples - shift]]))
        n_frames = int(round(duration * float(video["fps"])))
        for who in range(plan.n_files):
            stem = out / plan.relative_stem(who)
            person = plan.people[who]
            wav_pcm = b"" if (plan.expected == "empty_audio" and who == 0) else pcm[who]
            write_wav(stem.with_suffix(".wav"), wav_pcm, sample_rate)
            frames_n = n_frames
            if plan.expected == "truncated_video" and who == 0:
                frames_n = int(round(TRUNCATED_SHARE * n_frames))
            frames = video_frames(speech[who], person, video, sample_rate, frames_n)
            mp4 = stem.with_suffix(".mp4")
            _encode_mp4(mp4, frames, pcm[who], video, sample_rate, workdir)
            if plan.expected == "corrupt_video" and who == 0:
                head = mp4.read_bytes()[:CORRUPT_BYTES]
                with atomic_path(mp4) as tmp:
                    tmp.write_bytes(head)
            data = _participant_json(plan, who, pieces, rng, transcript=plan.expected != "missing_transcript")
            if plan.expected == "unreadable_json" and who == 0:
                text = _json_text(data)
                write_text(stem.with_suffix(".json"), text[: len(text) // 2])
            else:
                write_json(stem.with_suffix(".json"), data)
    return {
        "interaction_id": plan.interaction_id,
        "expected": plan.expected,
        "speech_s": round(stats.speech_s, 3),
        "min_turns": stats.min_turns,
        "espeak_calls": synth.calls,
    }


def _json_text(data: dict) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------- tables


def _tables(plans: list[Plan], prompts: list[Prompt], params: dict) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng([int(params["seed"]), 2])
    prompt_rows = []
    hashes = {}
    for plan in plans:
        key = "placeholder" if plan.expected == "placeholder_prompt" else plan.prompt_key
        hashes.setdefault(key, plan.prompt_hash)
    for prompt in prompts:
        if prompt.key in hashes:
            prompt_rows.append((hashes[prompt.key], prompt.prompt_id, prompt.text, prompt.text))
    if "placeholder" in hashes:
        prompt_rows.append((hashes["placeholder"], PLACEHOLDER_PROMPT_ID, PLACEHOLDER_TEXT, PLACEHOLDER_TEXT))
    prompt_rows.sort()
    interactions = pd.DataFrame(
        {
            "": [str(k) for k in range(len(prompt_rows))],
            "prompt_hash": [r[0] for r in prompt_rows],
            "prompt_id_unique": [r[1] for r in prompt_rows],
            "participant_a_prompt_text": [r[2] for r in prompt_rows],
            "participant_b_prompt_text": [r[3] for r in prompt_rows],
            "ipc_a": "",
            "ipc_b": "",
            "interaction_type": LABEL,
        }
    )
    relationships = pd.DataFrame(
        {
            "vendor_id": [p.vendor for p in plans],
            "session_id": [p.session for p in plans],
            "relationship": [p.relationship for p in plans],
            "relationship_detail": [p.detail for p in plans],
        }
    )
    people = [(plan, person) for plan in plans for person in plan.people]
    participants = pd.DataFrame(
        {trait: [f"{v:.2f}" for v in rng.uniform(1.5, 4.8, len(people))] for trait in BIG_FIVE}
    )
    participants["vendor_id"] = [plan.vendor[1:] for plan, _ in people]
    participants["participant_id"] = [person.participant_id for _, person in people]
    genders = pd.DataFrame(
        {
            "participant_id": [person.participant_id for _, person in people],
            "gender": [p.gender for _, p in people],
        }
    )
    files = []
    for plan in plans:
        for who in range(plan.n_files):
            batch, archive = plan.locations[who]
            flags = rng.random(3) < (0.2, 0.2, 0.1)
            files.append(
                (
                    plan.file_id(who),
                    LABEL,
                    plan.split,
                    str(batch),
                    str(archive),
                    *[str(bool(f)) for f in flags],
                )
            )
    filelist = pd.DataFrame(
        files,
        columns=[
            "file_id",
            "label",
            "split",
            "batch_idx",
            "archive_idx",
            "has_annotation_1p",
            "has_annotation_3p",
            "has_imitator_movement",
        ],
    )
    truth = pd.DataFrame(
        {"interaction_id": [p.interaction_id for p in plans], "expected": [p.expected for p in plans]}
    )
    return {
        "interactions.csv": interactions,
        "relationships.csv": relationships,
        "participants.csv": participants,
        "filelist.csv": filelist,
        "participant_genders.csv": genders,
        "_demo_truth.csv": truth,
    }


# --------------------------------------------------------------------------- entry point


def _workers(n_tasks: int) -> int:
    return max(1, min(2, os.cpu_count() or 1, n_tasks))


def _pool_context():
    # fork: the children need not re-import the caller's main module (a Snakemake script).
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def generate_demo_corpus(root: Path, params: dict) -> None:
    """Write the demo corpus described by `params` (the config's `demo:` block) to `root`.

    An existing `root` is replaced only once the new corpus is complete.
    """
    params = _validate(params)
    root = Path(root)
    began = time.perf_counter()
    plans, prompts = _plan(params)
    build = root.with_name(root.name + ".tmp")
    if build.exists():
        shutil.rmtree(build)
    build.mkdir(parents=True)
    try:
        tasks = [(plan, params, str(build)) for plan in plans]
        workers = _workers(len(tasks))
        if workers == 1:
            results = [_make_interaction(task) for task in tasks]
        else:
            with ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context()) as pool:
                futures = [pool.submit(_make_interaction, task) for task in tasks]
                try:
                    results = [future.result() for future in futures]
                except BaseException:
                    pool.shutdown(wait=True, cancel_futures=True)
                    raise
        for name, frame in _tables(plans, prompts, params).items():
            write_csv(build / name, frame)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    for result in results:
        log.debug("demo %(interaction_id)s %(expected)s: %(speech_s)s s speech", result)
    old = root.with_name(root.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    if root.exists():
        root.rename(old)
    build.rename(root)
    if old.exists():
        shutil.rmtree(old)
    log.info(
        "demo corpus: %d interactions (%d built to fail) in %s, %.1f s",
        len(plans),
        len(params["failures"]),
        root,
        time.perf_counter() - began,
    )


__all__ = [
    "FAILURES",
    "GENDER_MIXES",
    "build_timeline",
    "gender_mix",
    "generate_demo_corpus",
    "merged_turns",
    "timeline_stats",
]

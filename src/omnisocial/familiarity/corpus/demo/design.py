"""The demo corpus design: ids, people, voices, file locations and the checks of the `demo:` block.

Part of `corpus.demo` (see its docstring): every site x relationship x gender composition
cell gets `candidates_per_cell` good conversations, each with two new participants, then one
interaction per entry of `failures`; every draw comes from the master seed.
"""

from __future__ import annotations

import colorsys
import json
import re
from dataclasses import dataclass, replace

import numpy as np

from omnisocial.familiarity.corpus.demo.conversations import EITHER_OR_PROMPTS, OPEN_PROMPT, Prompt
from omnisocial.familiarity.corpus.demo.voices import Voice

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

# Targets the timelines are built to meet; the per-window ones mirror the defaults of the
# `filters:` block (merged turns, min_turns 4, min_speaker 3 s) with a margin and do not
# depend on the interaction's length. The whole-interaction ones follow from
# `demo.min_total_speech_s` (`speech_targets`).
WINDOW_S = 20.0
WINDOW_STEP_S = 0.5
# The workflow's default clip settings (config `clips:`), used to check good conversations.
DEFAULT_CLIPS = {"duration_s": 20.0, "early_start_s": 5.0, "late_end_margin_s": 5.0, "snap_tolerance_s": 4.0}
TURN_GAP_S = None  # filters.turn_gap_s: a turn lasts until the other person speaks
MIN_TURNS = 4
# A good conversation's clips hold one merged turn more than the filter's default: the docs'
# example edit `filters.min_turns: 5` then keeps every good conversation, and the demo's design
# still fills (issue 49).
CLIP_TURN_SLACK = 1
MIN_SPEAKER_S = 3.5
NOISE_RMS = 0.0015  # about -56 dBFS

# The whole-interaction targets were tuned for an F5 threshold of 90 s; they scale with it.
SPEECH_MARGIN_S = 1.0  # good conversations hold this much more speech than the threshold
REFERENCE_SPEECH_S = 90.0
REFERENCE_LITTLE_SPEECH_S = (40.0, 75.0)  # too_little_speech: about half the interaction voiced
REFERENCE_STRANGER_S = (110.0, 91.0)  # a stranger conversation of 110 s holds 91 s of speech
REFERENCE_MAX_DURATION_S = 140.0  # beyond it, too_little_speech cannot stay below 75 s


@dataclass(frozen=True)
class SpeechTargets:
    """The whole-interaction targets for one `demo.min_total_speech_s` (`speech_targets`)."""

    min_total_speech_s: float  # the F5 threshold the corpus is built against
    speech_s: float  # least speech of a good conversation (and of the failures that keep F5)
    little_speech_s: tuple[float, float]  # too_little_speech's range, far below the threshold
    duration_s: tuple[float, float]  # the valid range of `demo.duration_s`


def speech_targets(min_total_speech_s: float) -> SpeechTargets:
    """The targets tuned at 90 s (91 s of speech, 40-75 s, 110-140 s), scaled to the threshold.

    too_little_speech and the longest duration scale with the threshold: every per-window
    target is a density, so their ratios to it hold at any length. The shortest duration is
    the one a stranger conversation (0.9 s gaps) needs to hold the speech target, 110/91 of it:
    the fixed 1 s margin is then covered too.
    """
    total = float(min_total_speech_s)
    speech = total + SPEECH_MARGIN_S
    # multiplied before divided, so that 90 s gives the tuned numbers exactly
    low, high = (bound * total / REFERENCE_SPEECH_S for bound in REFERENCE_LITTLE_SPEECH_S)
    shortest = speech * REFERENCE_STRANGER_S[0] / REFERENCE_STRANGER_S[1]
    longest = REFERENCE_MAX_DURATION_S * total / REFERENCE_SPEECH_S
    return SpeechTargets(total, speech, (low, high), (shortest, longest))


def gender_mix(g1: str, g2: str) -> str:
    """The gender composition of a pair: the two genders sorted and joined by '-'."""
    return "-".join(sorted((g1, g2)))


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


# --------------------------------------------------------------------------- parameters


def validate_params(params) -> dict:
    """Check the `demo:` block; return it as plain JSON types (Snakemake passes its own mappings)."""
    params = json.loads(json.dumps(params, default=dict))
    required = (
        "seed",
        "sites",
        "candidates_per_cell",
        "duration_s",
        "min_total_speech_s",
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
    _check_duration(params)
    if int(params["candidates_per_cell"]) < 0:
        raise ValueError("demo candidates_per_cell must be >= 0")
    return params


def _check_duration(params: dict) -> None:
    """demo.duration_s within the range demo.min_total_speech_s allows (`speech_targets`)."""
    total = float(params["min_total_speech_s"])
    if total <= 0:
        raise ValueError(f"demo.min_total_speech_s must be > 0, got {total:g}")
    targets = speech_targets(total)
    low, high = targets.duration_s
    duration = float(params["duration_s"])
    if not low <= duration <= high:
        raise ValueError(
            f"demo.duration_s ({duration:g}) must be within {low:.4g}-{high:.4g} s for "
            f"demo.min_total_speech_s {total:g}: a good stranger conversation needs {low:.4g} s to hold "
            f"{targets.speech_s:g} s of speech (filter F5), and too_little_speech cannot keep 4 turns "
            f"per 20 s window below {targets.little_speech_s[1]:.4g} s of speech beyond {high:.4g} s"
        )


# --------------------------------------------------------------------------- the design


def plan_corpus(params: dict) -> tuple[list[Plan], list[Prompt]]:
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

"""The demo corpus scripts: prompts, sentence banks and the sentences each speaker says in turn.

Part of `corpus.demo`. The not_either_or conversation uses `OPEN_PROMPT`, whose sentences (and
the `GENERIC` ones it keeps) say neither "rather" nor " or ".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from omnisocial.familiarity.corpus.demo.voices import Synth, Voice

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
                head = self.orders[who][:1] if is_opening(self.orders[who][0]) else []
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


def is_opening(text: str) -> bool:
    return any(text == p.opening for p in (*EITHER_OR_PROMPTS, OPEN_PROMPT))


def prompt_by_key(key: str) -> Prompt:
    return next(p for p in (*EITHER_OR_PROMPTS, OPEN_PROMPT) if p.key == key)

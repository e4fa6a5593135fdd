"""Scripted conversations and speaker names of the multi-party demo (`socialomni.demo`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Line:
    text: str
    paraphrases: tuple[str, str]


@dataclass(frozen=True)
class Topic:
    key: str
    lines: tuple[Line, ...]


def _topic(key: str, rows: list[tuple[str, str, str]]) -> Topic:
    return Topic(key, tuple(Line(text, (p1, p2)) for text, p1, p2 in rows))


TOPICS = (
    _topic(
        "weekend_hike",
        [
            (
                "So, are we still going hiking on Saturday?",
                "Is the Saturday hike still happening?",
                "Are we still on for the hike this Saturday?",
            ),
            (
                "Yes, but we should leave really early.",
                "Sure, though we need to set off early.",
                "Definitely, as long as we start out early.",
            ),
            (
                "How early are we talking, like six?",
                "What time do you mean, six in the morning?",
                "Early meaning what, around six o'clock?",
            ),
            (
                "Six sounds fine, I can drive us.",
                "Six works for me, and I will do the driving.",
                "Six is okay, I am happy to drive.",
            ),
            (
                "Great, I will bring sandwiches for everyone.",
                "Perfect, I will pack lunch for all of us.",
                "Nice, I can make sandwiches for the group.",
            ),
            (
                "Do not forget the rain jackets this time.",
                "Remember to pack rain jackets this time.",
                "Please bring the rain gear this time.",
            ),
            (
                "Right, last time we got completely soaked.",
                "True, we got drenched on the last trip.",
                "Good point, we were soaked through last time.",
            ),
            (
                "Should we ask Sam if he wants to come?",
                "Maybe we should invite Sam along too?",
                "What about asking Sam to join us?",
            ),
            (
                "Sure, but the car only has five seats.",
                "Okay, but only five people fit in the car.",
                "Fine, though there are just five seats in the car.",
            ),
            (
                "Then five of us it is, I will text him.",
                "So we are five, I will message him now.",
                "Five people then, I will send him a text.",
            ),
        ],
    ),
    _topic(
        "team_lunch",
        [
            (
                "Who wants to order lunch for the team today?",
                "Is anyone up for ordering the team lunch today?",
                "Who is going to order lunch for everyone today?",
            ),
            (
                "I can do it, what is everyone in the mood for?",
                "I will handle it, what does everybody feel like eating?",
                "Leave it to me, what do you all want?",
            ),
            (
                "Pizza again would be easy for everybody.",
                "We could just get pizza, that suits everyone.",
                "Pizza is the simple choice for the whole group.",
            ),
            (
                "We had pizza twice last week, though.",
                "But we already ate pizza two times last week.",
                "Pizza was on the menu twice last week.",
            ),
            (
                "What about that new noodle place downstairs?",
                "How about the new noodle bar downstairs?",
                "Maybe the noodle shop that just opened downstairs?",
            ),
            (
                "Good idea, they have vegetarian options too.",
                "Nice, they also do vegetarian dishes.",
                "Sounds good, and they serve vegetarian food as well.",
            ),
            (
                "Can someone check if they deliver to our floor?",
                "Could somebody find out if they bring it up to our floor?",
                "Does anyone know whether they deliver up here?",
            ),
            (
                "They do, I ordered from them on Monday.",
                "Yes, I had them deliver here on Monday.",
                "They deliver, I got food from them on Monday.",
            ),
            (
                "Perfect, send me your orders before noon.",
                "Great, give me what you want before twelve.",
                "Okay, let me have your orders by noon.",
            ),
        ],
    ),
    _topic(
        "game_night",
        [
            (
                "Are you all free for game night on Friday?",
                "Can everyone make it to game night this Friday?",
                "Is Friday game night working for all of you?",
            ),
            (
                "I am in, can we play something new this time?",
                "Count me in, could we try a new game?",
                "Yes, but let us play a different game for once.",
            ),
            (
                "I just bought a game about building trains.",
                "I recently got a new train building game.",
                "I have a new board game where you build railways.",
            ),
            (
                "How long does one round usually take?",
                "How much time does a game of it take?",
                "Is it a long game to play?",
            ),
            (
                "About an hour once everyone knows the rules.",
                "Roughly an hour when we all know how to play.",
                "Around one hour after people learn the rules.",
            ),
            (
                "Then we should start at seven, not eight.",
                "In that case let us begin at seven instead of eight.",
                "So we had better start at seven rather than eight.",
            ),
            (
                "Seven works, I will bring some snacks.",
                "Seven is fine, and I will bring snacks.",
                "Okay for seven, I can bring something to eat.",
            ),
            (
                "Please, no more of those spicy chips.",
                "Just not the really spicy chips again, please.",
                "Maybe skip the hot chips this time.",
            ),
            (
                "Fine, I will get popcorn and fruit instead.",
                "Okay, I will bring popcorn and some fruit.",
                "Alright, popcorn and fruit then.",
            ),
        ],
    ),
    _topic(
        "moving_day",
        [
            (
                "Thanks for helping me move on Sunday, everyone.",
                "I really appreciate you all helping with my move on Sunday.",
                "Thank you all for giving me a hand with the move on Sunday.",
            ),
            (
                "No problem, how many boxes do you have?",
                "Happy to help, how many boxes are there?",
                "Sure thing, how many boxes are we talking about?",
            ),
            (
                "About thirty, plus the sofa and a desk.",
                "Around thirty boxes, and also a couch and a desk.",
                "Roughly thirty, together with the sofa and a desk.",
            ),
            (
                "The sofa will not fit in my small car.",
                "My little car is too small for the sofa.",
                "There is no way the couch goes in my car.",
            ),
            (
                "I can borrow my brother's van for the day.",
                "My brother might lend me his van that day.",
                "I could get my brother's van for Sunday.",
            ),
            (
                "Great, is there a lift in the new building?",
                "Good, does the new place have an elevator?",
                "Nice, is there an elevator where you are moving?",
            ),
            (
                "Sadly no, it is on the fourth floor.",
                "Unfortunately not, and it is four floors up.",
                "No lift, I am afraid, and it is the fourth floor.",
            ),
            (
                "Then we definitely need pizza afterwards.",
                "In that case we will need pizza when we are done.",
                "So pizza after the move is a must.",
            ),
            (
                "Deal, the pizza is on me.",
                "Agreed, I will pay for the pizza.",
                "Sure, I will buy the pizza.",
            ),
        ],
    ),
)


NAMES = (
    ("Alice", "f"),
    ("Ben", "m"),
    ("Chloe", "f"),
    ("David", "m"),
    ("Emma", "f"),
    ("Hugo", "m"),
    ("Iris", "f"),
    ("Omar", "m"),
)

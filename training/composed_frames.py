"""Sentence frames put together from parts, for the TRAIN branch set (grammar.py).

A frame is a head (what is asked, with none or some of the tool's slots), then a phrasing of
each slot the head lacks, in any order, one of them sometimes before the head, with joiners and
now and then a filler word between them. That makes thousands of frames per tool where the
written frames are a dozen: a value has to be found by what it is (a time, a count, an address)
and by the words that mark it, not by the place one frame puts it.

The held-out split stays held out: a composed frame never uses a word, nor two words in a row
(a slot counts as a word), that only the other branch's frames, openers and closers use
(`banned`, computed in grammar.py from both branches, not chosen by hand), and is never one of
the other branch's frames. So "for my {label}" or "find us a table" cannot be composed when only
the held-out frames say them. Dates and times keep the branch's written notations; only sentence
frames are composed.
"""
import re

HEADS = {
    "weather": [
        "what's the weather", "what is the weather", "what's the forecast", "weather", "forecast",
        "weather forecast", "the forecast", "tell me the weather", "show me the weather", "check the weather",
        "get the weather", "get me the forecast", "I need the weather", "I want the forecast", "need the forecast",
        "how's the weather", "what will the weather be", "will it rain", "is it going to rain", "will it be sunny",
        "is it going to be hot", "how cold will it be", "how warm is it going to be", "do I need an umbrella",
        "should I pack a jacket", "is rain expected", "temperature", "what's the temperature",
        "what temperature should I expect", "weather report", "the weather outlook", "is it going to be windy",
        "storms expected", "weather check", "what should I wear", "sun or rain"],
    "timer": [
        "set a timer", "start a timer", "timer", "set timer", "new timer", "make a timer", "start the clock",
        "remind me", "ping me", "buzz me", "nudge me", "tell me", "let me know", "give me a shout", "notify me",
        "warn me", "put a timer on", "can I get a timer", "a timer please", "run a timer", "beep"],
    "currency": [
        "convert", "change", "exchange", "how much is", "what is", "what's", "what do I get for", "swap",
        "calculate", "work out", "figure out", "conversion", "I want to convert", "can I change",
        "tell me what I get for", "how much do I get for", "convert my", "exchange value for", "currency"],
    "email": [
        "email {to}", "e-mail {to}", "send an email to {to}", "mail {to}", "write to {to}",
        "write an email to {to}", "send {to} an email", "message {to}", "drop {to} a line", "drop {to} a note",
        "contact {to} by email", "shoot {to} an email", "ping {to} by email", "email to {to}", "new email to {to}",
        "get in touch with {to}", "send a note to {to}", "tell {to} by email", "an email for {to}", "{to}",
        "email", "send an email", "write an email", "new email", "mail"],
    "booking": [
        "book a table", "reserve a table", "table", "get us a table", "book", "make a reservation",
        "can we get a table", "grab a table", "reserve", "booking", "a table please", "evening reservation",
        "lunch reservation", "we want to eat", "book us in", "get a reservation", "table booking",
        "set up a reservation"],
    "unserved": [
        "play some {thing} music", "order {thing}", "call {name}", "text {name}", "translate {thing}",
        "navigate to {place}", "book a flight to {place}", "find a hotel in {place}", "buy {thing}",
        "how do I cook {thing}", "who won the match", "turn on the {thing}", "clean the {thing}",
        "what's the capital of {place}", "open the {thing} app", "draw a {thing}", "write a poem about {thing}",
        "tell me about {name}", "how old is {name}", "show me photos of {place}", "order a taxi to {place}",
        "buy tickets for {thing}", "fix my {thing}", "record a video of {thing}", "what does {name} do",
        "dim the lights", "start the car", "read me the news", "find the number of {name}", "stream {thing}"],
}

PARTS = {  # each slot's phrasings (the amount's with its currency); a slot in a head has none added
    "city": ["in {city}", "for {city}", "at {city}", "over {city}", "{city}", "near {city}", "in the city of {city}",
             "I'll be in {city}", "visiting {city}"],
    "date": ["on {date}", "for {date}", "{date}", "on the day {date}", "date {date}"],
    "minutes": ["for {minutes} minutes", "in {minutes} minutes", "{minutes} minutes", "{minutes} min",
                "{minutes} mins", "after {minutes} minutes", "{minutes} minutes from now", "in {minutes} min",
                "lasting {minutes} minutes"],
    "label": ["for the {label}", "for {label}", "about the {label}", "about {label}",
              "{label} timer", "label it {label}", "called {label}", "name it {label}",
              "for checking the {label}"],
    "amount": ["{amount} {source}", "{source} {amount}", "my {amount} {source}", "{amount} of {source}"],
    "target": ["to {target}", "in {target}", "into {target}", "for {target}", "as {target}", "in terms of {target}",
               "converted to {target}", "in {target} please"],
    "to": ["to {to}", "for {to}", "address {to}", "recipient {to}"],
    "subject": ["about {subject}", "about the {subject}", "subject {subject}", "subject: {subject}",
                "regarding {subject}", "regarding the {subject}", "on {subject}", "on the subject of {subject}",
                "with subject {subject}", "with the subject {subject}", "titled {subject}",
                "subject line {subject}", "it's about {subject}", "about our {subject}", "w/ subject {subject}"],
    "restaurant": ["at {restaurant}", "{restaurant}", "in {restaurant}", "restaurant {restaurant}",
                   "the place is {restaurant}"],
    "people": ["for {people}", "for {people} people", "{people} people", "{people} guests", "{people} of us",
               "we are {people}", "{people} persons", "we'll be {people}",
               "a table for {people}", "{people} in total"],
    "time": ["at {time}", "{time}", "for {time}", "by {time}", "at about {time}", "time {time}"],
}

SLOTS = {"weather": ["city", "date"], "timer": ["minutes", "label"], "currency": ["amount", "target"],
         "email": ["to", "subject"], "booking": ["restaurant", "people", "time"], "unserved": []}
FILLERS = ["real quick", "right now", "please", "quickly", "ok", "so", "btw", "now", "thanks in advance"]
JOINERS = [(" ", 0.6), (", ", 0.25), (" - ", 0.05), ("; ", 0.05), (". ", 0.05)]
QUESTION_WORDS = ("what", "how", "will", "is", "do", "should", "can", "who", "sun")


def grams(text):
    """The words of a frame and its pairs of consecutive words, as tuples: lowercase, punctuation
    left out, a slot a word of its own ("{city}"), and so is a possessive after one ("{city}'s")."""
    words = re.findall(r"\{[a-z0-9]+\}|[a-z]+(?:'[a-z]+)?|'[a-z]+", text.lower())
    return {(word,) for word in words} | set(zip(words, words[1:]))


class Composer:
    """Composes frames clear of `banned` words and word pairs (grams) and of `taken` frames (the
    other branch's)."""

    def __init__(self, banned, taken):
        self.banned, self.taken = set(banned), {frame.lower() for frame in taken}
        for phrases in list(HEADS.values()) + list(PARTS.values()) + [FILLERS]:
            for phrase in phrases:  # a part that could never pass would only waste draws
                if grams(phrase) & self.banned:
                    raise ValueError("%r has %s, which only the held-out frames use"
                                     % (phrase, sorted(grams(phrase) & self.banned)))

    def frame(self, rng, tool):
        """A frame of `tool` with every one of its slots once; never one of `taken`, nor with a
        banned word or pair where two pieces meet ("{city}", "looking")."""
        while True:
            head = rng.choice(HEADS[tool])
            parts = [rng.choice(PARTS[slot]) for slot in SLOTS[tool] if "{" + slot + "}" not in head]
            rng.shuffle(parts)
            if parts and rng.random() < 0.1:
                parts[-1] = "(" + parts[-1] + ")"
            pieces = [head] + parts
            if parts and rng.random() < 0.25:  # one part before the head: "on {date}, will it rain"
                pieces = [parts[0], head] + parts[1:]
            if rng.random() < 0.15:
                pieces.insert(pieces.index(head) + 1, rng.choice(FILLERS))
            text = pieces[0]
            for piece in pieces[1:]:
                joiner = rng.choices([j for j, _ in JOINERS], [w for _, w in JOINERS])[0]
                if joiner == " " and text.endswith("{subject}"):  # a subject's last word must not run on
                    joiner = ", "
                text += joiner + (piece[0].upper() + piece[1:] if joiner == ". " else piece)
            text = text[0].upper() + text[1:]
            question = head.split()[0].lower() in QUESTION_WORDS and pieces[0] == head
            text += "?" if question else rng.choice([".", "", "!"])
            if text.lower() not in self.taken and not grams(text) & self.banned:
                return text

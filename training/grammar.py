"""The request grammar of the bundled model's data: many phrasings per tool, values drawn from open
distributions so the model must copy them from the request, and requests no tool serves.

Two branch sets are written separately: TRAIN (what training sees) and UNSEEN (the held-out split
of unseen phrasings). They share no sentence frame, opener, politeness form or value pool: an
UNSEEN request has a frame the model never saw, filled with values it never saw (names, places,
subjects and labels come from syllable inventories and word lists disjoint from TRAIN's).
Dates and times are written in notations both sets use (month names and abbreviations, ordinals,
ISO, month/day, 12- and 24-hour clocks), which UNSEEN arranges in ways TRAIN never does: what a
notation never seen means (is 5/6 May 6 or June 5?) cannot be learned from requests.

Every generator returns (prompt, call) where call is {"name": ..., "arguments": {...}} or None for a
request no tool serves (answered with REFUSAL).
"""
import copy
import json

import composed_frames

REFUSAL = "Sorry, none of my tools can do that."

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
CURRENCIES = {"USD": ["dollars", "US dollars", "bucks"], "EUR": ["euros", "euro"], "GBP": ["pounds", "british pounds"],
              "JPY": ["yen"], "CHF": ["swiss francs"], "CAD": ["canadian dollars"], "AUD": ["australian dollars"],
              "SEK": ["swedish kronor"], "NOK": ["norwegian kroner"], "INR": ["rupees"], "MXN": ["pesos"],
              "BRL": ["reais"], "CNY": ["yuan"], "KRW": ["won"], "PLN": ["zloty"], "ZAR": ["rand"]}


class Branch:
    """One side of the split: its syllables, word lists, frames and surface variations; `avoid`:
    the other branch's top-level domains, which this one's open ones never spell."""

    def __init__(self, name, onsets, nuclei, codas, words, labels, domains, tlds, frames, openers, closers,
                 alphabet_share=0.0, avoid=()):
        self.name, self.onsets, self.nuclei, self.codas = name, onsets, nuclei, codas
        self.alphabet_share, self.avoid = alphabet_share, set(avoid)
        self.words, self.labels, self.domains, self.tlds = words, labels, domains, tlds
        self.frames, self.openers, self.closers = frames, openers, closers
        self.composer, self.composed_share = None, 0.0  # composed frames (composed_frames.py): TRAIN's

    def frame(self, rng, tool):
        """One of the branch's written frames of `tool`, or composed_share of the time a composed one."""
        if self.composer and self.composed_share and rng.random() < self.composed_share:
            return self.composer.frame(rng, tool)
        return rng.choice(self.frames[tool])

    def syllable(self, rng):
        if rng.random() < self.alphabet_share:
            return alphabet_syllable(rng)
        return rng.choice(self.onsets) + rng.choice(self.nuclei) + rng.choice(self.codas)

    def syllables(self, rng, low, high):
        return "".join(self.syllable(rng) for _ in range(rng.randint(low, high)))

    def proper_name(self, rng):
        return self.syllables(rng, 2, 3).capitalize()

    def place(self, rng):
        name = self.proper_name(rng)
        return rng.choice([name, name, name + " " + rng.choice(["City", "Bay", "Falls", "Springs", "Harbor"])])

    def restaurant(self, rng):
        return rng.choice([self.proper_name(rng) + "'s", "The " + rng.choice(self.words).capitalize() + " "
                           + rng.choice(self.words).capitalize(), "Casa " + self.proper_name(rng),
                           self.proper_name(rng) + " " + rng.choice(["Grill", "Kitchen", "Bistro", "Diner", "House"])])

    def email(self, rng):
        user = self.syllables(rng, 1, 3).lower()
        if rng.random() < 0.3:
            user += rng.choice([".", "_"]) + self.syllables(rng, 1, 2).lower()
        if rng.random() < 0.2:
            user += str(rng.randint(1, 99))
        if rng.random() < 0.5 * (1 - self.alphabet_share):  # the more open a branch's names, the fewer list domains
            return "%s@%s" % (user, rng.choice(self.domains))
        return "%s@%s.%s" % (user, self.syllables(rng, 1, 2).lower(), self.tld(rng))

    def tld(self, rng):
        """A top-level domain: one of the branch's, or (alphabet_share of the time) two to four
        letters of the whole alphabet, never one of `avoid` (the other branch's), so that the end
        of an address is copied from the request like the rest of it, not recalled from a list."""
        if rng.random() >= self.alphabet_share:
            return rng.choice(self.tlds)
        while True:
            tld = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 4)))
            if tld not in self.avoid:
                return tld

    def word(self, rng):
        """A word of the branch's list, or (half the time) one made from its syllables: the pool is
        open, so a label or subject has to be copied from the request, not recalled."""
        return rng.choice(self.words) if rng.random() < 0.5 else self.syllables(rng, 1, 2).lower()

    def subject(self, rng):
        return " ".join(self.word(rng) for _ in range(rng.randint(1, 3)))

    def surface(self, rng, frame, slots):
        """A frame as people type it: politeness around it, sometimes all lowercase, sometimes without
        its final punctuation. Only the frame's own words change: the values go in afterwards as they
        are, so the answer copies them exactly."""
        opener, closer = rng.choice(self.openers), rng.choice(self.closers)
        if opener and not opener.rstrip().endswith((".", "!")) and frame[:1].isupper() and frame[1:2].islower():
            frame = frame[0].lower() + frame[1:]
        end = frame[-1] if frame[-1] in ".?!" else ""
        text = (opener + frame[:len(frame) - len(end)] + closer.rstrip(".") + end).strip()
        if rng.random() < 0.25:
            text = text.lower()
        if rng.random() < 0.3:
            text = text.rstrip(".?!")
        return text.format(**slots)


CONSONANTS, VOWELS = "bcdfghjklmnpqrstvwxyz", "aeiouy"


def alphabet_syllable(rng):
    """A syllable from the whole alphabet: one or two consonants, one or two vowels, then none, one
    or two consonants, each letter drawn uniformly. Every letter and letter pair then occurs in
    training's names, so copying is learned for any spelling, not for one inventory's pieces."""
    pick = lambda letters, low, high: "".join(rng.choice(letters) for _ in range(rng.randint(low, high)))  # noqa: E731
    return pick(CONSONANTS, 1, 2) + pick(VOWELS, 1, 2) + pick(CONSONANTS, 0, 2)


def number_text(rng, n):
    return NUMBER_WORDS[n] if n < len(NUMBER_WORDS) and rng.random() < 0.3 else str(n)


def spoken_date(rng, month, day, formats):
    ordinal = "%d%s" % (day, "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th"))
    name = MONTHS[month - 1]
    return rng.choice(formats).format(month=name, mon=name[:3], day=day, ordinal=ordinal, iso="2026-%02d-%02d" % (month, day),
                                      slash="%d/%d" % (month, day))


def clock(rng, formats):
    """A spoken time of day and its 24-hour form; a time with minutes needs a format that shows them."""
    hour, minute = rng.randint(11, 22), rng.choice([0, 5, 10, 15, 20, 30, 40, 45, 50])
    twelve = hour - 12 if hour > 12 else hour
    usable = formats if minute == 0 else [f for f in formats if "{h12}" in f or "{h24}" in f]
    text = rng.choice(usable).format(h24="%02d:%02d" % (hour, minute), h12="%d:%02d" % (twelve, minute), hour=twelve,
                                     ampm="pm" if hour >= 12 else "am")
    return text, "%02d:%02d" % (hour, minute)


def fill(rng, branch, tool, slots):
    return branch.surface(rng, branch.frame(rng, tool), slots)


def weather(rng, b):
    city, month, day = b.place(rng), rng.randint(1, 12), rng.randint(1, 28)
    date = spoken_date(rng, month, day, b.frames["date"])
    return fill(rng, b, "weather", {"city": city, "date": date}), \
        {"name": "get_weather", "arguments": {"city": city, "date": "2026-%02d-%02d" % (month, day)}}


def timer(rng, b):
    minutes = rng.choice([rng.randint(1, 20), rng.randint(1, 120)])
    label = rng.choice(b.labels) if rng.random() < 0.4 else b.word(rng)
    return fill(rng, b, "timer", {"minutes": number_text(rng, minutes), "label": label}), \
        {"name": "set_timer", "arguments": {"minutes": minutes, "label": label}}


def currency(rng, b):
    amount = rng.choice([rng.randint(1, 9999), round(rng.uniform(1, 999), 2)])
    source, target = rng.sample(sorted(CURRENCIES), 2)
    spell = lambda code: code if rng.random() < 0.6 else rng.choice(CURRENCIES[code])  # noqa: E731
    return fill(rng, b, "currency", {"amount": amount, "source": spell(source), "target": spell(target)}), \
        {"name": "convert_currency", "arguments": {"amount": amount, "from": source, "to": target}}


def email(rng, b):
    address, subject = b.email(rng), b.subject(rng)
    return fill(rng, b, "email", {"to": address, "subject": subject}), \
        {"name": "send_email", "arguments": {"to": address, "subject": subject}}


def booking(rng, b):
    restaurant, people = b.restaurant(rng), rng.randint(1, 12)
    spoken, time = clock(rng, b.frames["time"])
    return fill(rng, b, "booking", {"restaurant": restaurant, "people": number_text(rng, people), "time": spoken}), \
        {"name": "book_table", "arguments": {"restaurant": restaurant, "people": people, "time": time}}


def unserved(rng, b):
    slots = {"thing": rng.choice(b.words), "name": b.proper_name(rng), "place": b.place(rng)}
    return fill(rng, b, "unserved", slots), None


TOOLS = [weather, timer, currency, email, booking]
REPEAT_FRAMES = ["Repeat after me: {text}", "Say {text}", "Echo: {text}", "Copy this: {text}"]


def repeat(rng, b, items=(1, 6)):
    """A copying drill: a run of `items` (low, high) of the branch's names, words, numbers and
    addresses, answered as it is. Copying a value from anywhere in a request is what every tool
    call needs; the drill teaches it with no tool around it (the answer is the text, so `Say ...`
    requests are a trained skill)."""
    items = [rng.choice([b.proper_name, b.email, b.word, lambda r: str(r.randint(0, 99999))])(rng)
             for _ in range(rng.randint(*items))]
    text = " ".join(items)
    return rng.choice(REPEAT_FRAMES).format(text=text), text


def request(rng, branch, refusal_share=0.1, repeat_share=0.0, repeat_items=(1, 6), composed_share=0.0):
    """A (prompt, answer text, task) triple of `branch`; composed_share: the share of its sentence
    frames that are composed (Branch.frame), where the branch has a composer."""
    if composed_share:
        branch = copy.copy(branch)
        branch.composed_share = composed_share
    if repeat_share and rng.random() < repeat_share:
        prompt, text = repeat(rng, branch, repeat_items)
        return prompt, text, "repeat"
    make = unserved if rng.random() < refusal_share else rng.choice(TOOLS)
    prompt, call = make(rng, branch)
    if call is None:
        return prompt, REFUSAL, "refusal"
    return prompt, json.dumps(call, separators=(", ", ": ")), call["name"]


TRAIN = Branch(
    "train",
    onsets=["b", "d", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st", "tr", "gr"],
    nuclei=["a", "e", "i", "o", "u", "ai", "ou"],
    codas=["", "", "n", "r", "l", "s", "m"],
    words=["budget", "lunch", "project", "travel", "report", "design", "release", "goals", "hiring", "client",
           "invoice", "garden", "concert", "visa", "rent", "homework", "recipe", "launch", "party", "roadmap",
           "contract", "survey", "training", "backup", "offsite", "payroll", "demo", "audit", "workshop", "trip"],
    labels=["tea", "pasta", "laundry", "meeting", "break", "oven", "workout", "call", "bus", "nap", "rice", "eggs",
            "pizza", "yoga", "stretch", "bread"],
    domains=["example.com", "mail.org", "work.net"], tlds=["com", "org", "net", "io"],
    frames={
        "weather": ["What's the weather in {city} on {date}?", "Will it rain in {city} on {date}?",
                    "Weather forecast for {city}, {date}", "How warm will {city} be on {date}?",
                    "Tell me the weather for {date} in {city}.", "{city} weather {date}",
                    "What will the weather be like on {date} in {city}?", "Forecast {date} {city}",
                    "Is it going to be sunny in {city} on {date}?", "Check the weather in {city} for {date}.",
                    "Do I need an umbrella in {city} on {date}?", "What temperature will it be in {city} on {date}?",
                    "{date}: weather in {city}?", "I'm visiting {city} on {date}. Is it going to be cold?",
                    "Show me the forecast for {city} on {date}.", "How's the weather looking for {city} on {date}?"],
        "timer": ["Set a timer for {minutes} minutes for the {label}.", "Timer: {minutes} min, {label}",
                  "Remind me about the {label} in {minutes} minutes.", "Start a {minutes} minute {label} timer.",
                  "In {minutes} minutes tell me the {label} is done.", "{label} timer {minutes} mins",
                  "Set {minutes} minutes on the clock for the {label}.", "Ping me in {minutes} min about the {label}.",
                  "Give me {minutes} minutes for the {label}.", "{minutes} minute timer for {label}",
                  "Let me know in {minutes} minutes, the {label} needs checking.", "Time the {label}: {minutes} minutes.",
                  "Can I get a timer? {minutes} minutes, {label}.", "Buzz me after {minutes} minutes for the {label}."],
        "currency": ["Convert {amount} {source} to {target}.", "How much is {amount} {source} in {target}?",
                     "{amount} {source} to {target}", "What do I get for {amount} {source} in {target}?",
                     "Change {amount} {source} into {target}.", "{amount} {source} in {target}?",
                     "Exchange {amount} {source} for {target}.", "Convert {source} {amount} to {target}",
                     "How many {target} do I get for {amount} {source}?", "{amount} {source} = ? {target}",
                     "I need {target}. How much for {amount} {source}?", "Work out {amount} {source} in {target}."],
        "email": ["Email {to} about the {subject}.", "Send a mail to {to} with subject {subject}.",
                  "Write to {to}: {subject}", "Email {to} regarding {subject}.",
                  "Drop {to} a note about the {subject}.", "Mail {to}, subject {subject}",
                  "Shoot an email to {to} on {subject}.", "Send {to} an email about the {subject}.",
                  "New email to {to}, it's about {subject}.", "Email {to}. Subject: {subject}",
                  "Can you message {to} by email about {subject}?", "{subject}: email {to}",
                  "Get in touch with {to} by mail about the {subject}.", "Email {to} on the subject of {subject}.",
                  "Write an email to {to} (subject: {subject})", "Send {to} a note, subject line {subject}",
                  "Email to {to} - {subject}", "Mail {to} w/ subject {subject}"],
        "booking": ["Book a table at {restaurant} for {people} at {time}.", "Reserve {restaurant} for {people} people at {time}.",
                    "Table for {people} at {restaurant}, {time}", "Get us a table for {people} at {restaurant} at {time}.",
                    "{restaurant}, {people} guests, {time}", "Book {restaurant} at {time} for {people}.",
                    "Reservation at {restaurant} for {people} at {time}.", "A table at {restaurant} at {time}, {people} of us.",
                    "Make a booking: {restaurant}, {time}, {people} people.", "{people} people at {restaurant} at {time} please",
                    "I want to eat at {restaurant} at {time} with {people} friends.",
                    "Book us into {restaurant} for {time}, we are {people}."],
        "unserved": ["Play some jazz.", "Order a {thing} online.", "Call {name}.", "Turn off the lights in the {thing} room.",
                     "Who won the game last night?", "Translate {thing} into French.", "Navigate to {place}.",
                     "Tell me a joke about {thing}.", "Buy tickets to {place}.", "What is the capital of {place}?",
                     "Book a flight to {place}.", "Find a hotel in {place}.", "Text {name} that I'm late.",
                     "Add {thing} to my shopping list.", "How tall is {name}?", "Open the {thing} app.",
                     "Lock the front door.", "What's on my calendar tomorrow?", "How do I cook {thing}?",
                     "Call a taxi to {place}.", "Turn up the volume.", "Where does {name} live?",
                     "Write a poem about {thing}.", "What time is it in {place}?"],
        "date": ["{month} {day}", "{day} {month}", "{iso}", "{mon} {day}", "the {ordinal} of {month}", "{slash}"],
        "time": ["{h24}", "{h12} {ampm}", "{hour}{ampm}", "{hour} {ampm}"],
    },
    openers=["", "", "", "Please ", "Can you ", "Could you ", "Hey, ", "Hi! ", "Quick one: "],
    closers=["", "", "", " please", ", thanks", " thank you", "!"],
    alphabet_share=0.5,
    avoid=["dev", "co", "me", "us"],  # UNSEEN's top-level domains
)

UNSEEN = Branch(
    "unseen",
    onsets=["f", "g", "h", "j", "w", "y", "ch", "sh", "kl", "pl", "fr", "th"],
    nuclei=["a", "e", "i", "o", "u", "ea", "ie"],
    codas=["", "", "x", "k", "th", "nd", "ck"],
    words=["newsletter", "insurance", "wedding", "renovation", "holiday", "onboarding", "migration", "keynote",
           "fundraiser", "retreat", "inventory", "webinar", "picnic", "deadline", "checkup"],
    labels=["soup", "cookies", "potatoes", "steak", "plank", "meditation", "dishes", "dryer", "parking", "medicine"],
    domains=["inbox.dev", "post.co"], tlds=["dev", "co", "me", "us"],
    frames={
        "weather": ["I'm heading to {city} on {date}, what will the weather be?", "Any chance of snow in {city} on {date}?",
                    "Look up {city}'s forecast for {date}.", "On {date}, how is the weather in {city} looking?",
                    "Give me the {city} forecast, {date}"],
        "timer": ["Count down {minutes} minutes for my {label}.", "I need a {minutes}-minute timer, it's for the {label}.",
                  "Alert me when {minutes} minutes have passed ({label}).", "{label}: wake me in {minutes} minutes"],
        "currency": ["I have {amount} {source}, what is that in {target}?", "Turn {amount} {source} into {target} for me.",
                     "What's {amount} {source} worth in {target}?", "Rate check: {amount} {source} -> {target}"],
        "email": ["Compose a message to {to}, topic: {subject}.", "Let {to} know about the {subject} by email.",
                  "Fire off an email to {to} concerning {subject}.", "Reach out to {to} via email re {subject}"],
        "booking": ["We're {people}, find us seats at {restaurant} around {time}.", "Hold a table at {restaurant}, {time}, party of {people}.",
                    "Dinner at {restaurant} at {time} for {people}, can you book it?", "Seats for {people} at {restaurant} at {time}"],
        "unserved": ["Sing me a song about {thing}.", "Water the plants in {place}.", "Who is {name}?",
                     "Schedule a haircut for {name}.", "Paint the {thing} blue."],
        "date": ["{month} the {ordinal}", "{ordinal} {month}", "{mon}. {day}"],
        "time": ["{h12}{ampm}", "{h24} hrs"],
    },
    openers=["", "", "Kindly ", "Would you ", "I'd like you to ", "Yo, ", "Hello there. "],
    closers=["", "", " asap", ", cheers", " if you can", "."],
)


def frame_grams(branch):
    """The words and pairs of consecutive words of a branch's sentence frames, openers and closers
    (composed_frames.grams)."""
    texts = [frame for frames in branch.frames.values() for frame in frames] + branch.openers + branch.closers
    return set().union(*(composed_frames.grams(text) for text in texts))


TRAIN.composer = composed_frames.Composer(
    banned=frame_grams(UNSEEN) - frame_grams(TRAIN),
    taken=[frame for tool, frames in UNSEEN.frames.items() if tool not in ("date", "time") for frame in frames])

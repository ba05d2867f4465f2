#!/usr/bin/env python3
"""Writes the bundled model's data: natural-language requests mapped to JSON tool calls over a
handful of tools with typed arguments, plus multi-digit addition (a skill with a checkable
answer). Deterministic from --seed. The test split holds (template, entity) combinations that
never appear in training.

usage: make_data.py OUT_DIR [--seed N] [--train N] [--test N]
writes OUT_DIR/train.jsonl and OUT_DIR/test.jsonl, one {"prompt": ..., "answer": ...} per line.
"""
import argparse
import json
import os
import random

CITIES = ["Paris", "London", "Tokyo", "Berlin", "Madrid", "Rome", "Oslo", "Lisbon", "Cairo", "Lima",
          "Seoul", "Dublin", "Vienna", "Prague", "Boston", "Denver", "Austin", "Sydney", "Toronto", "Mumbai",
          "Nairobi", "Quito", "Hanoi", "Warsaw", "Athens", "Zurich", "Helsinki", "Bogota", "Manila", "Dakar"]
NAMES = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory",
         "oscar", "peggy", "rupert", "sybil", "trent", "victor", "walter", "yara", "zoe"]
DOMAINS = ["example.com", "mail.org", "work.net", "corp.io"]
SUBJECTS = ["budget review", "team lunch", "project update", "travel plans", "weekly report", "design notes",
            "release schedule", "quarterly goals", "hiring plan", "client meeting"]
LABELS = ["tea", "pasta", "laundry", "meeting", "break", "oven", "workout", "call", "bus", "nap"]
CURRENCIES = ["USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "SEK", "NOK", "INR"]
RESTAURANTS = ["Luigi's", "The Olive", "Sakura", "Blue Door", "Casa Rosa", "Green Leaf", "Le Petit",
               "Golden Wok", "Harbor Grill", "Mint House"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


def date_value(rng):
    month, day = rng.randint(1, 12), rng.randint(1, 28)
    iso = "2026-%02d-%02d" % (month, day)
    spoken = rng.choice(["%s %d" % (MONTHS[month - 1], day), "%d %s" % (day, MONTHS[month - 1]), iso])
    return iso, spoken


def weather(rng):
    city = rng.choice(CITIES)
    iso, spoken = date_value(rng)
    templates = ["What's the weather in {city} on {date}?", "Will it rain in {city} on {date}?",
                 "Weather forecast for {city}, {date}", "How warm is it going to be in {city} on {date}?",
                 "Tell me the weather for {date} in {city}."]
    return rng.randrange(len(templates)), templates, {"city": city, "date": spoken}, \
        {"name": "get_weather", "arguments": {"city": city, "date": iso}}


def timer(rng):
    minutes, label = rng.randint(1, 120), rng.choice(LABELS)
    templates = ["Set a timer for {minutes} minutes for the {label}.", "Timer: {minutes} min, {label}",
                 "Remind me about the {label} in {minutes} minutes.", "Start a {minutes} minute {label} timer.",
                 "In {minutes} minutes tell me the {label} is done."]
    return rng.randrange(len(templates)), templates, {"minutes": minutes, "label": label}, \
        {"name": "set_timer", "arguments": {"minutes": minutes, "label": label}}


def currency(rng):
    amount = rng.choice([rng.randint(1, 5000), round(rng.uniform(1, 999), 2)])
    source, target = rng.sample(CURRENCIES, 2)
    templates = ["Convert {amount} {source} to {target}.", "How much is {amount} {source} in {target}?",
                 "{amount} {source} to {target} please", "What do I get for {amount} {source} in {target}?",
                 "Change {amount} {source} into {target}."]
    return rng.randrange(len(templates)), templates, {"amount": amount, "source": source, "target": target}, \
        {"name": "convert_currency", "arguments": {"amount": amount, "from": source, "to": target}}


def email(rng):
    address = "%s@%s" % (rng.choice(NAMES), rng.choice(DOMAINS))
    subject = rng.choice(SUBJECTS)
    templates = ["Email {to} about the {subject}.", "Send a mail to {to} with subject {subject}.",
                 "Write to {to}: {subject}", "Please email {to} regarding the {subject}.",
                 "Drop {to} a note about the {subject}."]
    return rng.randrange(len(templates)), templates, {"to": address, "subject": subject}, \
        {"name": "send_email", "arguments": {"to": address, "subject": subject}}


def booking(rng):
    restaurant, people = rng.choice(RESTAURANTS), rng.randint(1, 12)
    hour, minute = rng.randint(11, 22), rng.choice([0, 15, 30, 45])
    time = "%02d:%02d" % (hour, minute)
    templates = ["Book a table at {restaurant} for {people} at {time}.",
                 "Reserve {restaurant} for {people} people at {time}.", "Table for {people} at {restaurant}, {time}",
                 "Can you get us a table for {people} at {restaurant} at {time}?",
                 "{restaurant}, {people} guests, {time} please"]
    return rng.randrange(len(templates)), templates, {"restaurant": restaurant, "people": people, "time": time}, \
        {"name": "book_table", "arguments": {"restaurant": restaurant, "people": people, "time": time}}


def addition(rng):
    a, b = rng.randint(0, 9999), rng.randint(0, 9999)
    templates = ["What is {a} + {b}?", "Add {a} and {b}.", "{a} plus {b}", "Compute the sum of {a} and {b}.",
                 "How much is {a} + {b}?"]
    return rng.randrange(len(templates)), templates, {"a": a, "b": b}, \
        {"name": "answer", "arguments": {"value": a + b}}


TASKS = [weather, timer, currency, email, booking, addition]


def example(rng):
    task = rng.choice(TASKS)
    index, templates, slots, call = task(rng)
    prompt = templates[index].format(**slots)
    answer = json.dumps(call, separators=(", ", ": "))
    return {"task": call["name"], "prompt": prompt, "answer": answer}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--train", type=int, default=60000)
    parser.add_argument("--test", type=int, default=600)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    test, seen = [], set()
    while len(test) < args.test:
        e = example(rng)
        if e["prompt"] not in seen:
            seen.add(e["prompt"])
            test.append(e)
    train = []
    while len(train) < args.train:
        e = example(rng)
        if e["prompt"] not in seen:  # the test prompts never appear in training
            train.append(e)
    os.makedirs(args.out, exist_ok=True)
    for name, rows in (("train", train), ("test", test)):
        with open(os.path.join(args.out, name + ".jsonl"), "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()

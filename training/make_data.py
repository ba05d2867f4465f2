#!/usr/bin/env python3
"""Writes the bundled model's data from the request grammar (grammar.py): requests as people phrase
them, mapped to JSON tool calls over five tools, and requests no tool serves, answered with a short
refusal. Deterministic from --seed.

Three files, one {"task", "prompt", "answer"} per line:
- train.jsonl: the TRAIN branch set (with --composed-share, also frames composed from parts);
- test.jsonl: held out from the same branch set (its phrasings and value pools), prompts never in
  training: the in-template split;
- unseen.jsonl: the UNSEEN branch set, whose sentence frames, politeness forms and value pools never
  occur in training: the unseen-template split.

usage: make_data.py OUT_DIR [--seed N] [--train N] [--test N] [--unseen N]
"""
import argparse
import json
import os
import random

import grammar


def rows(rng, branch, count, exclude):
    out = []
    while len(out) < count:
        prompt, answer, task = grammar.request(rng, branch)
        if prompt not in exclude:
            exclude.add(prompt)
            out.append({"task": task, "prompt": prompt, "answer": answer})
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--train", type=int, default=100000)
    parser.add_argument("--test", type=int, default=600)
    parser.add_argument("--unseen", type=int, default=600)
    parser.add_argument("--repeat-share", type=float, default=0.0,
                        help="share of the training requests that are copying drills (grammar.repeat)")
    parser.add_argument("--repeat-items", default="1-6",
                        help="LOW-HIGH values per copying drill (the curriculum starts with 1-1, then 1-3)")
    parser.add_argument("--composed-share", type=float, default=0.0,
                        help="share of the training requests' sentence frames that are composed "
                             "(composed_frames.py; copying drills have none); the held-out splits keep the written "
                             "frames")
    args = parser.parse_args()
    items = tuple(int(n) for n in args.repeat_items.split("-"))
    rng = random.Random(args.seed)
    seen = set()
    test = rows(rng, grammar.TRAIN, args.test, seen)
    unseen = rows(rng, grammar.UNSEEN, args.unseen, seen)
    train = []
    while len(train) < args.train:  # repeats allowed, but never a held-out prompt
        prompt, answer, task = grammar.request(rng, grammar.TRAIN, repeat_share=args.repeat_share,
                                               repeat_items=items, composed_share=args.composed_share)
        if prompt not in seen:
            train.append({"task": task, "prompt": prompt, "answer": answer})
    os.makedirs(args.out, exist_ok=True)
    for name, split in (("train", train), ("test", test), ("unseen", unseen)):
        with open(os.path.join(args.out, name + ".jsonl"), "w") as f:
            for row in split:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()

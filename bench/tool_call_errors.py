#!/usr/bin/env python3
"""What a model's wrong answers on a tool-call split are, which unmask-quality only counts: each
request generated through the Python bindings (chat template, low-confidence decoding, one
position per step), the wrong answers sorted into kinds (not JSON, wrong tool, a right tool with
wrong values, a refused call, a refusal answered otherwise), the wrong values counted per argument,
and the first few of each kind printed.

usage: UNMASK_LIBRARY_PATH=build/capi/libunmask.so /usr/bin/python3 bench/tool_call_errors.py MODEL SPLIT.jsonl
       [--limit N] [--gen-length 64] [--examples 4]
"""
import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "python"))
import unmask  # noqa: E402

REFUSAL_PREFIX = "Sorry"


def kind_of(row, answer):
    """The kind of a wrong answer, and the arguments it got wrong."""
    try:
        got = json.loads(answer)
    except ValueError:
        got = None
    got = got if isinstance(got, dict) else None
    if row["task"] == "refusal":
        return ("refusal answered with a call" if got else "refusal misspelled"), []
    if got is None:
        return ("refused a call" if answer.startswith(REFUSAL_PREFIX) else "not JSON"), []
    want = json.loads(row["answer"])
    if got.get("name") != want["name"]:
        return "wrong tool", []
    arguments = got.get("arguments") if isinstance(got.get("arguments"), dict) else {}
    return "wrong values", [row["task"] + "." + k for k, v in want["arguments"].items() if arguments.get(k) != v]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("split")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--gen-length", type=int, default=128)
    parser.add_argument("--examples", type=int, default=4)
    args = parser.parse_args()
    try:
        with open(args.split) as f:
            rows = [json.loads(line) for line in f]
        for row in rows:
            if not all(isinstance(row.get(key), str) for key in ("task", "prompt", "answer")):
                raise ValueError("a line without a task, a prompt and an answer")
    except (OSError, ValueError) as e:
        raise SystemExit("tool_call_errors.py: %s: %s" % (args.split, e))
    rows = rows[:args.limit] if args.limit else rows
    kinds, fields, exact = collections.Counter(), collections.Counter(), collections.Counter()
    tasks = collections.Counter(row["task"] for row in rows)
    try:
        model = unmask.Model.load(args.model)
    except unmask.UnmaskError as e:
        raise SystemExit("tool_call_errors.py: %s" % e)
    with model:
        for row in rows:
            answer = model.generate(row["prompt"], gen_length=args.gen_length).text.strip()
            if answer == row["answer"]:
                exact[row["task"]] += 1
                continue
            kind, wrong = kind_of(row, answer)
            kinds[kind] += 1
            fields.update(wrong)
            if kinds[kind] <= args.examples:
                print("%s: %s\n  want %s\n  got  %s" % (kind, row["prompt"], row["answer"], answer))
    print("\nexact by task: " + ", ".join("%s %d/%d" % (t, exact[t], n) for t, n in sorted(tasks.items())))
    print("wrong answers: " + ", ".join("%s %d" % item for item in kinds.most_common()))
    print("wrong values by argument: " + ", ".join("%s %d" % item for item in fields.most_common()))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Trains a byte-level BPE tokenizer (--vocab 260: characters, no merges, the bundled model's) on the
training split and writes it as a
Hugging Face tokenizer.json (a Split pre-tokenizer, ByteLevel bytes, BPE merges, special tokens),
so the bundled model runs through the same tokenizer code as real models. Deterministic: ties
between equally frequent pairs go to the lexicographically smallest.

usage: train_tokenizer.py DATA_DIR OUT_JSON [--vocab N]
"""
import argparse
import collections
import json
import re

# Words, single digits (so numbers tokenize digit by digit), runs of punctuation, runs of spaces.
# No piece carries a leading space: a value is the same tokens in the request (` Lisbon`) as in the
# JSON answer (`"Lisbon"`), so copying a value is token for token. With GPT-2's leading-space words
# the two spellings are different tokens, often split differently.
PATTERN = r"[A-Za-z]+|[0-9]|[^\sA-Za-z0-9]+|\s+"
SPECIAL_TOKENS = ["<|endoftext|>", "<|user|>", "<|assistant|>", "<|mask|>"]


def byte_to_unicode():
    """GPT-2's reversible map from bytes to printable characters (what ByteLevel uses)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    characters = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            characters.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, characters)}


def train(texts, vocab_size):
    to_unicode = byte_to_unicode()
    words = collections.Counter()
    for text in texts:
        for piece in re.findall(PATTERN, text):
            words[tuple(to_unicode[b] for b in piece.encode("utf-8"))] += 1
    vocab = {to_unicode[b]: i for i, b in enumerate(sorted(to_unicode))}
    merges = []
    words = {w: c for w, c in words.items()}
    while len(vocab) + len(SPECIAL_TOKENS) < vocab_size:
        pairs = collections.Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += count
        if not pairs:
            break
        best = min(pairs.items(), key=lambda item: (-item[1], item[0]))[0]
        merged = best[0] + best[1]
        merges.append(list(best))
        vocab[merged] = len(vocab)
        updated = {}
        for word, count in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(merged)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            updated[tuple(out)] = updated.get(tuple(out), 0) + count
        words = updated
    return vocab, merges


def tokenizer_json(vocab, merges):
    added = []
    for token in SPECIAL_TOKENS:
        vocab[token] = len(vocab)
        added.append({"id": vocab[token], "content": token, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": True})
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": PATTERN}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("out")
    parser.add_argument("--vocab", type=int, default=1024)
    args = parser.parse_args()
    texts = []
    with open(args.data + "/train.jsonl") as f:
        for line in f:
            row = json.loads(line)
            texts += [row["prompt"], row["answer"]]
    vocab, merges = train(texts, args.vocab)
    with open(args.out, "w") as f:
        json.dump(tokenizer_json(vocab, merges), f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()

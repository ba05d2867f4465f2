"""Encoding with a tokenizer.json written by train_tokenizer.py, in Python, for the training
script (the library has its own implementation; the two are compared by the tests)."""
import json
import re

from train_tokenizer import PATTERN, byte_to_unicode


class Tokenizer:
    def __init__(self, path):
        with open(path) as f:
            spec = json.load(f)
        self.vocab = spec["model"]["vocab"]
        self.ranks = {tuple(pair): i for i, pair in enumerate(spec["model"]["merges"])}
        self.special = {t["content"]: t["id"] for t in spec["added_tokens"]}
        self.to_unicode = byte_to_unicode()
        self.special_pattern = re.compile("(" + "|".join(re.escape(t) for t in self.special) + ")")

    def _word(self, piece):
        symbols = [self.to_unicode[b] for b in piece.encode("utf-8")]
        while len(symbols) > 1:
            ranked = [(self.ranks.get((a, b), 1 << 30), i) for i, (a, b) in enumerate(zip(symbols, symbols[1:]))]
            rank, i = min(ranked)
            if rank == 1 << 30:
                break
            symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
        return [self.vocab[s] for s in symbols]

    def encode(self, text):
        ids = []
        for part in self.special_pattern.split(text):
            if part in self.special:
                ids.append(self.special[part])
            elif part:
                for piece in re.findall(PATTERN, part):
                    ids += self._word(piece)
        return ids

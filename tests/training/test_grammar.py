"""The bundled model's request grammar (training/grammar.py, composed_frames.py): composed frames
stay clear of the held-out split's words and frames, every value is copyable from its request, and
composing frames for training leaves the held-out splits as they were."""
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import unittest

TRAINING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "training")
sys.path.insert(0, TRAINING)

import composed_frames  # noqa: E402
import grammar  # noqa: E402

TOOLS = ("weather", "timer", "currency", "email", "booking", "unserved")


class ComposedFrames(unittest.TestCase):
    def test_no_composed_frame_uses_a_word_or_a_frame_only_the_unseen_split_has(self):
        composer = grammar.TRAIN.composer
        unseen = grammar.frame_words(grammar.UNSEEN)
        self.assertTrue(composer.banned)
        self.assertTrue(composer.banned <= unseen)
        self.assertFalse(composer.banned & grammar.frame_words(grammar.TRAIN))
        unseen_frames = {f.lower() for tool in TOOLS for f in grammar.UNSEEN.frames[tool]}
        rng = random.Random(3)
        for _ in range(3000):
            tool = rng.choice(TOOLS)
            frame = composer.frame(rng, tool)
            self.assertFalse(composed_frames.words(frame) & composer.banned, frame)
            self.assertNotIn(frame.lower(), unseen_frames)

    def test_a_banned_word_is_refused_when_the_composer_is_built(self):
        with self.assertRaises(AssertionError):
            composed_frames.Composer(banned={"weather"}, taken=[])

    def test_every_slot_of_the_tool_occurs_once(self):
        rng = random.Random(5)
        for tool in TOOLS:
            slots = set(composed_frames.SLOTS[tool]) | ({"source"} if tool == "currency" else set())
            for _ in range(300):
                frame = grammar.TRAIN.composer.frame(rng, tool)
                found = re.findall(r"\{([a-z]+)\}", frame)
                if tool == "unserved":
                    self.assertLessEqual(set(found), {"thing", "name", "place"}, frame)
                else:
                    self.assertEqual(sorted(found), sorted(slots), frame)

    def test_composed_requests_carry_their_values_and_many_frames(self):
        rng = random.Random(7)
        prompts = set()
        for _ in range(2000):
            prompt, answer, task = grammar.request(rng, grammar.TRAIN, composed_share=1.0)
            prompts.add(prompt)
            if task == "refusal":
                self.assertEqual(answer, grammar.REFUSAL)
                continue
            call = json.loads(answer)
            self.assertEqual(call["name"], task)
            copied = {"get_weather": ["city"], "set_timer": ["label"], "send_email": ["to", "subject"],
                      "book_table": ["restaurant"], "convert_currency": []}[task]
            for key in copied:
                self.assertIn(call["arguments"][key].lower(), prompt.lower(), (prompt, answer))
        self.assertGreater(len(prompts), 1990)


class HeldOutSplits(unittest.TestCase):
    def test_composing_training_frames_leaves_the_held_out_splits_unchanged(self):
        with tempfile.TemporaryDirectory() as scratch:
            outs = []
            for share in ("0", "0.6"):
                out = os.path.join(scratch, share)
                subprocess.run([sys.executable, os.path.join(TRAINING, "make_data.py"), out, "--train", "300",
                                "--test", "40", "--unseen", "40", "--composed-share", share], check=True)
                outs.append(out)
            for split in ("test.jsonl", "unseen.jsonl"):
                with open(os.path.join(outs[0], split)) as a, open(os.path.join(outs[1], split)) as b:
                    self.assertEqual(a.read(), b.read())
            with open(os.path.join(outs[0], "train.jsonl")) as a, open(os.path.join(outs[1], "train.jsonl")) as b:
                self.assertNotEqual(a.read(), b.read())


if __name__ == "__main__":
    unittest.main()

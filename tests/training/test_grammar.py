"""The bundled model's request grammar (training/grammar.py, composed_frames.py): composed frames
stay clear of the held-out split's words, word pairs and frames, and composing frames for training
leaves the held-out splits as they were."""
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
    def test_no_composed_frame_uses_a_word_pair_or_frame_only_the_unseen_split_has(self):
        composer = grammar.TRAIN.composer
        for only_unseen in [("kindly",), ("yo",), ("asap",), ("hrs",), ("via",), ("re",), ("worth",),
                            ("for", "my"), ("find", "us"), ("{city}", "'s"), ("to", "{city}")]:
            self.assertIn(only_unseen, composer.banned)
        for both in [("weather",), ("minutes",), ("in", "{city}"), ("at", "{time}")]:
            self.assertNotIn(both, composer.banned)
        unseen_frames = {f.lower() for tool in TOOLS for f in grammar.UNSEEN.frames[tool]}
        rng = random.Random(3)
        for _ in range(3000):
            frame = composer.frame(rng, rng.choice(TOOLS))
            self.assertFalse(composed_frames.grams(frame) & composer.banned, frame)
            self.assertNotIn(frame.lower(), unseen_frames)

    def test_a_pair_where_two_pieces_meet_and_a_taken_frame_are_never_composed(self):
        rng = random.Random(4)
        free = composed_frames.Composer(banned=set(), taken=[])
        frames = [free.frame(rng, "weather") for _ in range(2000)]
        self.assertTrue(any(("weather", "in") in composed_frames.grams(f) for f in frames))  # "weather in {city}"
        strict = composed_frames.Composer(banned={("weather", "in")}, taken=[])
        for _ in range(2000):
            self.assertNotIn(("weather", "in"), composed_frames.grams(strict.frame(rng, "weather")))
        lights = {free.frame(rng, "unserved") for _ in range(3000)}
        lights = [f for f in lights if f.lower().startswith("dim the lights")]
        self.assertTrue(lights)
        taken = composed_frames.Composer(banned=set(), taken=lights)
        for _ in range(3000):
            self.assertNotIn(taken.frame(rng, "unserved"), lights)

    def test_a_banned_word_in_a_part_is_refused_when_the_composer_is_built(self):
        with self.assertRaises(ValueError):
            composed_frames.Composer(banned={("weather",)}, taken=[])

    def test_a_subject_never_runs_on_into_the_next_word(self):
        rng = random.Random(6)
        for _ in range(3000):
            frame = grammar.TRAIN.composer.frame(rng, "email")
            self.assertIsNone(re.search(r"\{subject\} \w", frame), frame)

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

    def test_composed_requests_are_many_and_answered_as_their_task(self):
        rng = random.Random(7)
        prompts = set()
        for _ in range(2000):
            prompt, answer, task = grammar.request(rng, grammar.TRAIN, composed_share=1.0)
            prompts.add(prompt)
            if task == "refusal":
                self.assertEqual(answer, grammar.REFUSAL)
            else:
                self.assertEqual(json.loads(answer)["name"], task)
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

"""The bundled model's training script (training/train.py): the block diffusion loss against its
plain formulation, and a run resumed from a checkpoint against one never stopped."""
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

import torch

TRAINING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "training")
sys.path.insert(0, TRAINING)

import train  # noqa: E402
from model import Llada  # noqa: E402


def whole_canvas_loss(model, tokens, weight, mask_id, block, generator, eps=1e-3):
    """BD3-LM's objective as written: the whole noisy canvas beside the whole clean one, every
    noisy block computed, whether it carries loss or not."""
    n, length = tokens.shape
    t = eps + (1 - eps) * torch.rand(n, length // block, generator=generator)
    t = t.repeat_interleave(block, dim=1)
    masked = (torch.rand(tokens.shape, generator=generator) < t) & (weight > 0)
    noisy = torch.where(masked, torch.full_like(tokens, mask_id), tokens)
    blocks = torch.arange(length) // block
    same, before = blocks[:, None] == blocks[None, :], blocks[None, :] < blocks[:, None]
    allowed = torch.cat((torch.cat((same, before), 1), torch.cat((torch.zeros_like(same), same | before), 1)), 0)
    logits = model(torch.cat((noisy, tokens), 1), torch.arange(length).repeat(2), allowed)[:, :length]
    ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), tokens, reduction="none")
    return ((ce * masked * weight / t).sum(1) / weight.sum(1)).mean()


class BlockDiffusionLoss(unittest.TestCase):
    def test_skipping_prompt_blocks_changes_nothing(self):
        torch.manual_seed(0)
        model = Llada(50, 32, 2, 2, 64)
        rng = random.Random(1)
        for prompt_lengths in ([3, 5, 2], [17, 20, 33], [40, 36, 41]):  # answers start in block 0, 1 or 2
            rows = [([rng.randrange(48) for _ in range(p)], [rng.randrange(48) for _ in range(48 - p)] + [48])
                    for p in prompt_lengths]
            tokens, weight = train.block_batch_tensors(rows, 8, 48)
            fast = train.block_diffusion_loss(model, tokens, weight, 49, 8, torch.Generator().manual_seed(7))
            plain = whole_canvas_loss(model, tokens, weight, 49, 8, torch.Generator().manual_seed(7))
            self.assertGreater(float(plain), 0)
            self.assertTrue(torch.allclose(fast, plain, rtol=1e-5, atol=0), (float(fast), float(plain)))

    def test_a_changed_block_changes_the_loss(self):
        # The comparison above would pass if neither formulation read the answer: it does.
        torch.manual_seed(0)
        model = Llada(50, 32, 2, 2, 64)
        rows = [([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [11, 12, 13, 14, 15, 48])]
        tokens, weight = train.block_batch_tensors(rows, 8, 48)
        before = train.block_diffusion_loss(model, tokens, weight, 49, 8, torch.Generator().manual_seed(3))
        tokens[0, 12] = 30
        after = train.block_diffusion_loss(model, tokens, weight, 49, 8, torch.Generator().manual_seed(3))
        self.assertNotEqual(float(before), float(after))


class Resume(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.TemporaryDirectory()
        cls.data = os.path.join(cls.scratch.name, "data")
        cls.tokenizer = os.path.join(cls.scratch.name, "tokenizer.json")
        cls.run_script("make_data.py", cls.data, "--train", "400", "--test", "4", "--unseen", "4")
        cls.run_script("train_tokenizer.py", cls.data, cls.tokenizer, "--vocab", "300")

    @classmethod
    def tearDownClass(cls):
        cls.scratch.cleanup()

    @staticmethod
    def run_script(name, *args, check=True):
        return subprocess.run([sys.executable, os.path.join(TRAINING, name)] + list(args), capture_output=True,
                              text=True, check=check)

    def train(self, out, *extra, check=True):
        return self.run_script("train.py", self.data, self.tokenizer, out, "--steps", "6", "--d", "32", "--layers", "1",
                               "--heads", "2", "--mlp", "64", "--batch", "8", "--block", "16", "--lengths", "192:1",
                               "--threads", "1", *extra, check=check)

    def weights(self, out):
        with open(os.path.join(out, "model.safetensors"), "rb") as f:
            return f.read()

    def test_a_resumed_run_ends_with_the_weights_of_an_unbroken_one(self):
        unbroken, broken = (os.path.join(self.scratch.name, name) for name in ("unbroken", "broken"))
        self.train(unbroken)
        self.train(broken, "--save-every", "3")  # checkpoint.pt after step 3; the weights after step 6
        self.assertEqual(self.weights(unbroken), self.weights(broken))
        os.remove(os.path.join(broken, "model.safetensors"))
        resumed = self.train(broken, "--resume")  # steps 4 to 6 again, from the checkpoint
        self.assertIn("resumed", resumed.stdout)
        self.assertEqual(self.weights(unbroken), self.weights(broken))
        # A run from step 1 would give those weights too: the resumed one starts from the checkpoint's.
        checkpoint = os.path.join(broken, "checkpoint.pt")
        state = torch.load(checkpoint, weights_only=False)
        state["model"]["ln_f"] += 1
        torch.save(state, checkpoint)
        self.train(broken, "--resume")
        self.assertNotEqual(self.weights(unbroken), self.weights(broken))
        other = self.train(os.path.join(self.scratch.name, "other"), "--seed", "99")
        self.assertNotEqual(self.weights(unbroken), self.weights(os.path.join(self.scratch.name, "other")), other.stdout)

    def test_a_run_stopped_early_is_at_that_step_of_its_schedule(self):
        unbroken, stopped = (os.path.join(self.scratch.name, name) for name in ("whole", "stopped"))
        self.train(unbroken)
        first = self.train(stopped, "--stop-after", "4", "--save-every", "5")  # a checkpoint at the stop
        self.assertIn("trained 4 steps", first.stdout)
        self.assertNotEqual(self.weights(unbroken), self.weights(stopped))
        # Steps 5 and 6 from the stop end where the unbroken run does: the stopped run took the same
        # first four steps, at the learning rates of the six-step schedule.
        self.train(stopped, "--resume")
        self.assertEqual(self.weights(unbroken), self.weights(stopped))
        # Its checkpoint is now past a stop at step 4: resuming it there would write later weights.
        self.train(stopped, "--save-every", "5")
        late = self.train(stopped, "--resume", "--stop-after", "4", check=False)
        self.assertNotEqual(late.returncode, 0)
        self.assertIn("saved step 5, after step 4", late.stderr)
        negative = self.train(stopped, "--stop-after", "-1", check=False)
        self.assertNotEqual(negative.returncode, 0)
        self.assertIn("--stop-after must be", negative.stderr)

    def test_resuming_with_other_arguments_or_a_bad_or_missing_checkpoint_is_refused(self):
        out = os.path.join(self.scratch.name, "refused")
        self.train(out, "--save-every", "3")
        changed = self.train(out, "--resume", "--lr", "1e-3", check=False)
        self.assertNotEqual(changed.returncode, 0)
        self.assertIn("other --lr", changed.stderr)
        with open(os.path.join(out, "checkpoint.pt"), "wb") as f:
            f.write(b"not a checkpoint")
        corrupt = self.train(out, "--resume", check=False)
        self.assertNotEqual(corrupt.returncode, 0)
        self.assertIn("is not a checkpoint this script wrote", corrupt.stderr)
        self.assertNotIn("Traceback", corrupt.stderr)
        missing = self.train(os.path.join(self.scratch.name, "never"), "--resume", check=False)
        self.assertNotEqual(missing.returncode, 0)
        self.assertIn("no ", missing.stderr)
        self.assertIn("checkpoint.pt", missing.stderr)


if __name__ == "__main__":
    unittest.main()

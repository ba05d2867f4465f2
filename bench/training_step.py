#!/usr/bin/env python3
"""Seconds per training step of the previous bundled model's architecture (training/model.py: d 256,
4 layers, 4 heads, MLP 512, vocab 945), batch 64, in fp32 and under bf16 autocast (train.py
--precision bf16: the linear layers in bf16, attention in fp32), at canvases of 64 and 288
positions, interleaved twice in one run so the ratios compare like with like.

usage: /usr/bin/python3 bench/training_step.py [--threads 2]
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "training"))
from model import Llada  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = Llada(945, 256, 4, 4, 512)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(length, bf16):
        tokens = torch.randint(0, 940, (64, length))
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(tokens)
        loss = torch.nn.functional.cross_entropy(logits.float().transpose(1, 2), tokens)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    for bf16 in (False, True, False, True):
        for length in (64, 288):
            step(length, bf16)  # warm-up
            repeats = 6 if length == 64 else 2
            started = time.time()
            for _ in range(repeats):
                step(length, bf16)
            print("%s canvas %3d: %.3f s/step" % ("bf16" if bf16 else "fp32", length,
                                                  (time.time() - started) / repeats), flush=True)


if __name__ == "__main__":
    main()

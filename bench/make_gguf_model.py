#!/usr/bin/env python3
"""Writes a random LLaDA-shaped GGUF model for benchmarks: llama.cpp's names and keys, weights in
one type (F32, BF16, Q8_0 or Q4_0; norms stay F32, as llama-quantize leaves them), blocks encoded
as ggml's reference quantizers define them. The same seed gives the same weights in every type.

usage: make_gguf_model.py OUT.gguf TYPE [--hidden 512 --layers 8 --heads 8 --mlp 1536 --vocab 4096]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures"))
import gguf_writer as g  # noqa: E402

Q4_0 = 2


def q8_0(x):
    """ggml's quantize_row_q8_0_ref: d = max|x| / 127, q = round(x / d) (half away from zero)."""
    b = x.reshape(-1, 32).astype(np.float32)
    d = np.abs(b).max(axis=1) / np.float32(127)
    inv = np.where(d > 0, np.float32(1) / np.where(d > 0, d, 1), 0).astype(np.float32)
    q = b * inv[:, None]
    q = np.trunc(q + np.copysign(np.float32(0.5), q)).astype(np.int8)
    out = np.zeros((b.shape[0], 34), np.uint8)
    out[:, 0:2] = d.astype(np.float16).view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def q4_0(x):
    """ggml's quantize_row_q4_0_ref: d = (the value of largest magnitude) / -8, q = min(15, (x / d) + 8.5)."""
    b = x.reshape(-1, 32).astype(np.float32)
    at = np.abs(b).argmax(axis=1)
    d = b[np.arange(b.shape[0]), at] / np.float32(-8)
    inv = np.where(d != 0, np.float32(1) / np.where(d != 0, d, 1), 0).astype(np.float32)
    q = np.minimum(15, (b * inv[:, None] + np.float32(8.5)).astype(np.int8)).astype(np.uint8)
    out = np.zeros((b.shape[0], 18), np.uint8)
    out[:, 0:2] = d.astype(np.float16).view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out.tobytes()


def bf16_bits(x):
    """fp32 values rounded to bf16 (to nearest even), as their 16-bit patterns."""
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def add_shape_arguments(parser):
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--mlp", type=int, default=1536)
    parser.add_argument("--vocab", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=7)


def random_llada(a):
    """(role, layer, shape, fp32 values) of every tensor, drawn from a.seed in one fixed order, so the
    GGUF files and the Hugging Face directory (make_hf_model.py) of a seed hold the same weights:
    norms 1 + 0.1 N(0, 1), matrices [rows, cols] N(0, 1 / cols)."""
    rng = np.random.default_rng(a.seed)
    h, mlp, vocab = a.hidden, a.mlp, a.vocab
    shapes = [("embedding", None, [vocab, h])]
    for i in range(a.layers):
        shapes += [(role, i, shape) for role, shape in [
            ("attn_norm", [h]), ("ffn_norm", [h]), ("q", [h, h]), ("k", [h, h]), ("v", [h, h]), ("o", [h, h]),
            ("gate", [mlp, h]), ("up", [mlp, h]), ("down", [h, mlp])]]
    shapes += [("final_norm", None, [h]), ("head", None, [vocab, h])]
    for role, layer, shape in shapes:
        if len(shape) == 1:
            yield role, layer, shape, (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            yield role, layer, shape, (rng.standard_normal(shape) * (1 / np.sqrt(shape[1]))).astype(np.float32)


GGUF_NAMES = {"embedding": "token_embd.weight", "final_norm": "output_norm.weight", "head": "output.weight",
              "attn_norm": "attn_norm", "ffn_norm": "ffn_norm", "q": "attn_q", "k": "attn_k", "v": "attn_v",
              "o": "attn_output", "gate": "ffn_gate", "up": "ffn_up", "down": "ffn_down"}


def encode(x, kind):
    if kind == "F32":
        return g.F32, x.astype(np.float32).tobytes()
    if kind == "BF16":
        return g.BF16, bf16_bits(x).tobytes()
    if kind == "Q8_0":
        return g.Q8_0, q8_0(x)
    return Q4_0, q4_0(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("type", choices=["F32", "BF16", "Q8_0", "Q4_0"])
    add_shape_arguments(p)
    a = p.parse_args()
    h, mlp, vocab = a.hidden, a.mlp, a.vocab
    tensors = []
    for role, layer, shape, values in random_llada(a):
        name = GGUF_NAMES[role] if layer is None else "blk.%d.%s.weight" % (layer, GGUF_NAMES[role])
        kind, data = (g.F32, values.tobytes()) if len(shape) == 1 else encode(values, a.type)
        tensors.append((name, shape[::-1], kind, data))
    metadata = [
        ("general.architecture", g.STRING, "llada"), ("llada.context_length", g.UINT32, 4096),
        ("llada.embedding_length", g.UINT32, h), ("llada.block_count", g.UINT32, a.layers),
        ("llada.feed_forward_length", g.UINT32, mlp), ("llada.attention.head_count", g.UINT32, a.heads),
        ("llada.attention.head_count_kv", g.UINT32, a.heads), ("llada.rope.freq_base", g.FLOAT32, 500000.0),
        ("llada.attention.layer_norm_rms_epsilon", g.FLOAT32, 1e-5), ("llada.vocab_size", g.UINT32, vocab),
        ("diffusion.shift_logits", g.BOOL, False), ("tokenizer.ggml.mask_token_id", g.UINT32, vocab - 1),
        ("tokenizer.ggml.eos_token_id", g.UINT32, vocab - 2),
    ]
    g.write_gguf(a.out, metadata, tensors)


if __name__ == "__main__":
    main()

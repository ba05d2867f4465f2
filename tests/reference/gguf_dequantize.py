"""An independent decoder of ggml's block-quantized types, written from the formats' public
description (ggml's block_q8_0, block_q4_0, block_q4_K, block_q5_K and block_q6_K layouts and
their reference dequantization), in torch float32 so that each product and difference is one
rounded fp32 operation. write_cases() draws random blocks of each format and writes them with
their decoded values for the C++ kernel to match bit for bit.

It also holds ggml's reference quantizers for Q8_0 and Q4_0 (quantize_row_q8_0_ref,
quantize_row_q4_0_ref, from their description), which unmask uses at load for `precision` int8 and
q4: write_quantize_cases() writes random and edge-case rows with their blocks.
"""
import math
import os
import random
import struct

import torch

FORMATS = {"q8_0": (32, 34), "q4_0": (32, 18), "q4_k": (256, 144), "q5_k": (256, 176), "q6_k": (256, 210)}


def f32(values):
    return torch.tensor(values, dtype=torch.float32)


def half(block, offset):
    return torch.tensor(struct.unpack_from("<e", block, offset)[0], dtype=torch.float32)


def scale_min(packed, j):
    if j < 4:
        return packed[j] & 63, packed[j + 4] & 63
    return (packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4), (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4)


def decode_block(name, b):
    if name == "q8_0":
        return f32([struct.unpack_from("<b", b, 2 + j)[0] for j in range(32)]) * half(b, 0)
    if name == "q4_0":
        low = [(b[2 + j] & 0xF) - 8 for j in range(16)]
        high = [(b[2 + j] >> 4) - 8 for j in range(16)]
        return f32(low + high) * half(b, 0)
    if name in ("q4_k", "q5_k"):
        d, dmin, packed = half(b, 0), half(b, 2), b[4:16]
        qh = b[16:48] if name == "q5_k" else bytes(32)
        qs = b[48:176] if name == "q5_k" else b[16:144]
        out = []
        for sub in range(8):  # sub-blocks of 32: low nibbles of a 32-byte run, then its high nibbles
            run = qs[32 * (sub // 2):32 * (sub // 2) + 32]
            nibbles = [x & 0xF for x in run] if sub % 2 == 0 else [x >> 4 for x in run]
            fifth = [16 if (h >> sub) & 1 else 0 for h in qh]
            sc, m = scale_min(packed, sub)
            out.append((d * sc) * f32([n + e for n, e in zip(nibbles, fifth)]) - dmin * m)
        return torch.cat(out)
    # q6_k: two halves of 128; each of the 4 groups of 32 takes 4 bits from ql and 2 from qh.
    ql, qh, d = b[0:128], b[128:192], half(b, 208)
    scales = struct.unpack_from("<16b", b, 192)
    out = torch.empty(256, dtype=torch.float32)
    for h in range(2):
        for l in range(32):
            lo, hi = ql[64 * h:64 * h + 64], qh[32 * h + l]
            q = [(lo[l] & 0xF) | ((hi >> 0 & 3) << 4), (lo[l + 32] & 0xF) | ((hi >> 2 & 3) << 4),
                 (lo[l] >> 4) | ((hi >> 4 & 3) << 4), (lo[l + 32] >> 4) | ((hi >> 6 & 3) << 4)]
            for g in range(4):
                sc = scales[8 * h + l // 16 + 2 * g]
                out[128 * h + 32 * g + l] = (d * sc) * torch.tensor(float(q[g] - 32), dtype=torch.float32)
    return out


def random_block(rng, name):
    _, size = FORMATS[name]
    block = bytearray(rng.getrandbits(8) for _ in range(size))
    # The fp16 scales: finite, of either sign, across the exponent range a quantizer writes.
    offsets = {"q8_0": [0], "q4_0": [0], "q4_k": [0, 2], "q5_k": [0, 2], "q6_k": [208]}[name]
    for offset in offsets:
        struct.pack_into("<e", block, offset, rng.choice([-1, 1]) * rng.uniform(1e-4, 2.0))
    return bytes(block)


def write_cases(out, blocks=24, seed=1234):
    """<out>/<format>.blocks: the raw blocks; <format>.expected: their values, fp32 little-endian."""
    os.makedirs(out, exist_ok=True)
    rng = random.Random(seed)
    for name in FORMATS:
        raw = [random_block(rng, name) for _ in range(blocks)]
        values = torch.cat([decode_block(name, b) for b in raw])
        with open(os.path.join(out, name + ".blocks"), "wb") as f:
            f.write(b"".join(raw))
        with open(os.path.join(out, name + ".expected"), "wb") as f:
            f.write(struct.pack("<%df" % values.numel(), *values.tolist()))


def f16_bytes(value):
    return torch.tensor([value], dtype=torch.float32).to(torch.float16).view(torch.uint8).tolist()


def quantize_block(name, x):
    """x: 32 fp32 values (a torch tensor) -> the block's bytes, one fp32 operation at a time."""
    one = torch.tensor(1.0, dtype=torch.float32)
    if name == "q8_0":
        amax = x.abs().max()
        d = amax / torch.tensor(127.0, dtype=torch.float32)
        inv = one / d if d != 0 else torch.tensor(0.0, dtype=torch.float32)
        out = f16_bytes(d.item())
        for v in (x * inv).tolist():  # roundf: half away from zero (exact in float64 for an fp32 value)
            q = math.floor(abs(v) + 0.5) * (1 if v >= 0 else -1)
            out.append(q & 0xFF)
        return bytes(out)
    # q4_0: the element of largest magnitude (the first of equals), its sign kept.
    at, amax = 0, 0.0
    for j, v in enumerate(x.tolist()):
        if abs(v) > amax:
            at, amax = j, abs(v)
    d = x[at] / torch.tensor(-8.0, dtype=torch.float32)
    inv = one / d if d != 0 else torch.tensor(0.0, dtype=torch.float32)
    q = [min(15, int(v)) for v in ((x * inv) + torch.tensor(8.5, dtype=torch.float32)).tolist()]  # int(): toward zero
    return bytes(f16_bytes(d.item()) + [q[j] | (q[j + 16] << 4) for j in range(16)])


def write_quantize_cases(out, rows=24, seed=99):
    """<out>/<format>.input: rows of 32 fp32 values; <format>.blocks: ggml's reference blocks of them."""
    os.makedirs(out, exist_ok=True)
    rng = random.Random(seed)
    cases = [[0.0] * 32, [2.5, -3.5, 127.0] + [0.5] * 29, [-8.0, 4.0, 0.0625] + [-1.0] * 29]
    cases += [[rng.gauss(0, rng.choice([1e-3, 0.05, 3.0])) for _ in range(32)] for _ in range(rows)]
    for name in ("q8_0", "q4_0"):
        values = torch.tensor([v for row in cases for v in row], dtype=torch.float32)
        blocks = b"".join(quantize_block(name, values[32 * i:32 * (i + 1)]) for i in range(len(cases)))
        with open(os.path.join(out, name + ".input"), "wb") as f:
            f.write(struct.pack("<%df" % values.numel(), *values.tolist()))
        with open(os.path.join(out, name + ".blocks"), "wb") as f:
            f.write(blocks)

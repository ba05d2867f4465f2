"""FP8 E4M3 written from its definition (the OCP 8-bit Floating Point Specification, "e4m3fn" in
PyTorch and the safetensors dtype F8_E4M3: a sign bit, 4 exponent bits of bias 7, 3 mantissa bits,
no infinities, S.1111.111 is NaN, the largest finite value 448), independently of unmask's C++:

- decode(code) and encode(x): the values of the 256 codes, and float32 values rounded to the
  nearest code (ties to the even code, saturating at +-448, NaN to NaN);
- quantize_checkpoint(w, block): a weight as an fp8 checkpoint stores it (vLLM's per-tensor
  `weight_scale`, or DeepSeek-V3's 128x128 `weight_scale_inv`; scale = max|w| / 448 per tensor or
  block), with the weights it stands for (each code's value times its scale, one float32 product,
  as those projects' dequantization computes it);
- quantize_row(x): unmask's F8_E4M3_B128 blocks made at load (`precision` fp8): per 128 values
  s = max|x| / 448 over the finite x, codes of x / s, s stored as fp32 before them.

write_cases() writes the 256 decoded codes and random rows with their blocks for the C++ tests.
"""
import math
import os
import random
import struct

import torch


def decode(code):
    sign = -1.0 if code & 0x80 else 1.0
    exponent, mantissa = (code >> 3) & 0xF, code & 0x7
    if exponent == 0xF and mantissa == 0x7:
        return math.nan
    if exponent == 0:
        return sign * mantissa * 2.0 ** -9
    return sign * (1 + mantissa / 8) * 2.0 ** (exponent - 7)


POSITIVE = torch.tensor([decode(code) for code in range(127)], dtype=torch.float64)  # codes 0..126, ascending
VALUES = torch.tensor([decode(code) for code in range(256)], dtype=torch.float32)


def encode(x):
    """float32 tensor -> uint8 codes (int64 tensor)."""
    magnitude = x.double().abs().clamp(max=448.0)
    above = torch.searchsorted(POSITIVE, magnitude.nan_to_num(0.0)).clamp(max=126)  # first value >= magnitude
    below = (above - 1).clamp(min=0)
    to_below, to_above = magnitude - POSITIVE[below], POSITIVE[above] - magnitude
    code = torch.where((to_above < to_below) | ((to_above == to_below) & (above % 2 == 0)), above, below)
    code = torch.where(to_above == 0, above, code)
    code = torch.where(x.isnan(), torch.full_like(code, 0x7F), code)
    return code + 0x80 * torch.signbit(x).long()


def dequantize(codes, scales):
    """float32 weights: each code's value times its scale (tensors of the same shape)."""
    return VALUES[codes] * scales


def quantize_checkpoint(w, block=None, scale_dtype=torch.float32):
    """w: a float tensor [rows, cols] -> (codes, scales, dequantized float32 weights). block None: one
    scale; else block = (rows, cols) of each scale, the grid covering w with partial edge blocks."""
    w = w.float()
    rows, cols = w.shape
    br, bc = block or (rows, cols)
    grid = (-(-rows // br), -(-cols // bc))
    scales = torch.zeros(grid, dtype=torch.float32)
    for i in range(grid[0]):
        for j in range(grid[1]):
            amax = w[i * br:(i + 1) * br, j * bc:(j + 1) * bc].abs().max()
            scales[i, j] = (amax / torch.tensor(448.0)).to(scale_dtype).float()
    expanded = scales.repeat_interleave(br, 0)[:rows].repeat_interleave(bc, 1)[:, :cols]
    codes = encode(w / expanded)
    return codes, (scales.reshape(()) if block is None else scales), dequantize(codes, expanded)


def quantize_row(x):
    """float32 values (a multiple of 128) -> the bytes of unmask's F8_E4M3_B128 blocks."""
    out = b""
    for start in range(0, x.numel(), 128):
        run = x[start:start + 128]
        finite = run[run.isfinite()]
        amax = finite.abs().max() if finite.numel() else torch.tensor(0.0)
        scale = amax / torch.tensor(448.0)
        codes = encode(run / scale) if scale != 0 else torch.zeros(128, dtype=torch.long)
        codes = torch.where(run.isfinite(), codes, torch.full_like(codes, 0x7F))
        out += struct.pack("<f", float(scale)) + bytes(codes.tolist())
    return out


def write_cases(out, rows=12, seed=8):
    """<out>/values.expected: the 256 codes' values (fp32); rows.input: rows of 128 fp32 values
    (random, zeros, ties, a non-finite value, beyond-range ratios); rows.blocks: their blocks."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "values.expected"), "wb") as f:
        f.write(struct.pack("<256f", *VALUES.tolist()))
    rng = random.Random(seed)
    cases = [[0.0] * 128, [448.0, -448.0, 0.5 * (416 + 448), 0.5 * (1 + 1.125), -0.5 * (1.125 + 1.25)] + [2.0 ** -10] * 123,
             [float("inf"), 3.0, -1.0] + [1e-3] * 125]
    cases += [[rng.gauss(0, rng.choice([1e-3, 0.05, 3.0])) for _ in range(128)] for _ in range(rows)]
    values = torch.tensor([v for row in cases for v in row], dtype=torch.float32)
    with open(os.path.join(out, "rows.input"), "wb") as f:
        f.write(struct.pack("<%df" % values.numel(), *values.tolist()))
    with open(os.path.join(out, "rows.blocks"), "wb") as f:
        f.write(quantize_row(values))

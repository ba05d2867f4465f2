// The machine's peak in FLOP/s, measured once per thread count with the instruction set the
// matmul kernels use, so matmul and forward figures can be printed as a fraction of it:
// bf16_dot, the AVX512-BF16 dot product's where the kernels use it for bf16 weights (twice the
// fp32 FMA's multiply-adds per instruction); otherwise the fp32 FMA's.
#pragma once

double measured_peak(int threads, bool bf16_dot);

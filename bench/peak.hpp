// The machine's FMA peak in FLOP/s, measured once per thread count with the instruction set the
// matmul kernels use, so matmul and forward figures can be printed as a fraction of it.
#pragma once

double measured_fma_peak(int threads);

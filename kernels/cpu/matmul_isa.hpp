// The per-instruction-set matmul entry points behind matmul_columns, for tests that check every
// path gives the same bits.
#pragma once

#include "cpu/matmul.hpp"

namespace unmask::kernels::cpu {

using MatmulColumnsFn = void (*)(const float*, int64_t, int64_t, const WeightMatrix&, int64_t, int64_t, float*, int64_t,
                                 float*);

struct MatmulIsa {
    const char* name;
    MatmulColumnsFn fn;
    bool supported;  // by this CPU
};

// Every implementation, fastest first.
const MatmulIsa* matmul_isas(size_t& count);

}  // namespace unmask::kernels::cpu

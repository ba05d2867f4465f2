// What the fused "logits -> candidates" step returns for one position, on every backend (C++17,
// so the CUDA kernels share it).
#pragma once

#include <cstdint>

namespace unmask::kernels {

struct Candidate {
    int32_t token = 0;       // sampled (or argmax) token
    float probability = 0;   // p(token)
    int32_t top1_token = 0;
    float top1_probability = 0;
    float top2_probability = 0;
    float negative_entropy = 0;  // sum p log p (0 for a certain distribution)
};

}  // namespace unmask::kernels

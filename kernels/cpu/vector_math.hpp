// Elementwise math written so the compiler vectorises it (no calls, no branches): the row
// loops that use it are compiled for AVX-512, AVX2 and baseline x86-64 (target_clones). The same
// operations run on every path, so results do not depend on the instruction set.
#pragma once

#include <cstdint>
#include <cstring>

// Row loops compiled for AVX-512, AVX2 and baseline x86-64, chosen at load time. Not under
// ThreadSanitizer: its instrumented ifunc resolver runs before the runtime is up and crashes.
#if defined(__SANITIZE_THREAD__)
#define UNMASK_VECTOR_CLONES
#else
#define UNMASK_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif

namespace unmask::kernels::cpu {

// e^x for x <= 88.7, relative error below 2e-7 (x below -87.3 gives 0): x = n ln2 + r with
// |r| <= ln2/2, e^r by its degree-6 Taylor polynomial, 2^n through the exponent bits.
inline float fast_exp(float x) noexcept {
    x = x < -87.3f ? -87.3f : x;
    x = x > 88.7f ? 88.7f : x;
    constexpr float round_magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
    const float n = (x * 1.44269504088896341f + round_magic) - round_magic;
    const float r = (x - n * 0.693145751953125f) - n * 1.42860682030941723e-6f;
    float p = 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const int32_t exponent_bits = (static_cast<int32_t>(n) + 127) << 23;
    float scale;
    std::memcpy(&scale, &exponent_bits, 4);
    return p * scale * (x <= -87.3f ? 0.0f : 1.0f);  // a multiply, not a branch: loops stay vectorised
}

}  // namespace unmask::kernels::cpu

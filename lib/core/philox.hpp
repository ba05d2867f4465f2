// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator. Every random number unmask draws is philox(key = request seed,
// counter = (index, position, step, stream)), so a request's randomness depends only on its own
// seed and coordinates: not on threads, backends or the other requests in its batch.
#pragma once

#include <array>
#include <cstdint>

// The same functions serve the CUDA kernels (compiled with --expt-relaxed-constexpr for std::array).
#include "host_device.hpp"

namespace unmask {

enum class RandomStream : uint32_t { token_noise = 0, commit_order = 1, position_draw = 2 };

UNMASK_HOST_DEVICE inline std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, uint64_t seed) noexcept {
    uint32_t key0 = static_cast<uint32_t>(seed), key1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
        const uint64_t product0 = uint64_t(0xD2511F53u) * counter[0];
        const uint64_t product1 = uint64_t(0xCD9E8D57u) * counter[2];
        counter = {static_cast<uint32_t>(product1 >> 32) ^ counter[1] ^ key0, static_cast<uint32_t>(product1),
                   static_cast<uint32_t>(product0 >> 32) ^ counter[3] ^ key1, static_cast<uint32_t>(product0)};
        key0 += 0x9E3779B9u;
        key1 += 0xBB67AE85u;
    }
    return counter;
}

// 53 random bits (the low 53 of `bits`) as a double in the open interval (0, 1): the midpoint of
// their 2^-53 interval, rounded. The highest midpoint rounds to 1.0 and is kept just below it
// instead (a Gumbel draw of -log(-log u) would be infinite).
UNMASK_HOST_DEVICE inline double open01_of_bits(uint64_t bits) noexcept {
    const double u = (static_cast<double>(bits & ((uint64_t(1) << 53) - 1)) + 0.5) * 0x1.0p-53;
    return u < 1.0 ? u : 0x1.fffffffffffffp-1;
}

// A uniform double in the open interval (0, 1) with 53 random bits, for the draw at
// (index, position, step) of `stream`.
UNMASK_HOST_DEVICE inline double uniform_open01(uint64_t seed, uint32_t index, uint32_t position, uint32_t step,
                             RandomStream stream) noexcept {
    const auto words = philox4x32({index, position, step, static_cast<uint32_t>(stream)}, seed);
    return open01_of_bits(((uint64_t(words[0]) << 32) | words[1]) >> 11);
}

}  // namespace unmask

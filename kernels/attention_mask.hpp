// Block-causal attention masks (block diffusion), the same rule for the CPU and the CUDA kernels:
// key j is visible to the query at position p when block(j) <= block(p), where the positions
// before block_origin form block -1 and the rest blocks of block_size positions.
#pragma once

#include <cstdint>

#include "host_device.hpp"

namespace unmask::kernels {

// The end of the block that holds `position`: the keys before it are the visible ones.
UNMASK_HOST_DEVICE constexpr int64_t block_end(int64_t position, int64_t block_size, int64_t block_origin) noexcept {
    return position < block_origin ? block_origin
                                   : block_origin + ((position - block_origin) / block_size + 1) * block_size;
}

}  // namespace unmask::kernels

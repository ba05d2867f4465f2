// fp8 products with block scales, as cuBLASLt takes them on sm_90 (DeepSeek-V3's scheme, which
// fp8 checkpoints with 128x128 weight blocks and dynamic activations are made for):
// - the weights [n, k]: e4m3 values, row-major, and one fp32 scale per tile of 128 x 128
//   (CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F): tile (row / 128, col / 128) at
//   (col / 128) + (row / 128) * fp8_tile_stride(k), the k tiles of a row of tiles padded to 4;
// - the activations [rows, k]: e4m3 values, row-major, and one fp32 scale per 128 of a row
//   (VEC128_32F), quantized as F8_E4M3_B128 blocks are (kernels/cpu/quantize.hpp): group
//   (row, col / 128) at row + (col / 128) * rows.
// These are the layouts PyTorch's _scaled_mm requires of its 1x128 and 128x128 block scalings
// (for cuBLASLt 12.9 on sm_90). Host code: the CUDA backend splits the weights at upload.
#pragma once

#include <cstdint>
#include <cstring>

#include "element_type.hpp"

namespace unmask::kernels {

inline constexpr int64_t fp8_group = 128;

// Floats between one row of tiles' scales and the next.
constexpr int64_t fp8_tile_stride(int64_t k) noexcept { return (k / fp8_group + 3) / 4 * 4; }
// Floats of the tile scales of an [n, k] matrix.
constexpr int64_t fp8_tile_scales(int64_t n, int64_t k) noexcept {
    return (n + fp8_group - 1) / fp8_group * fp8_tile_stride(k);
}
// Bytes of an [rows, k] matrix of activations quantized for a block-scaled product: its values,
// then its group scales.
constexpr int64_t fp8_activation_bytes(int64_t rows, int64_t k) noexcept {
    return rows * k + rows * (k / fp8_group) * int64_t(sizeof(float));
}

// The F8_E4M3_B128 rows of an [n, k] matrix (k a multiple of 128) as values and tile scales,
// where every 128-value block of a tile has the scale of the tile's first row (an fp8 checkpoint
// with 128x128 weight blocks); false, leaving `scales` unspecified, where one does not. The
// padding of `scales` is set to 0.
inline bool split_fp8_tiles(const uint8_t* blocks, int64_t n, int64_t k, uint8_t* values, float* scales) {
    if (k <= 0 || k % fp8_group != 0) return false;
    const int64_t groups = k / fp8_group, stride = fp8_tile_stride(k);
    const int64_t block = block_bytes(ElementType::f8_e4m3_b128);
    std::memset(scales, 0, size_t(fp8_tile_scales(n, k)) * sizeof(float));
    for (int64_t r = 0; r < n; ++r) {
        for (int64_t g = 0; g < groups; ++g) {
            const uint8_t* b = blocks + (r * groups + g) * block;
            float scale;
            std::memcpy(&scale, b, sizeof scale);
            float& tile = scales[r / fp8_group * stride + g];
            if (r % fp8_group == 0) tile = scale;
            else if (std::memcmp(&tile, &scale, sizeof scale) != 0) return false;
            std::memcpy(values + r * k + g * fp8_group, b + sizeof scale, size_t(fp8_group));
        }
    }
    return true;
}

}  // namespace unmask::kernels

// Matmuls of the CUDA backend through cuBLASLt: out[rows, n] (fp32, row-major) = x[rows, k] · wᵀ
// with w [n, k] row-major, x and w of one element type (fp32, bf16 or fp16), accumulated in fp32.
// Plans (descriptors and the heuristic's algorithm) are cached per shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

namespace unmask::cuda {

class CublasLtMatmul {
public:
    // `workspace` (device memory of workspace_bytes) must outlive this object.
    CublasLtMatmul(void* workspace, size_t workspace_bytes);
    ~CublasLtMatmul();
    CublasLtMatmul(const CublasLtMatmul&) = delete;
    CublasLtMatmul& operator=(const CublasLtMatmul&) = delete;

    // Throws Error(DEVICE) naming the shape when cuBLASLt refuses or fails.
    void run(const void* x, const void* w, cudaDataType_t type, int64_t rows, int64_t n, int64_t k, float* out,
             cudaStream_t stream);
    // The same in fp8 with block scales (kernels/fp8_tiles.hpp): e4m3 activations with a scale per
    // 128 of a row, e4m3 weights with a scale per tile of 128 x 128; k a multiple of 128, rows and
    // n multiples of 4 (cuBLASLt's rule for these scales).
    void run_fp8(const uint8_t* x, const float* x_scales, const uint8_t* w, const float* w_tile_scales, int64_t rows,
                 int64_t n, int64_t k, float* out, cudaStream_t stream);
    // Whether `device` takes block-scaled fp8 products: sm_90 (Hopper, whose fp8 tensor cores
    // cuBLASLt scales per block in software) with cuBLASLt 12.9 or later, as PyTorch requires.
    static bool block_scaled_fp8(int device);

    // The cuBLASLt shape for a row-major product (tests check it without a GPU): A = w read as
    // column-major [k, n] and transposed, B = x as column-major [k, rows], D = out as column-major
    // [n, rows].
    struct Layout {
        cublasOperation_t transa, transb;
        uint64_t m, n, k;
        int64_t lda, ldb, ldd;
    };
    static Layout layout(int64_t rows, int64_t n, int64_t k) noexcept;

    // The number of cached plans (bounded: the cache is cleared when it grows past max_plans).
    size_t plans() const noexcept { return plans_.size(); }
    static constexpr size_t max_plans = 4096;

private:
    struct Plan {
        cublasLtMatmulDesc_t operation = nullptr;
        cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
        cublasLtMatmulAlgo_t algo{};
    };
    // type, rows, n, k, and the alignment in bytes (up to 256) of the weights, inputs and outputs.
    using Shape = std::tuple<int, int64_t, int64_t, int64_t, uint32_t, uint32_t, uint32_t>;
    struct Scales {  // a block-scaled fp8 product's, on the device ({}: none)
        const float* weights;
        const float* inputs;
    };
    Plan& plan(const Shape& shape, const Scales& scales = {});
    static void set_scales(const Plan& plan, const Scales& scales);
    void run(const Plan& plan, const void* x, const void* w, float* out, cudaStream_t stream);
    static void destroy(Plan& plan) noexcept;

    cublasLtHandle_t handle_ = nullptr;
    void* workspace_;
    size_t workspace_bytes_;
    std::map<Shape, Plan> plans_;
};

}  // namespace unmask::cuda

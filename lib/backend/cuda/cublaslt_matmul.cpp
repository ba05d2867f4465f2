#include "backend/cuda/cublaslt_matmul.hpp"

#include <utility>

#include "core/error.hpp"
#include "fp8_tiles.hpp"

namespace unmask::cuda {
namespace {

void check(cublasStatus_t status, const char* what) {
    if (status != CUBLAS_STATUS_SUCCESS)
        fail(Status::device, "{} failed: {} ({})", what, cublasLtGetStatusName(status), cublasLtGetStatusString(status));
}

const char* type_name(cudaDataType_t type) {
    switch (type) {
        case CUDA_R_32F: return "fp32";
        case CUDA_R_16BF: return "bf16";
        case CUDA_R_16F: return "fp16";
        case CUDA_R_8F_E4M3: return "block-scaled fp8";
        default: return "an unsupported type";
    }
}

// The largest power of two up to 256 that divides the address (cuBLASLt's heuristic assumes 256
// unless told).
uint32_t alignment(const void* p) {
    const auto address = reinterpret_cast<uintptr_t>(p);
    return address % 256 == 0 ? 256u : static_cast<uint32_t>(address & (~address + 1));
}

}  // namespace

CublasLtMatmul::CublasLtMatmul(void* workspace, size_t workspace_bytes)
    : workspace_(workspace), workspace_bytes_(workspace_bytes) {
    check(cublasLtCreate(&handle_), "cublasLtCreate");
}

CublasLtMatmul::~CublasLtMatmul() {
    for (auto& [shape, plan] : plans_) destroy(plan);
    cublasLtDestroy(handle_);
}

void CublasLtMatmul::destroy(Plan& plan) noexcept {
    if (plan.d != nullptr) cublasLtMatrixLayoutDestroy(plan.d);
    if (plan.b != nullptr) cublasLtMatrixLayoutDestroy(plan.b);
    if (plan.a != nullptr) cublasLtMatrixLayoutDestroy(plan.a);
    if (plan.operation != nullptr) cublasLtMatmulDescDestroy(plan.operation);
    plan = Plan{};
}

CublasLtMatmul::Layout CublasLtMatmul::layout(int64_t rows, int64_t n, int64_t k) noexcept {
    return {CUBLAS_OP_T, CUBLAS_OP_N, uint64_t(n), uint64_t(rows), uint64_t(k), k, k, n};
}

void CublasLtMatmul::set_scales(const Plan& plan, const Scales& scales) {
    check(cublasLtMatmulDescSetAttribute(plan.operation, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scales.weights,
                                         sizeof scales.weights),
          "setting A_SCALE_POINTER");
    check(cublasLtMatmulDescSetAttribute(plan.operation, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scales.inputs,
                                         sizeof scales.inputs),
          "setting B_SCALE_POINTER");
}

CublasLtMatmul::Plan& CublasLtMatmul::plan(const Shape& shape, const Scales& scales) {
    const auto [type_code, rows, n, k, w_alignment, x_alignment, out_alignment] = shape;
    const auto type = static_cast<cudaDataType_t>(type_code);
    if (auto found = plans_.find(shape); found != plans_.end()) return found->second;
    if (plans_.size() >= max_plans) {
        for (auto& [key, old] : plans_) destroy(old);
        plans_.clear();
    }
    const Layout l = layout(rows, n, k);
    Plan plan;
    try {
        check(cublasLtMatmulDescCreate(&plan.operation, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
        check(cublasLtMatmulDescSetAttribute(plan.operation, CUBLASLT_MATMUL_DESC_TRANSA, &l.transa, sizeof l.transa),
              "setting TRANSA");
        check(cublasLtMatmulDescSetAttribute(plan.operation, CUBLASLT_MATMUL_DESC_TRANSB, &l.transb, sizeof l.transb),
              "setting TRANSB");
        if (type == CUDA_R_8F_E4M3) {  // the weights' scales per tile, the activations' per 128 of a row
#if CUBLAS_VERSION >= 120900
            const auto tiles = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, groups = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
            check(cublasLtMatmulDescSetAttribute(plan.operation, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &tiles, sizeof tiles),
                  "setting A_SCALE_MODE");
            check(cublasLtMatmulDescSetAttribute(plan.operation, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &groups, sizeof groups),
                  "setting B_SCALE_MODE");
            set_scales(plan, scales);
#else
            fail(Status::internal, "block-scaled fp8 matmuls need cuBLASLt 12.9 or later at build time");
#endif
        }
        check(cublasLtMatrixLayoutCreate(&plan.a, type, l.k, l.m, l.lda), "cublasLtMatrixLayoutCreate (weights)");
        check(cublasLtMatrixLayoutCreate(&plan.b, type, l.k, l.n, l.ldb), "cublasLtMatrixLayoutCreate (inputs)");
        check(cublasLtMatrixLayoutCreate(&plan.d, CUDA_R_32F, l.m, l.n, l.ldd), "cublasLtMatrixLayoutCreate (outputs)");

        cublasLtMatmulPreference_t preference = nullptr;
        check(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
        cublasLtMatmulHeuristicResult_t result{};
        int found = 0;
        cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
            preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_, sizeof workspace_bytes_);
        const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
            {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, w_alignment},
            {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, x_alignment},
            {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, out_alignment},
            {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, out_alignment}};
        for (const auto& [attribute, bytes] : alignments)
            if (status == CUBLAS_STATUS_SUCCESS)
                status = cublasLtMatmulPreferenceSetAttribute(preference, attribute, &bytes, sizeof bytes);
        if (status == CUBLAS_STATUS_SUCCESS)
            status = cublasLtMatmulAlgoGetHeuristic(handle_, plan.operation, plan.a, plan.b, plan.d, plan.d, preference,
                                                    1, &result, &found);
        cublasLtMatmulPreferenceDestroy(preference);
        check(status, "cublasLtMatmulAlgoGetHeuristic");
        if (found == 0 || result.state != CUBLAS_STATUS_SUCCESS)
            fail(Status::device, "cuBLASLt has no algorithm for a {} matmul of {} x {} by {} x {}", type_name(type), rows,
                 k, k, n);
        plan.algo = result.algo;
    } catch (...) {
        destroy(plan);
        throw;
    }
    return plans_.emplace(shape, plan).first->second;
}

void CublasLtMatmul::run(const void* x, const void* w, cudaDataType_t type, int64_t rows, int64_t n, int64_t k,
                         float* out, cudaStream_t stream) {
    if (rows <= 0 || n <= 0) return;
    if (k <= 0) fail(Status::internal, "a matmul with an inner dimension of {}", k);
    run(plan({int(type), rows, n, k, alignment(w), alignment(x), alignment(out)}), x, w, out, stream);
}

void CublasLtMatmul::run_fp8(const uint8_t* x, const float* x_scales, const uint8_t* w, const float* w_tile_scales,
                             int64_t rows, int64_t n, int64_t k, float* out, cudaStream_t stream) {
    if (rows <= 0 || n <= 0) return;
    if (k <= 0 || k % kernels::fp8_group != 0)
        fail(Status::internal, "a block-scaled fp8 matmul with an inner dimension of {}", k);
    if (rows % 4 != 0 || n % 4 != 0)
        fail(Status::internal, "a block-scaled fp8 matmul of {} rows and {} outputs (multiples of 4 only)", rows, n);
    const Scales scales{w_tile_scales, x_scales};
    const Plan& p = plan({int(CUDA_R_8F_E4M3), rows, n, k, alignment(w), alignment(x), alignment(out)}, scales);
    // This call's scales (the heuristic saw the first call's): the plan's descriptor is this
    // object's alone, and a call is queued before the next one sets them.
    set_scales(p, scales);
    run(p, x, w, out, stream);
}

void CublasLtMatmul::run(const Plan& p, const void* x, const void* w, float* out, cudaStream_t stream) {
    const float one = 1.0f, zero = 0.0f;
    check(cublasLtMatmul(handle_, p.operation, &one, w, p.a, x, p.b, &zero, out, p.d, out, p.d, &p.algo, workspace_,
                         workspace_bytes_, stream),
          "cublasLtMatmul");
}

bool CublasLtMatmul::block_scaled_fp8(int device) {
#if CUBLAS_VERSION >= 120900
    int devices = 0, major = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || device < 0 || device >= devices ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
        cudaGetLastError();  // not left for the next launch to report
        return false;
    }
    return major == 9 && cublasLtGetVersion() >= 120900;
#else
    (void)device;
    return false;
#endif
}

}  // namespace unmask::cuda

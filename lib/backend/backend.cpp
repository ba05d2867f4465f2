// What every backend shares: the mapping of weight dtypes to kernel element types and the
// grouped matmuls as a loop of matmuls (a backend with a better way overrides them).
#include "backend/backend.hpp"

#include <vector>

#include "core/error.hpp"
#include "format/dtype.hpp"

namespace unmask {

kernels::ElementType element_type(DType dtype) {
    switch (dtype) {
        case DType::f32: return kernels::ElementType::f32;
        case DType::bf16: return kernels::ElementType::bf16;
        case DType::f16: return kernels::ElementType::f16;
        case DType::q8_0: return kernels::ElementType::q8_0;
        case DType::q4_0: return kernels::ElementType::q4_0;
        case DType::q4_k: return kernels::ElementType::q4_k;
        case DType::q5_k: return kernels::ElementType::q5_k;
        case DType::q6_k: return kernels::ElementType::q6_k;
        case DType::f8_e4m3_b128: return kernels::ElementType::f8_e4m3_b128;
        default: fail(Status::internal, "dtype {} is not a weight type", dtype_name(dtype));
    }
}

int64_t grouped_matmul_groups(std::span<const GroupedMatmulOutput> outputs) {
    const size_t groups = outputs.empty() ? 0 : outputs.front().weights.size();
    for (const GroupedMatmulOutput& o : outputs)
        if (o.weights.size() != groups)
            fail(Status::internal, "grouped matmuls of {} and {} weights", o.weights.size(), groups);
    return static_cast<int64_t>(groups);
}

void check_copy_bytes(size_t bytes, const DeviceBuffer& buffer) {
    if (bytes > buffer.bytes())
        fail(Status::internal, "a copy of {} bytes into or out of a buffer of {}", bytes, buffer.bytes());
}

void check_group_rows(int64_t group, int64_t first, int64_t rows, int64_t slots) {
    if (first < 0 || rows < 0 || first + rows > slots)
        fail(Status::internal, "group {} of rows {}..{} in {} rows", group, first, first + rows, slots);
}

void Backend::grouped_matmuls(const float* x, int64_t slots, const int32_t* offsets,
                              std::span<const GroupedMatmulOutput> outputs) {
    const int64_t groups = grouped_matmul_groups(outputs);
    std::vector<MatmulOutput> group(outputs.size());
    for (int64_t e = 0; e < groups; ++e) {
        const int64_t first = offsets[e], rows = offsets[e + 1] - first;
        check_group_rows(e, first, rows, slots);
        if (rows == 0 || outputs.front().weights[size_t(e)] == nullptr) continue;  // another device's group
        for (size_t o = 0; o < outputs.size(); ++o) {
            const Weight& w = *outputs[o].weights[size_t(e)];
            group[o] = {&w, nullptr, outputs[o].out + first * w.shape.at(0)};
        }
        matmuls(x + first * group.front().weight->shape.at(1), rows, group);
    }
}

void Backend::candidate_peaks(const LogitShare&, std::span<const CandidateParams* const>, CandidatePeaks*) {
    fail(Status::unsupported, "the {} backend cannot split the candidates step among devices", name());
}
void Backend::candidate_sums(const LogitShare&, const uint32_t*, std::span<const CandidateParams* const>,
                             const CandidatePeaks*, int, CandidateSums*) {
    fail(Status::unsupported, "the {} backend cannot split the candidates step among devices", name());
}
void Backend::merge_candidates(const CandidatePeaks*, const CandidateSums*, int, int64_t, int64_t,
                               std::span<const CandidateParams* const>, Candidate*) {
    fail(Status::unsupported, "the {} backend cannot split the candidates step among devices", name());
}

}  // namespace unmask

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
        default: fail(Status::internal, "dtype {} is not a weight type", dtype_name(dtype));
    }
}

void check_grouped_matmuls(std::span<const int64_t> offsets, std::span<const GroupedMatmulOutput> outputs) {
    for (const GroupedMatmulOutput& o : outputs)
        if (o.weights.size() + 1 != offsets.size())
            fail(Status::internal, "grouped matmuls of {} weights for {} groups", o.weights.size(),
                 offsets.empty() ? 0 : offsets.size() - 1);
}

void Backend::grouped_matmuls(const float* x, std::span<const int64_t> offsets,
                              std::span<const GroupedMatmulOutput> outputs) {
    check_grouped_matmuls(offsets, outputs);
    if (outputs.empty()) return;
    std::vector<MatmulOutput> group(outputs.size());
    for (size_t e = 0; e + 1 < offsets.size(); ++e) {
        const int64_t first = offsets[e], rows = offsets[e + 1] - first;
        if (rows == 0) continue;
        for (size_t o = 0; o < outputs.size(); ++o) {
            const Weight& w = *outputs[o].weights[e];
            group[o] = {&w, nullptr, outputs[o].out + first * w.shape.at(0)};
        }
        matmuls(x + first * group.front().weight->shape.at(1), rows, group);
    }
}

}  // namespace unmask

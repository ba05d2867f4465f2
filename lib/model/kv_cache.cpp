#include "model/kv_cache.hpp"

#include "core/error.hpp"

namespace unmask {

uint64_t KVCache::bytes(const ModelSpec& spec, int64_t length, DType element) noexcept {
    return 2 * uint64_t(spec.layers) * uint64_t(length) * uint64_t(spec.kv_heads * spec.head_dim) * dtype_size(element);
}

KVCache::KVCache(Backend& backend, MemoryLedger* ledger, const ModelSpec& spec, int64_t length, DType element)
    : length_(length), row_elements_(spec.kv_heads * spec.head_dim), element_(element) {
    if (element != DType::f32 && element != DType::bf16)
        fail(Status::invalid_argument, "a K/V cache holds f32 or bf16, not {}", dtype_name(element));
    const uint64_t size = bytes(spec, length, element);
    storage_ = ledger != nullptr ? backend.allocate_in(*ledger, size) : backend.allocate(size);
}

}  // namespace unmask

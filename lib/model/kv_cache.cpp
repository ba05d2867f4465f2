#include "model/kv_cache.hpp"

#include <array>

#include "core/error.hpp"
#include "model/tensor_parallel.hpp"

namespace unmask {

uint64_t KVCache::bytes(const ModelSpec& spec, int64_t length, DType element, int devices) {
    const ModelSpec shard = shard_spec(spec, devices);
    return 2 * uint64_t(spec.layers) * uint64_t(length) * uint64_t(shard.kv_heads * spec.head_dim) * dtype_size(element);
}

KVCache::KVCache(Backend& backend, MemoryLedger* ledger, const ModelSpec& spec, int64_t length, DType element)
    : KVCache(std::span<Backend* const>(std::array{&backend}), ledger, spec, length, element) {}

KVCache::KVCache(std::span<Backend* const> devices, MemoryLedger* ledger, const ModelSpec& spec, int64_t length,
                 DType element)
    : length_(length), element_(element) {
    if (element != DType::f32 && element != DType::bf16)
        fail(Status::invalid_argument, "a K/V cache holds f32 or bf16, not {}", dtype_name(element));
    const int count = static_cast<int>(devices.size());
    row_elements_ = shard_spec(spec, count).kv_heads * spec.head_dim;
    const uint64_t size = bytes(spec, length, element, count);
    for (Backend* device : devices)
        storage_.push_back(ledger != nullptr ? device->allocate_in(*ledger, size) : device->allocate(size));
}

}  // namespace unmask

#include "model/kv_cache.hpp"

namespace unmask {

uint64_t KVCache::bytes(const ModelSpec& spec, int64_t length) noexcept {
    return 2 * uint64_t(spec.layers) * uint64_t(length) * uint64_t(spec.kv_heads * spec.head_dim) * sizeof(float);
}

KVCache::KVCache(Backend& backend, MemoryLedger* ledger, const ModelSpec& spec, int64_t length)
    : storage_(ledger != nullptr ? backend.allocate_in(*ledger, bytes(spec, length)) : backend.allocate(bytes(spec, length))),
      length_(length),
      row_floats_(spec.kv_heads * spec.head_dim) {}

}  // namespace unmask

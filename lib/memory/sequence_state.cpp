#include "memory/sequence_state.hpp"

#include <utility>

namespace unmask {

SequenceState::SequenceState(std::unique_ptr<MemoryLedger> pool, Reservation decode_state) noexcept
    : pool_(std::move(pool)), decode_state_(std::move(decode_state)) {}

SequenceState& SequenceState::operator=(SequenceState&& other) noexcept {
    if (this != &other) {
        release();
        pool_ = std::move(other.pool_);
        decode_state_ = std::move(other.decode_state_);
        cache_ = std::move(other.cache_);
        unconditional_cache_ = std::move(other.unconditional_cache_);
    }
    return *this;
}

void SequenceState::make_caches(std::span<Backend* const> devices, const ModelSpec& spec, int64_t length,
                                const SequenceOptions& options) {
    if (!options.kv_cache || cache_ != nullptr) return;
    cache_ = std::make_unique<KVCache>(devices, pool_.get(), spec, length, options.cache_precision);
    if (options.cfg)
        unconditional_cache_ = std::make_unique<KVCache>(devices, pool_.get(), spec, length, options.cache_precision);
}

void SequenceState::release() noexcept {
    unconditional_cache_.reset();
    cache_.reset();
    decode_state_ = Reservation();
    pool_.reset();
}

}  // namespace unmask

// One sequence's state, owned in one place: the pool it is charged to in the device's books (or
// none: the backend's own ledger), the decode state reserved in that pool, and the K/V caches
// allocated from it. The members are declared in the order their release needs (caches, then the
// reservation, then the pool), and an assignment releases the old state in that order first, so
// no owner has to order anything. The decoding sequence borrows it for each step.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "backend/backend.hpp"
#include "core/memory_ledger.hpp"
#include "memory/memory_plan.hpp"
#include "model/kv_cache.hpp"
#include "model/model_spec.hpp"

namespace unmask {

class SequenceState {
public:
    SequenceState() = default;  // no pool: caches are charged to the backend's own ledger
    SequenceState(std::unique_ptr<MemoryLedger> pool, Reservation decode_state) noexcept;
    SequenceState(SequenceState&&) noexcept = default;
    SequenceState& operator=(SequenceState&& other) noexcept;
    SequenceState(const SequenceState&) = delete;
    SequenceState& operator=(const SequenceState&) = delete;
    ~SequenceState() = default;  // the members' reverse order: caches, reservation, pool

    // Makes the K/V caches `options` asks for (none without a cache; a twin with CFG) for
    // `length` positions on `devices` (a shard each: the forward's devices), charged to the pool;
    // nothing when they exist. Throws OUT_OF_BUDGET when the pool cannot take them.
    void make_caches(std::span<Backend* const> devices, const ModelSpec& spec, int64_t length,
                     const SequenceOptions& options);
    KVCache* cache() const noexcept { return cache_.get(); }
    KVCache* unconditional_cache() const noexcept { return unconditional_cache_.get(); }
    MemoryLedger* pool() const noexcept { return pool_.get(); }

    // Gives everything back now (the caches, the reservation, the pool, in that order).
    void release() noexcept;

private:
    std::unique_ptr<MemoryLedger> pool_;
    Reservation decode_state_;
    std::unique_ptr<KVCache> cache_, unconditional_cache_;
};

}  // namespace unmask

// Admission by memory: before a batch of sequences runs, each one's state is reserved in the
// device ledger, and a scratch pool is carved out for its forwards. All sequences share one
// forward per step when the budget allows; otherwise the forwards take as many as fit (at least
// the largest sequence alone). What cannot fit at all is refused with OUT_OF_BUDGET and the
// longest sequence that would fit now.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/memory_ledger.hpp"
#include "memory/memory_plan.hpp"

namespace unmask {

struct SequenceShape {
    int64_t length = 0;  // canvas positions: prompt + generation
    SequenceOptions options;
};

// One sequence's state in a device's books: a pool of sequence_state_bytes in which the decode
// state is reserved at once and the K/V caches (with a cache mode) are allocated by the backend.
// The caches must be released before the pool; the reservation goes before the pool too (also
// when assigned over, which the default assignment would get the wrong way round).
struct SequenceMemory {
    std::unique_ptr<MemoryLedger> pool;
    Reservation decode_state;

    SequenceMemory() = default;
    SequenceMemory(std::unique_ptr<MemoryLedger> pool_, Reservation decode_state_) noexcept
        : pool(std::move(pool_)), decode_state(std::move(decode_state_)) {}
    SequenceMemory(SequenceMemory&&) noexcept = default;
    SequenceMemory& operator=(SequenceMemory&& other) noexcept {
        if (this != &other) {
            decode_state = Reservation();
            pool = std::move(other.pool);
            decode_state = std::move(other.decode_state);
        }
        return *this;
    }
    ~SequenceMemory() = default;  // members go in reverse order: the reservation, then the pool
};

// Null when the sequence's state does not fit in `device` now.
std::optional<SequenceMemory> try_reserve_sequence(MemoryLedger& device, const ModelSpec& spec,
                                                   const SequenceShape& shape, BackendKind backend, std::string name);

// Held while the batch runs; releases everything when destroyed.
struct BatchMemory {
    std::vector<SequenceMemory> states;
    std::unique_ptr<MemoryLedger> scratch;  // the backend allocates the forwards' buffers from it
    ForwardLimits limits;                   // for the forwards the scratch was sized for
};

BatchMemory reserve_batch(MemoryLedger& device, const ModelSpec& spec, std::span<const SequenceShape> sequences,
                          BackendKind backend, int threads);

}  // namespace unmask

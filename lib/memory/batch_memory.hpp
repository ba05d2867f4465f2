// Admission by memory: before a batch of sequences runs, each one's state is reserved in the
// device ledger, and a scratch pool is carved out for its forwards. All sequences share one
// forward per step when the budget allows; otherwise the forwards take as many as fit (at least
// the largest sequence alone). What cannot fit at all is refused with OUT_OF_BUDGET and the
// longest sequence that would fit now.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "memory/memory_ledger.hpp"
#include "memory/memory_plan.hpp"

namespace unmask {

struct SequenceShape {
    int64_t length = 0;  // canvas positions: prompt + generation
    SequenceOptions options;
};

// Held while the batch runs; releases everything when destroyed.
struct BatchMemory {
    std::vector<Reservation> states;
    std::unique_ptr<MemoryLedger> scratch;  // the backend allocates the forwards' buffers from it
    ForwardLimits limits;                   // for the forwards the scratch was sized for
};

BatchMemory reserve_batch(MemoryLedger& device, const ModelSpec& spec, std::span<const SequenceShape> sequences,
                          BackendKind backend, int threads);

}  // namespace unmask

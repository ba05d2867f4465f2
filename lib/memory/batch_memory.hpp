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
#include "memory/sequence_state.hpp"

namespace unmask {

struct SequenceShape {
    int64_t length = 0;  // canvas positions: prompt + generation
    SequenceOptions options;
};

// A sequence's state in `device`: a pool of shared_ledger_state_bytes (the `devices` sharing the
// ledger, one alone) with its decode state reserved (the K/V caches come later, from the pool).
// Null when it does not fit in `device` now.
std::optional<SequenceState> try_reserve_sequence(MemoryLedger& device, const ModelSpec& spec,
                                                   const SequenceShape& shape, BackendKind backend, std::string name,
                                                   int devices = 1);

// Held while the batch runs; releases everything when destroyed.
struct BatchMemory {
    std::vector<SequenceState> states;
    std::unique_ptr<MemoryLedger> scratch;  // the backend allocates the forwards' buffers from it
    ForwardLimits limits;                   // for the forwards the scratch was sized for
};

// On `devices` sharing the ledger, each sequence's state holds every device's K/V shard and the
// scratch every device's forwards (the threads divided among them).
BatchMemory reserve_batch(MemoryLedger& device, const ModelSpec& spec, std::span<const SequenceShape> sequences,
                          BackendKind backend, int threads, const LedgerDevices& devices = {});

}  // namespace unmask

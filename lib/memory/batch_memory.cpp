#include "memory/batch_memory.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace unmask {

std::optional<SequenceState> try_reserve_sequence(MemoryLedger& device, const ModelSpec& spec,
                                                   const SequenceShape& shape, BackendKind backend, std::string name,
                                                   int devices) {
    auto pool = device.try_pool(std::move(name),
                                shared_ledger_state_bytes(spec, shape.length, shape.options, backend, devices));
    if (pool == nullptr) return std::nullopt;
    Reservation decode_state = pool->reserve(decode_state_bytes(shape.length, shape.options), "a sequence's decode state");
    return SequenceState(std::move(pool), std::move(decode_state));
}

BatchMemory reserve_batch(MemoryLedger& device, const ModelSpec& spec, std::span<const SequenceShape> sequences,
                          BackendKind backend, int threads, const LedgerDevices& devices) {
    uint64_t state_bytes = 0;
    int64_t all_rows = 0, widest_rows = 0, longest = 0;
    const SequenceShape* longest_sequence = nullptr;
    for (const SequenceShape& s : sequences) {
        state_bytes += shared_ledger_state_bytes(spec, s.length, s.options, backend, devices.count);
        const int64_t rows = forward_rows(s.length, s.options);
        all_rows += rows;
        widest_rows = std::max(widest_rows, rows);
        if (s.length > longest) {
            longest = s.length;
            longest_sequence = &s;
        }
    }
    if (longest_sequence == nullptr) fail(Status::internal, "reserve_batch() without sequences");
    auto scratch_for = [&](int64_t rows) {
        return shared_ledger_scratch_bytes(spec, {rows, longest}, backend, threads, devices);
    };
    auto refuse = [&](uint64_t available) {
        const auto count = static_cast<int64_t>(sequences.size());
        const int64_t fitting =
            longest_fitting_sequence(spec, available, longest_sequence->options, backend, threads, count, devices);
        fail(Status::out_of_budget,
             "{} sequence(s) of up to {} positions need {} bytes of state and at least {} of scratch, but {} has {} of "
             "its {} bytes left; {}",
             count, longest, state_bytes, scratch_for(widest_rows), device.name(), available, device.capacity(),
             fitting == 0                ? std::string("no sequence fits now")
             : count == 1                ? fmt::format("the longest sequence that fits now has {} positions", fitting)
                                         : fmt::format("the longest sequences that fit now, {} of them, have {} positions",
                                                       count, fitting));
    };
    const uint64_t available = device.available();
    // Every sequence in one forward if possible, else the most rows per forward that fit.
    const int64_t rows = largest_fitting(widest_rows, std::min(all_rows, max_forward_rows), [&](int64_t r) {
        return state_bytes + scratch_for(r) <= available;
    });
    if (rows < widest_rows) refuse(available);
    BatchMemory memory;
    try {
        for (const SequenceShape& s : sequences) {
            auto state =
                try_reserve_sequence(device, spec, s, backend, device.name() + " sequence state", devices.count);
            if (!state) fail(Status::out_of_budget, "a sequence's state no longer fits");
            memory.states.push_back(std::move(*state));
        }
        memory.limits = {rows, longest};
        memory.scratch = device.pool(device.name() + " scratch", scratch_for(rows));
    } catch (const Error& e) {
        // Another generation took memory since `available` was read.
        if (e.status() != Status::out_of_budget) throw;
        memory = BatchMemory();
        refuse(device.available());
    }
    return memory;
}

}  // namespace unmask

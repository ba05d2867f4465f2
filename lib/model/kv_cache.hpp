// One sequence's K/V cache: per layer, the keys and values (after RoPE) of every canvas position,
// so that a forward can feed only part of the canvas and read the rest from here (ALGORITHMS.md
// section 4). Device memory, charged to the ledger it was made with (the sequence's state).
#pragma once

#include <cstdint>

#include "backend/backend.hpp"
#include "model/model_spec.hpp"

namespace unmask {

class KVCache {
public:
    // Room for `length` positions, charged to `ledger` (null: the backend's own). Throws
    // OUT_OF_BUDGET when it cannot take them.
    KVCache(Backend& backend, MemoryLedger* ledger, const ModelSpec& spec, int64_t length);

    // Bytes of one cache of `length` positions (fp32, like the activations, on every backend).
    static uint64_t bytes(const ModelSpec& spec, int64_t length) noexcept;

    int64_t length() const noexcept { return length_; }
    int64_t row_floats() const noexcept { return row_floats_; }  // kv_heads x head_dim
    float* keys(int64_t layer) const noexcept { return storage_.floats() + (2 * layer) * length_ * row_floats_; }
    float* values(int64_t layer) const noexcept { return keys(layer) + length_ * row_floats_; }

    // Positions [0, written) hold K/V a forward wrote (forwards extend it from the start, like a
    // prefill); a forward reads only written positions.
    int64_t written() const noexcept { return written_; }
    void extend_written(int64_t end) noexcept { written_ = end > written_ ? end : written_; }

private:
    DeviceBuffer storage_;  // [layers][keys, values][length][row_floats]
    int64_t length_ = 0, row_floats_ = 0, written_ = 0;
};

}  // namespace unmask

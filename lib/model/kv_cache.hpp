// One sequence's K/V cache: per layer, the keys and values (after RoPE) of every canvas position,
// so that a forward can feed only part of the canvas and read the rest from here
// (docs/cache-modes.md). Device memory, charged to the ledger it was made with (the sequence's
// state). With tensor parallelism each device holds a shard: the K/V heads its query heads read
// (model/tensor_parallel.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "format/dtype.hpp"
#include "model/model_spec.hpp"

namespace unmask {

class KVCache {
public:
    // Room for `length` positions of `element` (f32, as the activations, or bf16: half the bytes,
    // each key and value rounded to nearest even as it is stored), charged to `ledger` (null: the
    // backend's own). Throws OUT_OF_BUDGET when it cannot take them.
    KVCache(Backend& backend, MemoryLedger* ledger, const ModelSpec& spec, int64_t length,
            DType element = DType::f32);
    // One shard per device of a tensor-parallel forward (the model's spec; each device's shard
    // holds its K/V heads), all charged to `ledger`.
    KVCache(std::span<Backend* const> devices, MemoryLedger* ledger, const ModelSpec& spec, int64_t length,
            DType element = DType::f32);

    // Bytes of one device's shard of a cache of `length` positions among `devices`.
    static uint64_t bytes(const ModelSpec& spec, int64_t length, DType element, int devices = 1);

    int64_t length() const noexcept { return length_; }
    int64_t row_elements() const noexcept { return row_elements_; }  // a shard's kv_heads x head_dim
    int shards() const noexcept { return static_cast<int>(storage_.size()); }
    DType element() const noexcept { return element_; }
    void* keys(int64_t layer, int shard = 0) const noexcept { return at(shard, (2 * layer) * length_); }
    void* values(int64_t layer, int shard = 0) const noexcept { return at(shard, (2 * layer + 1) * length_); }
    // Where position `position` of `rows` (keys(layer) or values(layer)) starts.
    void* row(void* rows, int64_t position) const noexcept {
        return static_cast<char*>(rows) + position * row_elements_ * int64_t(dtype_size(element_));
    }

    // Positions [0, written) hold K/V a forward wrote (forwards extend it from the start, like a
    // prefill); a forward reads only written positions.
    int64_t written() const noexcept { return written_; }
    void extend_written(int64_t end) noexcept { written_ = end > written_ ? end : written_; }

private:
    void* at(int shard, int64_t row_index) const noexcept { return row(storage_[size_t(shard)].floats(), row_index); }

    std::vector<DeviceBuffer> storage_;  // per shard: [layers][keys, values][length][row_elements]
    int64_t length_ = 0, row_elements_ = 0, written_ = 0;
    DType element_ = DType::f32;
};

}  // namespace unmask

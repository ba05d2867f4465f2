#include "model/tensor_parallel.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "format/dtype.hpp"

namespace unmask {

ModelSpec shard_spec(const ModelSpec& spec, int devices) {
    if (devices < 1) fail(Status::invalid_argument, "a model needs at least one device, not {}", devices);
    if (devices == 1) return spec;
    auto require = [&](int64_t value, const char* what) {
        if (value % devices != 0)
            fail(Status::unsupported, "tensor parallelism over {} devices: the model's {} {} do not divide among them",
                 devices, value, what);
    };
    require(spec.attention_heads, "attention heads");
    if (spec.kv_heads % devices != 0 && devices % spec.kv_heads != 0)
        fail(Status::unsupported, "tensor parallelism over {} devices: the model's {} K/V heads neither divide among "
             "them nor replicate evenly over them", devices, spec.kv_heads);
    require(spec.intermediate_size, "MLP columns");
    require(spec.experts, "routed experts");
    require(spec.shared_expert_intermediate_size, "shared-expert MLP columns");
    if ((devices - 1) * vocabulary_slice(spec.embedding_rows, devices) >= spec.embedding_rows)
        fail(Status::unsupported, "tensor parallelism over {} devices: the model's {} vocabulary rows are too few to "
             "give each a slice", devices, spec.embedding_rows);
    ModelSpec shard = spec;
    shard.attention_heads /= devices;
    shard.kv_heads = spec.kv_heads >= devices ? spec.kv_heads / devices : 1;
    shard.intermediate_size /= devices;
    shard.shared_expert_intermediate_size /= devices;
    return shard;
}

int64_t vocabulary_slice(int64_t rows, int devices) noexcept { return (rows + devices - 1) / devices; }

int64_t gathered_vocabulary_slack(int64_t rows, int devices) noexcept {
    return devices * vocabulary_slice(rows, devices) - rows;
}

int64_t first_kv_head(const ModelSpec& spec, int rank, int devices) noexcept {
    return int64_t(rank) * spec.kv_heads / devices;  // with fewer K/V heads than devices: each serves devices / kv_heads
}

namespace {

// Rows first..first + count of a matrix (or elements of a vector): a view of the same memory.
Weight row_share(const Weight& w, int64_t first, int64_t count) {
    const int64_t columns = w.shape.size() > 1 ? w.shape[1] : 1;
    Weight share = w;
    share.shape[0] = count;
    share.elements = uint64_t(count * columns);
    share.data = static_cast<const char*>(w.data) + dtype_bytes(w.dtype, uint64_t(first * columns));
    share.panels = nullptr;  // (models on several devices are not packed)
    return share;
}

}  // namespace

uint64_t Share::elements(const std::vector<int64_t>& shape) const noexcept {
    uint64_t n = 1;
    for (int64_t extent : shape) n *= uint64_t(extent);
    if (split == Split::absent) return 0;
    if (split == Split::replicated || shape.empty()) return n;
    const int64_t whole = split == Split::rows ? shape[0] : shape.at(1);
    return whole == 0 ? 0 : n / uint64_t(whole) * uint64_t(count);
}

Share share_of(const ModelSpec& spec, Role role, int32_t expert, const std::vector<int64_t>& shape, int rank,
               int devices) {
    if (devices == 1 || shape.empty()) return {};
    const ModelSpec shard = shard_spec(spec, devices);
    const int64_t hd = spec.head_dim, q_width = shard.attention_heads * hd, kv_width = shard.kv_heads * hd;
    switch (role) {
        case Role::q_proj: case Role::q_bias: return {Split::rows, rank * q_width, q_width};
        case Role::k_proj: case Role::v_proj: case Role::k_bias: case Role::v_bias:
            return {Split::rows, first_kv_head(spec, rank, devices) * hd, kv_width};
        case Role::mlp_gate: case Role::mlp_up: case Role::shared_gate: case Role::shared_up:
            return {Split::rows, rank * (shape[0] / devices), shape[0] / devices};
        case Role::lm_head: {
            const int64_t slice = vocabulary_slice(shape[0], devices), first = rank * slice;
            return {Split::rows, first, std::min(slice, shape[0] - first)};
        }
        case Role::o_proj: return {Split::columns, rank * q_width, q_width};
        case Role::mlp_down: case Role::shared_down:
            return {Split::columns, rank * (shape.at(1) / devices), shape.at(1) / devices};
        case Role::expert_gate: case Role::expert_up: case Role::expert_down:
            return {expert / (spec.experts / devices) == rank ? Split::replicated : Split::absent};
        default: return {};
    }
}

uint64_t shard_copy_bytes(const Model& model, int devices) {
    uint64_t bytes = 0;
    for (const Weight& w : model.weights()) {
        const Share share = share_of(model.spec(), w, 0, devices);
        if (share.split == Split::columns) bytes += allocation_bytes(dtype_bytes(w.dtype, share.elements(w.shape)));
    }
    return bytes;
}

Share share_of(const ModelSpec& spec, const Weight& w, int rank, int devices) {
    const Share share = share_of(spec, w.role, w.expert, w.shape, rank, devices);
    const int64_t block = dtype_block_elements(w.dtype);
    if (share.split == Split::columns && (share.first % block != 0 || share.count % block != 0))
        fail(Status::unsupported, "tensor parallelism over {} devices: {} ({}) splits into shares of {} columns, not "
             "whole blocks of {}", devices, w.name, dtype_name(w.dtype), share.count, block);
    return share;
}

std::unique_ptr<WeightShard> shard_weights(const Model& model, int rank, int devices, Backend& device) {
    const ModelSpec& spec = model.spec();
    shard_spec(spec, devices);  // refuses what does not divide
    if (rank < 0 || rank >= devices) fail(Status::invalid_argument, "rank {} of {} devices", rank, devices);
    auto out = std::unique_ptr<WeightShard>(new WeightShard());
    // Columns first..first + count of every row: a copy, as the rows of the share are not contiguous.
    auto column_share = [&](const Weight& w, int64_t first, int64_t count) {
        const int64_t rows = w.shape.at(0), columns = w.shape.at(1);
        const uint64_t row_bytes = dtype_bytes(w.dtype, uint64_t(columns)), share_bytes = dtype_bytes(w.dtype, uint64_t(count)),
                       offset = dtype_bytes(w.dtype, uint64_t(first));
        std::vector<char> staged(share_bytes * uint64_t(rows));
        for (int64_t r = 0; r < rows; ++r)
            std::memcpy(staged.data() + uint64_t(r) * share_bytes,
                        static_cast<const char*>(w.data) + uint64_t(r) * row_bytes + offset, share_bytes);
        DeviceBuffer& copy = out->copies_.emplace_back(device.allocate(staged.size()));
        device.copy_to_device(copy, staged.data(), staged.size());
        Weight share = w;
        share.shape[1] = count;
        share.elements = uint64_t(rows * count);
        share.data = copy.floats();
        share.panels = nullptr;
        return share;
    };
    const Weight* embedding = nullptr;
    bool has_lm_head = false;
    for (const Weight& w : model.weights()) {
        has_lm_head = has_lm_head || w.role == Role::lm_head;
        if (w.role == Role::embedding) embedding = &w;
        const Share share = share_of(spec, w, rank, devices);
        switch (share.split) {
            case Split::absent: break;
            case Split::replicated: out->weights_.push_back(w); break;
            case Split::rows: out->weights_.push_back(row_share(w, share.first, share.count)); break;
            case Split::columns: out->weights_.push_back(column_share(w, share.first, share.count)); break;
        }
    }
    if (!has_lm_head && embedding != nullptr && devices > 1) {  // tied: the LM head is a view of the embedding's rows
        const Share share = share_of(spec, Role::lm_head, -1, embedding->shape, rank, devices);
        Weight head = row_share(*embedding, share.first, share.count);
        head.role = Role::lm_head;
        head.component = Component::lm_head;
        out->weights_.push_back(head);
    }
    return out;
}

}  // namespace unmask

#include "model/forward.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <exception>
#include <iterator>
#include <mutex>
#include <thread>

#include "attention_mask.hpp"
#include "core/error.hpp"
#include "model/forward_rank.hpp"

namespace unmask {

namespace {
std::atomic<int64_t> next_forward_id{0};
}  // namespace

Forward::Forward(const Model& model, Backend& backend, const ForwardLimits& limits)
    : Forward(model, std::span<Backend* const>(std::array{&backend}), limits) {}

Forward::Forward(const Model& model, std::span<Backend* const> devices, const ForwardLimits& limits)
    : spec_(model.spec()), limits_(limits), devices_(devices.begin(), devices.end()) {
    if (!model.has_data()) fail(Status::invalid_argument, "the model was loaded for metadata only and cannot run");
    if (limits.tokens < 1 || limits.tokens > INT32_MAX || limits.sequence_length < 1 ||
        limits.sequence_length > spec_.max_sequence_length)
        fail(Status::invalid_argument, "forward limits of {} tokens and sequences of {} are outside 1..{}",
             limits.tokens, limits.sequence_length, spec_.max_sequence_length);
    if (devices_.empty()) fail(Status::invalid_argument, "a forward needs at least one device");
    const auto count = static_cast<int>(devices_.size());
    if (count > 1) {
        for (size_t r = 0; r < devices_.size(); ++r)
            if (devices_[r]->kind() != BackendKind::cpu)
                fail(Status::unsupported, "tensor parallelism over {} devices: device {} is a {} backend, and only host "
                     "devices (cpu) have a communicator in this build", count, r, devices_[r]->name());
        communicators_ = make_host_communicators(count);
    }
    const int64_t id = next_forward_id.fetch_add(1);
    for (int r = 0; r < count; ++r)
        ranks_.push_back(std::make_unique<ForwardRank>(model, r, count, *devices_[size_t(r)],
                                                       count > 1 ? communicators_[size_t(r)].get() : nullptr, limits, id));
}

Forward::~Forward() = default;

PackedBatch Forward::pack(std::span<const ForwardSequence> batch, bool want_logits) const {
    if (batch.empty()) fail(Status::invalid_argument, "the batch is empty");
    const int64_t kv_heads = ranks_.front()->spec().kv_heads, hd = spec_.head_dim, vocab = spec_.embedding_rows;
    const int64_t block_size = spec_.diffusion_block_size;
    PackedBatch packed;
    std::vector<PackedBatch::Run>& runs = packed.runs;
    std::vector<int32_t> &ids = packed.ids, &positions = packed.positions, &output_rows = packed.output_rows,
                         &guidance_rows = packed.guidance_rows;
    std::vector<double>& guidance_scales = packed.guidance_scales;
    std::vector<uint32_t>& output_positions = packed.output_positions;
    std::vector<const CandidateParams*>& output_params = packed.output_params;
    auto append_run = [&](std::span<const int32_t> tokens, KVCache* cache, int64_t feed_begin, int64_t feed_end,
                          int64_t block_origin, size_t s) {
        const auto length = static_cast<int64_t>(tokens.size());
        // Bidirectional attention reads every position; block-causal, up to the last fed block's end.
        const int64_t keys =
            block_size > 0 ? std::min(length, kernels::block_end(feed_end - 1, block_size, block_origin)) : length;
        if (cache != nullptr) {
            if (cache->length() < length || cache->row_elements() != kv_heads * hd ||
                cache->shards() != static_cast<int>(devices_.size()))
                fail(Status::invalid_argument, "sequence {}: its K/V cache holds {} positions of {} elements on {} "
                     "devices, not {} of {} on {}", s, cache->length(), cache->row_elements(), cache->shards(), length,
                     kv_heads * hd, devices_.size());
            if (feed_begin > cache->written() || std::max(feed_end, cache->written()) < keys)
                fail(Status::invalid_argument, "sequence {} feeds positions {}..{} and attends to 0..{}, but its K/V "
                     "cache holds only 0..{}", s, feed_begin, feed_end, keys, cache->written());
        }
        const auto first_row = static_cast<int64_t>(ids.size());
        runs.push_back({first_row, feed_end - feed_begin, feed_begin, keys, block_origin, cache});
        for (int64_t p = 0; p < length; ++p) {
            const int32_t token = tokens[size_t(p)];
            if (token < 0 || token >= vocab)
                fail(Status::invalid_argument, "token id {} at position {} of sequence {} is outside the vocabulary of {}",
                     token, p, s, vocab);
        }
        for (int64_t p = feed_begin; p < feed_end; ++p) {
            ids.push_back(tokens[size_t(p)]);
            positions.push_back(static_cast<int32_t>(p));
        }
        return first_row;
    };
    for (size_t s = 0; s < batch.size(); ++s) {
        const ForwardSequence& seq = batch[s];
        const auto length = static_cast<int64_t>(seq.tokens.size());
        if (length == 0) fail(Status::invalid_argument, "sequence {} of the batch is empty", s);
        if (length > limits_.sequence_length)
            fail(Status::too_long, "sequence {} has {} tokens; this forward was sized for {}", s, length,
                 limits_.sequence_length);
        if (!want_logits && seq.sampling == nullptr)
            fail(Status::invalid_argument, "sequence {} asks for candidates without sampling parameters", s);
        const bool guided = seq.cfg_scale > 0;
        if (guided && seq.unconditional_tokens.size() != seq.tokens.size())
            fail(Status::invalid_argument, "sequence {}: the unconditional canvas has {} tokens, the canvas {}", s,
                 seq.unconditional_tokens.size(), seq.tokens.size());
        const int64_t feed_begin = seq.feed_begin, feed_end = seq.feed_end < 0 ? length : seq.feed_end;
        if (feed_begin < 0 || feed_begin >= feed_end || feed_end > length)
            fail(Status::invalid_argument, "sequence {}: the fed positions {}..{} are not a range within its {}", s,
                 feed_begin, feed_end, length);
        if (seq.block_origin < 0 || seq.block_origin > length)
            fail(Status::invalid_argument, "sequence {}: block_origin {} is outside its {} positions", s,
                 seq.block_origin, length);
        if ((seq.cache == nullptr && (feed_begin > 0 || feed_end < length)) ||
            (guided && (seq.cache == nullptr) != (seq.unconditional_cache == nullptr)))
            fail(Status::invalid_argument, "sequence {} feeds part of its canvas without a K/V cache for {}", s,
                 seq.cache == nullptr ? "it" : "its unconditional twin");
        const int64_t first_row = append_run(seq.tokens, seq.cache, feed_begin, feed_end, seq.block_origin, s);
        const int64_t unconditional_row =
            guided ? append_run(seq.unconditional_tokens, seq.unconditional_cache, feed_begin, feed_end, seq.block_origin, s)
                   : -1;
        auto add_output = [&](int64_t p) {
            if (p < 0 || p >= length)
                fail(Status::invalid_argument, "output position {} is outside sequence {} of length {}", p, s, length);
            // Dream predicts position p from the hidden state of p - 1 (position 0 keeps its own).
            const int64_t source = spec_.logits_shift && p > 0 ? p - 1 : p;
            if (source < feed_begin || source >= feed_end)
                fail(Status::invalid_argument, "output position {} of sequence {} needs position {}, which is not fed "
                     "({}..{})", p, s, source, feed_begin, feed_end);
            output_rows.push_back(static_cast<int32_t>(first_row + source - feed_begin));
            guidance_rows.push_back(guided ? static_cast<int32_t>(unconditional_row + source - feed_begin) : -1);
            guidance_scales.push_back(seq.cfg_scale);
            output_positions.push_back(static_cast<uint32_t>(p));
            output_params.push_back(seq.sampling);
        };
        if (seq.output_positions.empty())
            for (int64_t p = 0; p < length; ++p) add_output(p);
        else
            for (int32_t p : seq.output_positions) add_output(p);
    }
    const auto tokens = static_cast<int64_t>(ids.size());
    if (tokens > limits_.tokens)
        fail(Status::too_long, "the batch has {} tokens; this forward was sized for {}", tokens, limits_.tokens);
    keep_output_rows(packed);
    return packed;
}

void Forward::keep_output_rows(PackedBatch& packed) const {
    const auto tokens = packed.ids.size();
    std::vector<bool> kept(tokens, false);
    for (size_t i = 0; i < packed.output_rows.size(); ++i) {
        kept[size_t(packed.output_rows[i])] = true;
        if (packed.guidance_rows[i] >= 0) kept[size_t(packed.guidance_rows[i])] = true;
    }
    // Whole granules: rows left out join a run's kept rows up to the next multiple, first those
    // between its first and last kept rows (under block-causal masks, a block's masked positions
    // then attend as one segment), then its first rows.
    for (const PackedBatch::Run& run : packed.runs) {
        const auto first = kept.begin() + run.first_row, end = first + run.rows;
        int64_t count = std::count(first, end, true);
        const int64_t wanted = std::min(run.rows, (count + kept_row_granule - 1) / kept_row_granule * kept_row_granule);
        const auto last = std::find(std::make_reverse_iterator(end), std::make_reverse_iterator(first), true).base();
        for (auto row = std::find(first, end, true); row < last && count < wanted; ++row)
            if (!*row) *row = true, ++count;
        for (auto row = first; row != end && count < wanted; ++row)
            if (!*row) *row = true, ++count;
    }
    if (std::find(kept.begin(), kept.end(), false) == kept.end()) return;  // the last layer runs whole

    std::vector<int32_t> dense(tokens, -1);  // each kept row's place among the kept
    for (size_t r = 0; r < packed.runs.size(); ++r) {
        const PackedBatch::Run& run = packed.runs[r];
        for (int64_t row = run.first_row; row < run.first_row + run.rows; ++row) {
            if (!kept[size_t(row)]) continue;
            const auto place = static_cast<int64_t>(packed.kept_rows.size());
            const int32_t position = packed.positions[size_t(row)];
            // Bidirectional attention reads no query position: a run is one segment, at 0.
            const bool causal = spec_.diffusion_block_size > 0;
            const bool extends = !packed.kept.empty() && packed.kept.back().run == int64_t(r) &&
                                 (!causal || packed.kept.back().position + packed.kept.back().count == position);
            if (extends) ++packed.kept.back().count;
            else packed.kept.push_back({int64_t(r), place, 1, causal ? position : 0});
            dense[size_t(row)] = static_cast<int32_t>(place);
            packed.kept_rows.push_back(static_cast<int32_t>(row));
            packed.kept_positions.push_back(position);
        }
    }
    for (size_t i = 0; i < packed.output_rows.size(); ++i) {
        packed.output_rows[i] = dense[size_t(packed.output_rows[i])];
        if (packed.guidance_rows[i] >= 0) packed.guidance_rows[i] = dense[size_t(packed.guidance_rows[i])];
    }
}

ForwardOutput Forward::run(std::span<const ForwardSequence> batch, bool want_logits) {
    const PackedBatch packed = pack(batch, want_logits);
    ForwardOutput output;
    const auto outputs = packed.output_rows.size();
    if (want_logits) output.logits.resize(outputs * size_t(spec_.embedding_rows));
    else output.candidates.resize(outputs);

    if (ranks_.size() == 1) {
        ranks_.front()->run(packed, want_logits, output);
    } else {
        // Every device at once, the first on this thread. The first to fail ends the group's work
        // (Communicator::abort): the others leave their collectives with DEVICE, and its error is
        // the one thrown. Once all have stopped, a new group replaces the aborted one, so that the
        // next forward runs as after a failure on one device.
        std::mutex mutex;
        std::exception_ptr first_error;
        auto failed = [&](ForwardRank& rank, const char* reason) {
            {
                std::lock_guard lock(mutex);
                if (first_error == nullptr) first_error = std::current_exception();
            }
            rank.communicator()->abort(reason);
        };
        auto run_rank = [&](ForwardRank& rank) {
            try {
                rank.run(packed, want_logits, output);
            } catch (const std::exception& e) {
                failed(rank, e.what());
            } catch (...) {
                failed(rank, "an exception that is not a std::exception");
            }
        };
        std::vector<std::thread> threads;
        try {
            for (size_t r = 1; r < ranks_.size(); ++r) threads.emplace_back(run_rank, std::ref(*ranks_[r]));
        } catch (...) {  // the threads started meet an aborted group and end
            failed(*ranks_.front(), "a device's thread could not start");
        }
        if (threads.size() + 1 == ranks_.size()) run_rank(*ranks_.front());
        for (std::thread& thread : threads) thread.join();
        if (first_error != nullptr) {
            communicators_ = make_host_communicators(static_cast<int>(ranks_.size()));
            for (size_t r = 0; r < ranks_.size(); ++r) ranks_[r]->rejoin(*communicators_[r]);
            std::rethrow_exception(first_error);
        }
    }
    for (const PackedBatch::Run& run : packed.runs)
        if (run.cache != nullptr) run.cache->extend_written(run.feed_begin + run.rows);
    return output;
}

}  // namespace unmask

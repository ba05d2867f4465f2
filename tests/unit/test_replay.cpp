// Replayable work (Backend::run_replayable, CUDA graphs on a GPU): the cache that decides what to
// record and replay, and the forward's side of the contract, checked on the CPU by a backend that
// records calls as a graph capture does (arguments taken when the call is made, the device work
// done when the recording is replayed) and replays them for a repeated key: generations through
// it must give the plain CPU backend's tokens exactly.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "backend/replay_cache.hpp"
#include "decode/generate.hpp"
#include "decode/sequence.hpp"
#include "fixtures.hpp"
#include "model/forward.hpp"
#include "model/kv_cache.hpp"
#include "model/model.hpp"

using namespace unmask;

namespace {

using Key = std::vector<int64_t>;
using Action = ReplayCache::Action;

// The CPU backend behind a recorder: while recording, each call is kept (its arguments copied)
// instead of done; a recording is done in full when made and whenever its key comes again. Calls
// that a recording cannot hold (transfers to or from the host, allocations, work whose result the
// host reads) fail the test when made while recording.
class ReplayingBackend final : public Backend {
public:
    explicit ReplayingBackend(size_t slots) : replays_(slots), tapes_(slots) {}

    int64_t replayable_calls = 0, recordings = 0, replays = 0;

    const char* name() const noexcept override { return "replaying cpu"; }
    BackendKind kind() const noexcept override { return BackendKind::cpu; }
    void run_replayable(std::span<const int64_t> key, const std::function<void()>& work) override {
        ++replayable_calls;
        const ReplayCache::Decision decision = replays_.decide(key);
        if (decision.action == Action::run) return work();
        std::vector<std::function<void()>>& tape = tapes_[decision.slot];
        if (decision.action == Action::record) {
            std::vector<std::function<void()>> made;  // the slot's old tape stays until this one is made
            recording_ = &made;
            try {
                work();
            } catch (...) {
                recording_ = nullptr;
                replays_.abandon(decision.slot);
                throw;
            }
            recording_ = nullptr;
            tape = std::move(made);
            replays_.recorded(decision.slot);
            ++recordings;
        } else {
            ++replays;
        }
        for (const auto& call : tape) call();
    }

    DeviceBuffer allocate(size_t bytes) override {
        host_only("allocate");
        return cpu_->allocate(bytes);
    }
    DeviceBuffer allocate_in(MemoryLedger& ledger, size_t bytes) override {
        host_only("allocate_in");
        return cpu_->allocate_in(ledger, bytes);
    }
    void reserve_workspace(const WorkspaceLimits& limits) override {
        host_only("reserve_workspace");
        cpu_->reserve_workspace(limits);
    }
    void copy_to_device(DeviceBuffer& destination, const void* source, size_t bytes) override {
        host_only("copy_to_device");
        cpu_->copy_to_device(destination, source, bytes);
    }
    void copy_to_host(void* destination, const DeviceBuffer& source, size_t bytes) override {
        host_only("copy_to_host");
        cpu_->copy_to_host(destination, source, bytes);
    }
    void candidates(const float* logits, int64_t rows, int64_t vocab, const uint32_t* positions,
                    std::span<const CandidateParams* const> params, Candidate* out) override {
        host_only("candidates");
        cpu_->candidates(logits, rows, vocab, positions, params, out);
    }

    void embedding(const Weight& table, const int32_t* ids, int64_t rows, float* out) override {
        call([=, this] { cpu_->embedding(table, ids, rows, out); });
    }
    void rmsnorm(const float* x, int64_t rows, int64_t dim, int64_t x_stride, const Weight& w, double eps, float* out,
                 int64_t out_stride) override {
        call([=, this, &w] { cpu_->rmsnorm(x, rows, dim, x_stride, w, eps, out, out_stride); });
    }
    void matmul(const float* x, int64_t rows, const Weight& w, const Weight* bias, float* out) override {
        call([=, this, &w] { cpu_->matmul(x, rows, w, bias, out); });
    }
    void matmuls(const float* x, int64_t rows, std::span<const MatmulOutput> outputs) override {
        call([=, this, copied = std::vector(outputs.begin(), outputs.end())] { cpu_->matmuls(x, rows, copied); });
    }
    void rope(float* x, int64_t rows, int64_t heads, int64_t head_dim, const int32_t* positions,
              const RopeSpec& rope) override {
        call([=, this] { cpu_->rope(x, rows, heads, head_dim, positions, rope); });
    }
    void store(const float* source, int64_t n, kernels::ElementType type, void* destination) override {
        call([=, this] { cpu_->store(source, n, type, destination); });
    }
    void attention(const float* q, const float* k, const float* v, std::span<const SequenceRows> sequences,
                   const AttentionParams& params, float* out) override {
        call([=, this, copied = std::vector(sequences.begin(), sequences.end())] {
            cpu_->attention(q, k, v, copied, params, out);
        });
    }
    void swiglu(float* gate, const float* up, int64_t n) override { call([=, this] { cpu_->swiglu(gate, up, n); }); }
    void add(float* x, const float* y, int64_t n) override { call([=, this] { cpu_->add(x, y, n); }); }
    void zero(float* x, int64_t n) override { call([=, this] { cpu_->zero(x, n); }); }
    void add_rmsnorm(float* x, const float* y, int64_t rows, int64_t dim, const Weight& w, double eps,
                     float* out) override {
        call([=, this, &w] { cpu_->add_rmsnorm(x, y, rows, dim, w, eps, out); });
    }
    void route(const float* router_logits, int64_t rows, const RouterParams& params, int32_t* experts,
               float* weights) override {
        call([=, this] { cpu_->route(router_logits, rows, params, experts, weights); });
    }
    void group_by_expert(const int32_t* experts, const float* weights, int64_t rows, int64_t k, int64_t expert_count,
                         int32_t* slot_rows, int32_t* token_slots, float* token_scales, int32_t* offsets) override {
        call([=, this] {
            cpu_->group_by_expert(experts, weights, rows, k, expert_count, slot_rows, token_slots, token_scales,
                                  offsets);
        });
    }
    void grouped_matmuls(const float* x, int64_t slots, const int32_t* offsets,
                         std::span<const GroupedMatmulOutput> outputs) override {
        call([=, this, copied = std::vector(outputs.begin(), outputs.end())] {
            cpu_->grouped_matmuls(x, slots, offsets, copied);
        });
    }
    void unpermute_add(float* x, int64_t rows, int64_t dim, int64_t k, const int32_t* token_slots,
                       const float* token_scales, const float* y) override {
        call([=, this] { cpu_->unpermute_add(x, rows, dim, k, token_slots, token_scales, y); });
    }
    void gather_rows(const float* x, int64_t dim, const int32_t* rows, int64_t count, float* out) override {
        call([=, this] { cpu_->gather_rows(x, dim, rows, count, out); });
    }
    void combine_guidance(float* cond, const float* uncond, double scale, int64_t n) override {
        call([=, this] { cpu_->combine_guidance(cond, uncond, scale, n); });
    }

private:
    void call(std::function<void()> work) {
        if (recording_ != nullptr) recording_->push_back(std::move(work));
        else work();
    }
    void host_only(const char* what) const {
        if (recording_ != nullptr) throw std::logic_error(std::string(what) + " while recording replayable work");
    }

    std::unique_ptr<Backend> cpu_ = make_cpu_backend(1);
    ReplayCache replays_;
    std::vector<std::vector<std::function<void()>>> tapes_;
    std::vector<std::function<void()>>* recording_ = nullptr;
};

std::unique_ptr<Model> load(const std::string& name) {
    LoadOptions options;
    options.precision = Precision::fp32;
    return load_model(test_data_path("reference/" + name), options);
}

// Two sequences of different prompts, run to the end on `backend`: their canvases.
std::vector<std::vector<int32_t>> generate_on(Backend& backend, const Model& model, const DecodeParams& params) {
    const ModelSpec& spec = model.spec();
    std::vector<DecodeSequence> sequences;
    for (const std::vector<int32_t>& prompt : {std::vector<int32_t>{5, 9, 14, 3, 22}, std::vector<int32_t>{7, 41, 2}}) {
        std::vector<int32_t> canvas = prompt;
        canvas.resize(prompt.size() + size_t(params.gen_length), static_cast<int32_t>(spec.mask_token_id));
        sequences.emplace_back(spec, params, std::move(canvas));
    }
    generate(model, backend, sequences, single_forward_limits(sequences));
    std::vector<std::vector<int32_t>> canvases;
    for (const DecodeSequence& s : sequences) canvases.push_back(s.canvas());
    return canvases;
}

}  // namespace

TEST_CASE("a key is recorded the second time it comes and replayed from then on") {
    ReplayCache cache(2);
    const Key a{1, 2, 3}, b{1, 2, 4}, c{7};
    CHECK(cache.decide(a).action == Action::run);  // seen once: not worth a recording
    const ReplayCache::Decision record = cache.decide(a);
    REQUIRE(record.action == Action::record);
    CHECK(cache.recordings() == 0);
    cache.recorded(record.slot);
    CHECK(cache.recordings() == 1);
    for (int i = 0; i < 3; ++i) {
        const ReplayCache::Decision replay = cache.decide(a);
        CHECK(replay.action == Action::replay);
        CHECK(replay.slot == record.slot);
    }
    CHECK(cache.decide(Key{1, 2}).action == Action::run);  // a prefix is another key

    // Two slots: a third key gives up the least recently used recording.
    CHECK(cache.decide(b).action == Action::run);
    const ReplayCache::Decision record_b = cache.decide(b);
    REQUIRE(record_b.action == Action::record);
    CHECK(record_b.slot != record.slot);
    cache.recorded(record_b.slot);
    CHECK(cache.decide(a).action == Action::replay);  // a is now the more recently used
    CHECK(cache.decide(c).action == Action::run);
    const ReplayCache::Decision record_c = cache.decide(c);
    REQUIRE(record_c.action == Action::record);
    CHECK(record_c.slot == record_b.slot);
    cache.recorded(record_c.slot);
    CHECK(cache.decide(a).action == Action::replay);
    CHECK(cache.decide(c).action == Action::replay);
    CHECK(cache.decide(b).action == Action::record);  // seen before: recorded again at once

    // A key whose recording failed runs as it comes from then on; one abandoned (not refused)
    // is recorded the next time it comes, up to `attempts` abandoned recordings in a row.
    for (const bool refused : {true, false}) {
        ReplayCache failing(1);
        failing.decide(a);
        const ReplayCache::Decision failed = failing.decide(a);
        REQUIRE(failed.action == Action::record);
        if (refused) failing.refuse(failed.slot);
        else failing.abandon(failed.slot);
        CHECK(failing.recordings() == 0);
        CHECK(failing.decide(a).action == (refused ? Action::run : Action::record));
    }
    {
        ReplayCache failing(1, 64, 3);
        failing.decide(a);
        for (int attempt = 1; attempt <= 3; ++attempt) {
            const ReplayCache::Decision failed = failing.decide(a);
            REQUIRE(failed.action == Action::record);
            failing.abandon(failed.slot);
        }
        for (int i = 0; i < 3; ++i) CHECK(failing.decide(a).action == Action::run);
        // a recording made between abandoned ones starts the count again
        failing.decide(b);
        for (int round = 0; round < 2; ++round) {
            for (int attempt = 1; attempt <= 2; ++attempt) {
                const ReplayCache::Decision failed = failing.decide(b);
                REQUIRE(failed.action == Action::record);
                failing.abandon(failed.slot);
            }
            const ReplayCache::Decision made = failing.decide(b);
            REQUIRE(made.action == Action::record);
            failing.recorded(made.slot);
            failing.clear();
        }
        CHECK(failing.decide(b).action == Action::record);
    }
    // A recording that fails gives its slot back to the recording it was to replace.
    for (const bool refused : {true, false}) {
        ReplayCache one(1);
        one.decide(a);
        one.recorded(one.decide(a).slot);
        one.decide(b);
        const ReplayCache::Decision failed = one.decide(b);
        REQUIRE(failed.action == Action::record);
        if (refused) one.refuse(failed.slot);
        else one.abandon(failed.slot);
        CHECK(one.recordings() == 1);
        CHECK(one.decide(a).action == Action::replay);
        // and one that is made replaces it
        const ReplayCache::Decision again = one.decide(c);
        CHECK(again.action == Action::run);
        one.recorded(one.decide(c).slot);
        CHECK(one.decide(c).action == Action::replay);
        CHECK(one.decide(a).action == Action::record);  // seen before: recorded again at once
    }

    // clear() forgets the recordings; the keys stay seen.
    cache.clear();
    CHECK(cache.recordings() == 0);
    CHECK(cache.decide(a).action == Action::record);

    // Without slots nothing is recorded; the memory of keys seen once is bounded.
    ReplayCache none(0);
    for (int i = 0; i < 3; ++i) CHECK(none.decide(a).action == Action::run);
    ReplayCache forgetful(1, 2);
    forgetful.decide(a);
    forgetful.decide(b);
    forgetful.decide(c);                                  // a is forgotten
    CHECK(forgetful.decide(a).action == Action::run);     // seen "once" again
    CHECK(forgetful.decide(c).action == Action::record);  // still remembered
}

TEST_CASE("generations give the same tokens when the layer stack is recorded and replayed") {
    for (const std::string name : {"llada", "dream", "llada-block", "llada-moe"}) {
        const auto model = load(name);
        for (const CacheMode mode : {CacheMode::none, CacheMode::prefix, CacheMode::dual}) {
            for (const double cfg : {0.0, 0.5}) {
                CAPTURE(name);
                CAPTURE(int(mode));
                CAPTURE(cfg);
                DecodeParams params;
                params.gen_length = 16;
                params.steps = 16;  // one commit per step: the two prompts' blocks run in step long enough to replay
                params.block_length = 8;  // the block diffusion model's own block size too
                params.cache_mode = mode;
                params.cfg_scale = cfg;
                params.temperature = 0.7;  // sampled: every logit matters
                params.seed = 11;
                auto cpu = make_cpu_backend(1);
                const auto expected = generate_on(*cpu, *model, params);
                ReplayingBackend replaying(4);
                CHECK(generate_on(replaying, *model, params) == expected);
                CHECK(replaying.replayable_calls > 0);
                CHECK(replaying.recordings > 0);
                CHECK(replaying.replays > 0);
            }
        }
    }
}

TEST_CASE("a replayed forward follows everything its shape is made of") {
    // Partial forwards of two variants in turn that differ in one thing the replay key must hold
    // (the same fed rows otherwise), three rounds after a full forward of each fills its cache,
    // each round with a new token among the fed ones (stale buffers must not pass for results).
    // (The cache's length and element type are in the key too, for a cache of another length or
    // type at a freed one's address, which a test cannot arrange.)
    enum class Variation { cache, canvas_length, block_origin, forward };
    for (const Variation variation : {Variation::cache, Variation::canvas_length, Variation::block_origin,
                                      Variation::forward}) {
        CAPTURE(int(variation));
        const auto model = load(variation == Variation::block_origin ? "llada-block" : "llada");
        const ModelSpec& spec = model->spec();
        const int64_t length = 24;
        // Block diffusion: the last 8 positions fed, whose keys are the whole canvas either way.
        const int64_t begin = variation == Variation::block_origin ? 16 : 8, end = begin + 8;
        auto logits = [&](Backend& backend) {
            Forward one(*model, backend, {length, length}), two(*model, backend, {length, length});
            KVCache cache_one(backend, nullptr, spec, length), cache_two(backend, nullptr, spec, length);
            struct Variant {
                Forward* forward;
                std::vector<int32_t> canvas;
                KVCache* cache;
                int64_t block_origin;
            };
            Variant a{&one, {}, &cache_one, 0};
            for (int64_t p = 0; p < length; ++p) a.canvas.push_back(static_cast<int32_t>(1 + (p * 37) % 90));
            Variant b = a;
            switch (variation) {
                case Variation::cache:  // the same fed tokens, another cache holding other tokens
                    b.cache = &cache_two;
                    for (int64_t p = 0; p < length; ++p)
                        if (p < begin || p >= end) b.canvas[size_t(p)] = static_cast<int32_t>(1 + (p * 11) % 70);
                    break;
                case Variation::canvas_length: b.canvas.resize(20); break;  // 20 keys in the same cache, not 24
                case Variation::block_origin: b.block_origin = 4; break;   // other blocks
                case Variation::forward:  // another run state, other fed tokens, the same cache
                    b.forward = &two;
                    for (int64_t p = begin; p < end; ++p) b.canvas[size_t(p)] = static_cast<int32_t>(1 + (p * 11) % 70);
                    break;
            }
            std::vector<int32_t> outputs;
            for (int64_t p = begin; p < end; ++p) outputs.push_back(static_cast<int32_t>(p));
            auto run = [&](const Variant& v, bool full) {
                ForwardSequence seq{v.canvas, outputs, nullptr, {}, 0.0, v.cache};
                seq.block_origin = v.block_origin;
                if (!full) {
                    seq.feed_begin = begin;
                    seq.feed_end = end;
                }
                return v.forward->run(std::vector{seq}, true).logits;
            };
            std::vector<std::vector<float>> out;
            for (const Variant* v : {&a, &b}) out.push_back(run(*v, true));
            for (int round = 0; round < 3; ++round)
                for (Variant* v : {&a, &b}) {
                    v->canvas[size_t(begin)] = static_cast<int32_t>(40 + round);  // a token committed: new inputs
                    out.push_back(run(*v, false));
                }
            return out;
        };
        auto cpu = make_cpu_backend(1);
        ReplayingBackend replaying(4);
        const auto expected = logits(*cpu);
        CHECK(expected[2] != expected[3]);  // the variation matters
        CHECK(logits(replaying) == expected);
        CHECK(replaying.replays >= 2);
    }
}

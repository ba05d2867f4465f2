#include "decode/generate.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace unmask {

ForwardLimits single_forward_limits(std::span<const DecodeSequence> sequences) noexcept {
    ForwardLimits limits;
    for (const DecodeSequence& s : sequences) {
        limits.tokens += s.max_fed_rows();
        limits.sequence_length = std::max(limits.sequence_length, static_cast<int64_t>(s.canvas().size()));
    }
    return limits;
}

void step(Forward& forward, std::span<DecodeSequence* const> sequences, std::span<GenerationStats> stats,
          const StepObserver& observer) {
    const ForwardLimits& limits = forward.limits();
    auto finish_step = [&](size_t i, int64_t committed) {
        ++stats[i].steps;
        DecodeSequence& s = *sequences[i];
        if (observer && !observer(i, s, committed) && !s.finished()) s.cancel();
    };
    std::vector<size_t> active;
    std::vector<ForwardSequence> batch;
    int64_t batch_tokens = 0;
    auto run_batch = [&] {
        if (active.empty()) return;
        const ForwardOutput out = forward.run(batch, false);
        size_t offset = 0;
        for (size_t i : active) {
            DecodeSequence& s = *sequences[i];
            const size_t count = s.output_positions().size();
            stats[i].forwards += s.unconditional() != nullptr ? 2 : 1;
            const int64_t committed = s.apply(std::span(out.candidates).subspan(offset, count));
            offset += count;
            finish_step(i, committed);
        }
        active.clear();
        batch.clear();
        batch_tokens = 0;
    };
    for (size_t i = 0; i < sequences.size(); ++i) {
        DecodeSequence& s = *sequences[i];
        if (s.finished()) continue;
        if (s.max_fed_rows() > limits.tokens || static_cast<int64_t>(s.canvas().size()) > limits.sequence_length)
            fail(Status::internal, "a sequence of {} tokens exceeds the forward limits ({} tokens, length {})",
                 s.max_fed_rows(), limits.tokens, limits.sequence_length);
        if (s.needs_cache() && s.cache() == nullptr) fail(Status::internal, "a sequence's K/V cache was never made");
        if (s.output_positions().empty()) {
            // Nothing masked where this step looks (an origin step that already committed
            // everything, a block of fixed positions): the step runs without a forward.
            finish_step(i, s.apply({}));
            continue;
        }
        if (batch_tokens + s.fed_rows() > limits.tokens) run_batch();
        active.push_back(i);
        ForwardSequence f{s.canvas(),   s.output_positions(), &s.sampling(), {},
                          0.0,          s.cache(),            s.unconditional_cache(),
                          s.feed_begin(), s.feed_end(),      s.region_begin()};
        if (const auto* unconditional = s.unconditional()) {
            f.unconditional_tokens = *unconditional;
            f.cfg_scale = s.cfg_scale();
        }
        batch.push_back(f);
        batch_tokens += s.fed_rows();
    }
    run_batch();
}

std::vector<GenerationStats> generate(const Model& model, Backend& backend, std::span<DecodeSequence> sequences,
                                      const ForwardLimits& limits, const StepObserver& observer) {
    if (sequences.empty()) return {};
    Forward forward(model, backend, limits);
    // Caches made here (on the backend's ledger) go when the generation ends; the caller's stay.
    struct MadeCaches {
        std::vector<DecodeSequence*> sequences;
        ~MadeCaches() {
            for (DecodeSequence* s : sequences) s->release_caches();
        }
    } made;
    for (DecodeSequence& s : sequences)
        if (s.needs_cache() && s.cache() == nullptr) {
            made.sequences.push_back(&s);
            s.make_caches(backend, nullptr);
        }
    std::vector<DecodeSequence*> pointers;
    for (DecodeSequence& s : sequences) pointers.push_back(&s);
    std::vector<GenerationStats> stats(sequences.size());
    while (!std::all_of(sequences.begin(), sequences.end(), [](const DecodeSequence& s) { return s.finished(); }))
        step(forward, pointers, stats, observer);
    return stats;
}

}  // namespace unmask

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

void step(Forward& forward, std::span<DecodeSequence* const> sequences, std::span<SequenceState* const> states,
          std::span<GenerationStats> stats, const StepObserver& observer) {
    if (states.size() != sequences.size() || stats.size() != sequences.size())
        fail(Status::internal, "step() with {} sequences, {} states and {} stats", sequences.size(), states.size(),
             stats.size());
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
        const SequenceState& state = *states[i];
        if (s.finished()) continue;
        if (s.max_fed_rows() > limits.tokens || static_cast<int64_t>(s.canvas().size()) > limits.sequence_length)
            fail(Status::internal, "a sequence of {} tokens exceeds the forward limits ({} tokens, length {})",
                 s.max_fed_rows(), limits.tokens, limits.sequence_length);
        if (s.needs_cache() && state.cache() == nullptr) fail(Status::internal, "a sequence's K/V cache was never made");
        if (s.output_positions().empty()) {
            // Nothing masked where this step looks (an origin step that already committed
            // everything, a block of fixed positions): the step runs without a forward.
            finish_step(i, s.apply({}));
            continue;
        }
        if (batch_tokens + s.fed_rows() > limits.tokens) run_batch();
        active.push_back(i);
        ForwardSequence f{s.canvas(), s.output_positions(), &s.sampling(), {}, 0.0, state.cache(),
                          state.unconditional_cache(), s.feed_begin(), s.feed_end()};
        if (const auto* unconditional = s.unconditional()) {
            f.unconditional_tokens = *unconditional;
            f.cfg_scale = s.cfg_scale();
        }
        batch.push_back(f);
        batch_tokens += s.fed_rows();
    }
    run_batch();
}

std::vector<GenerationStats> generate(const Model& model, std::span<Backend* const> devices,
                                      std::span<DecodeSequence> sequences, std::span<SequenceState> states,
                                      const ForwardLimits& limits, const StepObserver& observer) {
    if (states.size() != sequences.size())
        fail(Status::internal, "generate() with {} sequences and {} states", sequences.size(), states.size());
    if (sequences.empty()) return {};
    Forward forward(model, devices, limits);
    std::vector<DecodeSequence*> sequence_pointers;
    std::vector<SequenceState*> state_pointers;
    for (size_t i = 0; i < sequences.size(); ++i) {
        DecodeSequence& s = sequences[i];
        states[i].make_caches(forward.devices(), model.spec(), static_cast<int64_t>(s.canvas().size()), s.memory_options());
        sequence_pointers.push_back(&s);
        state_pointers.push_back(&states[i]);
    }
    std::vector<GenerationStats> stats(sequences.size());
    while (!std::all_of(sequences.begin(), sequences.end(), [](const DecodeSequence& s) { return s.finished(); }))
        step(forward, sequence_pointers, state_pointers, stats, observer);
    return stats;
}

std::vector<GenerationStats> generate(const Model& model, Backend& backend, std::span<DecodeSequence> sequences,
                                      std::span<SequenceState> states, const ForwardLimits& limits,
                                      const StepObserver& observer) {
    Backend* const one[] = {&backend};
    return generate(model, one, sequences, states, limits, observer);
}

std::vector<GenerationStats> generate(const Model& model, Backend& backend, std::span<DecodeSequence> sequences,
                                      const ForwardLimits& limits, const StepObserver& observer) {
    std::vector<SequenceState> states(sequences.size());
    return generate(model, backend, sequences, states, limits, observer);
}

}  // namespace unmask

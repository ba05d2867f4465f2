#include "decode/generate.hpp"

#include <algorithm>

#include "model/forward.hpp"

namespace unmask {

std::vector<GenerationStats> generate(const Model& model, Backend& backend, std::span<DecodeSequence> sequences,
                                      const StepObserver& observer) {
    Forward forward(model, backend);
    std::vector<GenerationStats> stats(sequences.size());
    for (;;) {
        std::vector<size_t> active;
        std::vector<ForwardSequence> batch;
        for (size_t i = 0; i < sequences.size(); ++i) {
            DecodeSequence& s = sequences[i];
            if (s.finished()) continue;
            if (s.output_positions().empty()) {
                // Nothing masked where this step looks (an origin step that already committed
                // everything, a block of fixed positions): the step runs without a forward.
                const int64_t committed = s.apply({});
                ++stats[i].steps;
                if (observer && !observer(i, s, committed) && !s.finished()) s.cancel();
                continue;
            }
            active.push_back(i);
            ForwardSequence f{s.canvas(), s.output_positions(), &s.sampling(), {}, 0.0};
            if (const auto* unconditional = s.unconditional()) {
                f.unconditional_tokens = *unconditional;
                f.cfg_scale = s.cfg_scale();
            }
            batch.push_back(f);
        }
        if (active.empty()) {
            if (std::all_of(sequences.begin(), sequences.end(), [](const DecodeSequence& s) { return s.finished(); }))
                return stats;
            continue;
        }
        const ForwardOutput out = forward.run(batch, false);
        size_t offset = 0;
        for (size_t j = 0; j < active.size(); ++j) {
            DecodeSequence& s = sequences[active[j]];
            const size_t count = s.output_positions().size();
            stats[active[j]].forwards += s.unconditional() != nullptr ? 2 : 1;
            const int64_t committed = s.apply(std::span(out.candidates).subspan(offset, count));
            offset += count;
            ++stats[active[j]].steps;
            if (observer && !observer(active[j], s, committed) && !s.finished()) s.cancel();
        }
    }
}

}  // namespace unmask

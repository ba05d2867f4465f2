// Synchronous generation for a batch of sequences: every step, one forward over all unfinished
// sequences (requests join the batch at the start and leave as they finish), then each commits.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "decode/sequence.hpp"
#include "model/model.hpp"

namespace unmask {

struct GenerationStats {
    int64_t steps = 0;
    int64_t forwards = 0;  // model evaluations of this sequence (CFG counts two per step)
};

// Called after each sequence's step with its index in the batch and the number of positions
// committed; returning false cancels that sequence.
using StepObserver = std::function<bool(size_t index, const DecodeSequence& sequence, int64_t committed)>;

std::vector<GenerationStats> generate(const Model& model, Backend& backend, std::span<DecodeSequence> sequences,
                                      const StepObserver& observer = {});

}  // namespace unmask

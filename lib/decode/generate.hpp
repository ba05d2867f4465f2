// The denoising step loop. One step of a set of sequences: each unfinished sequence gets its
// candidates from a forward shared with the others, then commits. When the sequences' tokens
// exceed the forward's limit, the step runs as several forwards of at most that many tokens; the
// results are the same either way. generate() repeats steps until every sequence has finished;
// the engine calls step() itself, between admissions, cancels and deadlines.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "decode/sequence.hpp"
#include "memory/sequence_state.hpp"
#include "model/forward.hpp"
#include "model/model.hpp"
#include "model/run_state.hpp"

namespace unmask {

struct GenerationStats {
    int64_t steps = 0;
    int64_t forwards = 0;  // model evaluations of this sequence (CFG counts two per step)
};

// Called after each sequence's step with its index in the span and the number of positions
// committed; returning false cancels that sequence.
using StepObserver = std::function<bool(size_t index, const DecodeSequence& sequence, int64_t committed)>;

// The limits that run all `sequences` in one forward per step.
ForwardLimits single_forward_limits(std::span<const DecodeSequence> sequences) noexcept;

// One step of every unfinished sequence in `sequences` (each must fit the forward's limits);
// `states[i]` is sequence i's state, lent for the step, with its caches made when the cache mode
// needs them. `stats[i]` counts sequence i's step and forwards.
void step(Forward& forward, std::span<DecodeSequence* const> sequences, std::span<SequenceState* const> states,
          std::span<GenerationStats> stats, const StepObserver& observer = {});

// Runs `sequences` to the end with forwards bounded by `limits` on `devices` (sharing the model,
// Forward's constructor), sequence i in `states[i]`, whose caches are made on the devices where
// the cache mode needs them and they are missing.
std::vector<GenerationStats> generate(const Model& model, std::span<Backend* const> devices,
                                      std::span<DecodeSequence> sequences, std::span<SequenceState> states,
                                      const ForwardLimits& limits, const StepObserver& observer = {});
// The same on one device.
std::vector<GenerationStats> generate(const Model& model, Backend& backend, std::span<DecodeSequence> sequences,
                                      std::span<SequenceState> states, const ForwardLimits& limits,
                                      const StepObserver& observer = {});
// The same in states of the generation's own, charged to the backend's ledger and released before
// returning.
std::vector<GenerationStats> generate(const Model& model, Backend& backend, std::span<DecodeSequence> sequences,
                                      const ForwardLimits& limits, const StepObserver& observer = {});

}  // namespace unmask

// What a caller chooses for one generation: the schedule, the commit policy, sampling and EOS
// handling. Mirrors unmask_generate_params; validate() turns every impossible combination into
// INVALID_ARGUMENT naming the field and the value.
#pragma once

#include <cstdint>

#include "format/dtype.hpp"
#include "model/model_spec.hpp"

namespace unmask {

// How positions are chosen for commitment each step (docs/decoding.md).
enum class CommitPolicy : int32_t {
    low_confidence = 0,  // LLaDA: the most probable x0 first, per-block transfer counts
    random = 1,          // LLaDA: uniformly random order
    origin = 2,          // Dream: each masked position independently with probability 1 - s/t
    maskgit_plus = 3,    // Dream: top-1 probability
    topk_margin = 4,     // Dream: top-1 minus top-2 probability
    entropy = 5,         // Dream: negative entropy (most certain first)
    rnd1 = 6,            // RND1: the lowest entropy first, keeping a falling share of the masks masked
};

// EOS/EOT handling of the confidences (LLaDA's confidence_eos_eot_inf).
enum class EosConfidence : int32_t {
    off = 0,
    reference_quirk = 1,  // as the reference behaves: EOT leaves the confidence softmax (EOS untouched)
    eos_and_eot = 2,      // as intended: both EOS and EOT
};

// Which K/V a step reuses (docs/cache-modes.md). Every block starts with a forward of the
// whole canvas that fills the cache; the other steps feed part of it. For block diffusion models
// the cache is exact and both modes feed the block (see DecodeSequence::feed_begin).
enum class CacheMode : int32_t {
    none = 0,    // exact: every step feeds the whole canvas
    prefix = 1,  // feed from the block start to the end; the prefix's K/V come from the cache
    dual = 2,    // feed only the block; prefix and suffix K/V come from the cache (the suffix stale)
};

struct DecodeParams {
    int64_t gen_length = 128;
    int64_t steps = 128;
    int64_t block_length = 0;  // 0: gen_length (pure diffusion)
    int64_t min_steps = 0;     // 0: no lower bound
    int64_t max_steps = 0;     // 0: no upper bound
    CommitPolicy policy = CommitPolicy::low_confidence;
    double temperature = 0.0;
    int64_t top_k = 0;
    double top_p = 1.0;
    double cfg_scale = 0.0;
    double threshold = 0.0;  // > 0: commit every masked position of the block with confidence >= threshold
    double factor = 0.0;     // > 0: Fast-dLLM's factor rule
    double alg_temp = 0.0;   // Dream: > 0 samples the committed positions from softmax(confidence / alg_temp)
    double eps = 1e-3;       // Dream's final timestep
    uint64_t seed = 0;
    bool logits_eos_inf = false;
    EosConfidence eos_confidence = EosConfidence::off;
    bool early_stop = false;  // once the answer has ended with EOS in a finished block, fill with EOS and stop
    // LLaDA2.1's token editing (threshold decoding only): a step also replaces the block's committed
    // tokens whose prediction differs with probability above edit_threshold (0: off), and after the
    // block's last mask runs up to max_post_edit_steps steps of edits alone.
    double edit_threshold = 0.0;
    int64_t max_post_edit_steps = 16;
    int64_t eos_token_id = -1;  // -1: the model's
    int64_t eot_token_id = -1;  // -1: none
    CacheMode cache_mode = CacheMode::none;
    int64_t cache_refresh_steps = 0;   // > 0: also feed everything from position 0 every this many steps of a block
    int64_t cache_vicinity = 0;  // also feed this many positions on each side of the block
    DType cache_precision = DType::f32;  // the K/V cache's elements: f32, or bf16 (half the bytes, rounded)

    bool adaptive() const noexcept { return threshold > 0 || factor > 0; }
    bool editing() const noexcept { return edit_threshold > 0; }
    // Dream's and RND1's policies decode the whole region as one block over `steps` steps.
    bool whole_region_policy() const noexcept {
        switch (policy) {
            case CommitPolicy::origin:
            case CommitPolicy::maskgit_plus:
            case CommitPolicy::topk_margin:
            case CommitPolicy::entropy:
            case CommitPolicy::rnd1: return true;
            case CommitPolicy::low_confidence:
            case CommitPolicy::random: break;
        }
        return false;
    }
};

// The blocks a region of `region` positions is decoded in (a partial last block counts): what
// `steps` is shared out over.
inline int64_t region_blocks(int64_t region, int64_t block_length) noexcept {
    return (region + block_length - 1) / block_length;
}

// Checks the parameters against each other and the model for a generation region of
// `region_length` positions (gen_length for prompts, the masked span for infilling).
// Throws Error(INVALID_ARGUMENT) naming the field and the value.
void validate(const DecodeParams& params, const ModelSpec& spec, int64_t region_length);

}  // namespace unmask

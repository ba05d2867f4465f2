#include "decode/decode_params.hpp"

#include <utility>

#include "core/error.hpp"
#include "decode/generation_parameters.hpp"

namespace unmask {

void validate(const DecodeParams& p, const ModelSpec& spec, int64_t region) {
    // Each value against its own range (the parameter table), then against the others and the model.
    for (auto [name, value] : {std::pair{"gen_length", p.gen_length}, std::pair{"steps", p.steps},
                               std::pair{"block_length", p.block_length}, std::pair{"min_steps", p.min_steps},
                               std::pair{"max_steps", p.max_steps}, std::pair{"top_k", p.top_k},
                               std::pair{"eos_token_id", p.eos_token_id}, std::pair{"eot_token_id", p.eot_token_id},
                               std::pair{"cache_refresh_steps", p.cache_refresh_steps},
                               std::pair{"cache_vicinity", p.cache_vicinity},
                               std::pair{"max_post_edit_steps", p.max_post_edit_steps}})
        check_parameter(name, value);
    for (auto [name, value] : {std::pair{"temperature", p.temperature}, std::pair{"top_p", p.top_p},
                               std::pair{"edit_threshold", p.edit_threshold},
                               std::pair{"cfg_scale", p.cfg_scale}, std::pair{"threshold", p.threshold},
                               std::pair{"factor", p.factor}, std::pair{"alg_temp", p.alg_temp}, std::pair{"eps", p.eps}})
        check_parameter(name, value);
    check_parameter("policy", int64_t(p.policy));
    check_parameter("eos_confidence", int64_t(p.eos_confidence));
    check_parameter("cache_mode", int64_t(p.cache_mode));
    if (region <= 0) fail(Status::invalid_argument, "there is nothing to generate: the canvas has no masked position");
    if (p.steps > max_supported_steps)
        fail(Status::invalid_argument, "steps {} is above the supported {}", p.steps, max_supported_steps);
    const int64_t model_block = spec.diffusion_block_size;  // > 0: the model decodes in blocks of this size
    const int64_t block = p.block_length > 0 ? p.block_length : model_block > 0 ? model_block : region;
    if (model_block > 0 && block != model_block)
        fail(Status::invalid_argument, "block_length {} differs from the model's diffusion block size {} (block diffusion: "
             "use 0 or {})", block, model_block, model_block);
    // Block diffusion takes any length (its last block is decoded past the end, as published).
    if (model_block == 0 && region % block != 0)
        fail(Status::invalid_argument, "gen_length {} is not a multiple of block_length {}", region, block);
    const int64_t blocks = region_blocks(region, block);
    if (p.max_steps > 0 && p.min_steps > p.max_steps) fail(Status::invalid_argument, "min_steps {} exceeds max_steps {}", p.min_steps, p.max_steps);
    if (p.threshold > 0 && p.factor > 0) fail(Status::invalid_argument, "threshold and factor decoding are exclusive; set one");
    if (p.editing() && (p.threshold <= 0 || p.policy != CommitPolicy::low_confidence || p.temperature > 0))
        fail(Status::invalid_argument, "token editing (edit_threshold {}) works with threshold decoding, the "
             "low_confidence policy and temperature 0, as LLaDA2.1 publishes it", p.edit_threshold);
    for (auto [name, id] : {std::pair{"eos_token_id", p.eos_token_id}, std::pair{"eot_token_id", p.eot_token_id}})
        if (id >= spec.embedding_rows) fail(Status::invalid_argument, "{} {} is outside the vocabulary of {}", name, id, spec.embedding_rows);
    if (p.cache_vicinity > spec.max_sequence_length)
        fail(Status::invalid_argument, "cache_vicinity must be in 0..{}, got {}", spec.max_sequence_length, p.cache_vicinity);
    if (p.cache_precision != DType::f32 && p.cache_precision != DType::bf16)
        fail(Status::invalid_argument, "cache_precision must be F32 or BF16, got {}", dtype_name(p.cache_precision));
    if (p.cache_mode == CacheMode::none && (p.cache_refresh_steps > 0 || p.cache_vicinity > 0))
        fail(Status::invalid_argument, "cache_refresh_steps and cache_vicinity need a cache_mode (prefix or dual)");
    if (p.cache_mode == CacheMode::none && p.cache_precision != DType::f32)
        fail(Status::invalid_argument, "a cache precision other than fp32 needs a cache_mode (prefix or dual)");

    if (p.whole_region_policy()) {
        // A block diffusion model's blocks see only the blocks before them: they are decoded one at
        // a time, by LLaDA's policies, whatever the length.
        if (model_block > 0)
            fail(Status::invalid_argument, "Dream's and RND1's policies decode the whole canvas; a block diffusion model "
                 "decodes its blocks of {} one at a time: use low_confidence or random", model_block);
        if (block != region)
            fail(Status::invalid_argument, "Dream's and RND1's policies decode the whole canvas: block_length {} must equal gen_length {} (or be 0)", block, region);
        if (p.adaptive()) fail(Status::invalid_argument, "threshold and factor decoding use LLaDA's policies (low_confidence, random)");
    }
    if (p.policy == CommitPolicy::rnd1) {
        // RND1 filters top_k before top_p; the candidates step applies top_p first (Dream's order).
        if (p.top_k > 0 && p.top_p < 1.0)
            fail(Status::invalid_argument, "the rnd1 policy takes top_k or top_p, not both: RND1 applies top_k first, "
                 "unmask's sampler top_p first");
        if (p.alg_temp > 0) fail(Status::invalid_argument, "alg_temp is Dream's; the rnd1 policy ranks by entropy alone");
    }
    if (p.adaptive()) {
        // Adaptive decoding takes as many steps as it needs; the bounds are shared out over the
        // blocks (remainders to the first blocks).
        if (p.max_steps > 0 && p.max_steps < blocks)
            fail(Status::invalid_argument, "max_steps {} leaves less than one step for each of the {} blocks", p.max_steps, blocks);
        if (p.min_steps > 0 && (p.min_steps + blocks - 1) / blocks > block)
            fail(Status::invalid_argument, "min_steps {} needs more steps per block than a block of {} positions can take", p.min_steps, block);
    } else {
        if (!p.whole_region_policy() && p.steps % blocks != 0)
            fail(Status::invalid_argument, "steps {} is not a multiple of the number of blocks {} (gen_length {} / block_length {}, rounded up)", p.steps,
                blocks, region, block);
        // A block commits at least one position per step, so it cannot take more steps than it
        // has positions; the reference would run the extra steps committing nothing.
        if (!p.whole_region_policy() && p.steps / blocks > block)
            fail(Status::invalid_argument, "steps {} gives {} steps per block, more than the {} positions of a block",
                 p.steps, p.steps / blocks, block);
        if (p.min_steps > 0 && p.steps < p.min_steps) fail(Status::invalid_argument, "steps {} is below min_steps {}", p.steps, p.min_steps);
        if (p.max_steps > 0 && p.steps > p.max_steps) fail(Status::invalid_argument, "steps {} is above max_steps {}", p.steps, p.max_steps);
    }
}

}  // namespace unmask

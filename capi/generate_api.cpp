// unmask_generate*, unmask_infill: synchronous generation on the model's device.
#include <algorithm>
#include <cmath>
#include <thread>

#include "boundary.hpp"
#include "decode/generate.hpp"
#include "generate_params.hpp"
#include "handles.hpp"

using namespace unmask;
using namespace unmask::capi;

namespace unmask::capi {

DType cache_element_type(int32_t precision, const char* name) {
    if (precision == UNMASK_PRECISION_FP32) return DType::f32;
    if (precision == UNMASK_PRECISION_BF16) return DType::bf16;
    fail(Status::invalid_argument, "{} must be UNMASK_PRECISION_FP32 or UNMASK_PRECISION_BF16, got {}", name,
         precision);
}

DecodeParams to_decode_params(const unmask_generate_params& p) {
    if (!(p.timeout_seconds >= 0) || !std::isfinite(p.timeout_seconds))
        fail(Status::invalid_argument, "params->timeout_seconds must be finite and not negative, got {}",
             p.timeout_seconds);
    require_one_of(p.stream_steps, {0, 1}, "params->stream_steps");
    DecodeParams d;
    d.policy = static_cast<CommitPolicy>(require_one_of(
        p.policy, {UNMASK_POLICY_LOW_CONFIDENCE, UNMASK_POLICY_RANDOM, UNMASK_POLICY_ORIGIN, UNMASK_POLICY_MASKGIT_PLUS,
                   UNMASK_POLICY_TOPK_MARGIN, UNMASK_POLICY_ENTROPY, UNMASK_POLICY_RND1},
        "params->policy"));
    d.eos_confidence = static_cast<EosConfidence>(require_one_of(
        p.eos_confidence, {UNMASK_EOS_CONFIDENCE_OFF, UNMASK_EOS_CONFIDENCE_REFERENCE, UNMASK_EOS_CONFIDENCE_BOTH},
        "params->eos_confidence"));
    d.logits_eos_inf = require_one_of(p.logits_eos_inf, {0, 1}, "params->logits_eos_inf") == 1;
    d.early_stop = require_one_of(p.early_stop, {0, 1}, "params->early_stop") == 1;
    if (p.threads < 0 || p.threads > 1024) fail(Status::invalid_argument, "params->threads {} is outside 0..1024", p.threads);
    d.gen_length = p.gen_length;
    d.steps = p.steps;
    d.block_length = p.block_length;
    d.min_steps = p.min_steps;
    d.max_steps = p.max_steps;
    d.temperature = p.temperature;
    d.top_k = p.top_k;
    d.top_p = p.top_p;
    d.cfg_scale = p.cfg_scale;
    d.threshold = p.threshold;
    d.factor = p.factor;
    d.alg_temp = p.alg_temp;
    d.eps = p.eps;
    d.seed = p.seed;
    d.eos_token_id = p.eos_token_id;
    d.eot_token_id = p.eot_token_id;
    if (p.struct_size >= generate_params_v1_2_size) {  // older callers: no cache (their padding is not a mode)
        d.cache_mode = static_cast<CacheMode>(require_one_of(
            p.cache_mode, {UNMASK_CACHE_NONE, UNMASK_CACHE_PREFIX, UNMASK_CACHE_DUAL}, "params->cache_mode"));
        d.cache_refresh_steps = p.cache_refresh_steps;
        d.cache_vicinity = p.cache_vicinity;
    }
    d.cache_precision = cache_element_type(p.cache_precision, "params->cache_precision");
    d.edit_threshold = p.edit_threshold;
    d.max_post_edit_steps = p.max_post_edit_steps;
    return d;
}

}  // namespace unmask::capi

namespace {

int threads_for(const unmask_generate_params& p) {
    if (p.threads > 0) return p.threads;
    return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 1024u));
}

const Model& runnable(const unmask_model* model) {
    require_not_null(model, "model");
    model->loaded->placement();  // UNSUPPORTED for a metadata-only model
    return model->model();
}

// Runs the sequences within the model's memory budget and writes each one's tokens from
// `first_output[i]` of its canvas.
void run(const unmask_model& handle, const unmask_generate_params& p, std::vector<DecodeSequence>& sequences,
         const std::vector<int64_t>& first_output, unmask_generation* results) {
    StepObserver observer;
    if (p.step_callback != nullptr)
        observer = [&](size_t index, const DecodeSequence& s, int64_t committed) {
            return p.step_callback(static_cast<int64_t>(index), s.steps() - 1, committed, s.output().data(),
                                   static_cast<int64_t>(s.output().size()), p.step_user_data) == 0;
        };
    const auto stats = handle.loaded->generate_batch(sequences, threads_for(p), observer);
    for (size_t i = 0; i < sequences.size(); ++i) {
        const auto canvas = sequences[i].output();
        unmask_generation& r = results[i];
        r.token_count = static_cast<int64_t>(canvas.size()) - first_output[i];
        std::copy(canvas.begin() + first_output[i], canvas.end(), r.tokens);
        r.finish_reason = static_cast<int32_t>(sequences[i].finish_reason());
        r.steps = stats[i].steps;
        r.forwards = stats[i].forwards;
    }
}

void check_result(const unmask_generation* result, const char* name, int64_t needed) {
    writable_size(result, name, generation_v1_size);
    if (result->tokens == nullptr) fail(Status::invalid_argument, "{}->tokens is NULL", name);
    if (result->tokens_capacity < needed)
        fail(Status::invalid_argument, "{}->tokens_capacity {} is below the {} tokens it must hold", name,
             result->tokens_capacity, needed);
}

}  // namespace

// Parenthesised: the header makes the name a macro for the sized form.
extern "C" unmask_status(unmask_generate_params_init)(unmask_generate_params* params) {
    return guarded(__func__, [&] { write_defaults(params, generate_params_v1_3_size, default_generate_params(), generate_params_v1_size); });
}

extern "C" unmask_status unmask_generate_params_init_sized(unmask_generate_params* params, size_t size) {
    return guarded(__func__, [&] { write_defaults(params, size, default_generate_params(), generate_params_v1_size); });
}

extern "C" unmask_status unmask_generate_batch(const unmask_model* model, const unmask_generate_params* params,
                                               int64_t count, const int32_t* const* prompts,
                                               const int64_t* prompt_lengths, unmask_generation* results) {
    return guarded(__func__, [&] {
        const Model& m = runnable(model);
        const auto p = read_params(params, "params", default_generate_params(), generate_params_v1_size);
        const DecodeParams d = to_decode_params(p);
        if (count <= 0) fail(Status::invalid_argument, "count must be positive, got {}", count);
        require_not_null(prompts, "prompts");
        require_not_null(prompt_lengths, "prompt_lengths");
        require_not_null(results, "results");
        std::vector<DecodeSequence> sequences;
        std::vector<int64_t> first_output;
        for (int64_t i = 0; i < count; ++i) {
            check_result(&results[i], "results[i]", d.gen_length);
            sequences.emplace_back(m.spec(), d, prompt_canvas(m.spec(), d, prompts[i], prompt_lengths[i], size_t(i)));
            first_output.push_back(prompt_lengths[i]);
        }
        run(*model, p, sequences, first_output, results);
    });
}

extern "C" unmask_status unmask_generate(const unmask_model* model, const unmask_generate_params* params,
                                         const int32_t* prompt, int64_t prompt_length, unmask_generation* result) {
    return unmask_generate_batch(model, params, 1, &prompt, &prompt_length, result);
}

extern "C" unmask_status unmask_infill(const unmask_model* model, const unmask_generate_params* params,
                                       const int32_t* canvas, int64_t canvas_length, unmask_generation* result) {
    return guarded(__func__, [&] {
        const Model& m = runnable(model);
        const auto p = read_params(params, "params", default_generate_params(), generate_params_v1_size);
        DecodeParams d = to_decode_params(p);
        if (canvas_length <= 0) fail(Status::invalid_argument, "canvas_length must be positive, got {}", canvas_length);
        require_not_null(canvas, "canvas");
        check_result(result, "result", canvas_length);
        const auto mask = static_cast<int32_t>(m.spec().mask_token_id);
        const auto first = std::find(canvas, canvas + canvas_length, mask);
        if (first == canvas + canvas_length) fail(Status::invalid_argument, "the canvas has no mask token ({})", mask);
        d.gen_length = canvas_length - (first - canvas);
        std::vector<DecodeSequence> sequences;
        sequences.emplace_back(m.spec(), d, std::vector<int32_t>(canvas, canvas + canvas_length));
        run(*model, p, sequences, {0}, result);
    });
}

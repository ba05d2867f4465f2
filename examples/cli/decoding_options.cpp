#include "decoding_options.hpp"

#include <algorithm>

#include "parameter_names.hpp"

namespace unmask_cli {

using unmask_names::Names;

int32_t named(const Names& names, const std::string& text, const std::string& what) {
    if (const auto value = unmask_names::lookup(names, text)) return *value;
    throw UsageError(what + " must be one of " + unmask_names::listed(names) + ", got '" + text + "'");
}

const char* finish_name(int32_t reason) {
    switch (reason) {
        case UNMASK_FINISH_EOS: return "eos";
        case UNMASK_FINISH_CANCELLED: return "cancelled";
        case UNMASK_FINISH_TIMEOUT: return "timeout";
        case UNMASK_FINISH_ERROR: return "error";
        default: return "length";
    }
}

std::vector<OptionSpec> with_decoding_options(std::vector<OptionSpec> options) {
    const std::vector<OptionSpec> decoding = {
        {"gen-length", "N", "positions to generate (default 128)"},
        {"steps", "N", "denoising steps (default: gen-length)"},
        {"block-length", "N", "semi-autoregressive block length (default: gen-length)"},
        {"min-steps", "N", "lower bound on steps (0: none)"},
        {"max-steps", "N", "upper bound on steps (0: none)"},
        {"policy", "P", "low_confidence, random, origin, maskgit_plus, topk_margin, entropy"},
        {"temperature", "T", "0 = greedy (default)"},
        {"top-k", "K", "Dream policies: keep the K most likely tokens"},
        {"top-p", "P", "Dream policies: nucleus sampling"},
        {"threshold", "TAU", "parallel decoding: commit every position with confidence >= TAU"},
        {"factor", "F", "parallel decoding with Fast-dLLM's factor rule"},
        {"cfg", "S", "classifier-free guidance scale (0: off)"},
        {"alg-temp", "T", "Dream: sample the committed positions at this temperature"},
        {"seed", "N", "random seed (default 0)"},
        {"no-eos", "", "never sample EOS (LLaDA's logits_eos_inf)"},
        {"early-stop", "", "stop once the answer has ended with EOS"},
        {"cache", "MODE", "K/V cache: none (exact, default), prefix or dual"},
        {"cache-refresh", "N", "with a cache: also recompute the whole canvas every N steps of a block"},
        {"cache-vicinity", "W", "with a cache: also recompute W positions on each side of the block"},
        {"cache-precision", "P", "with a cache: fp32 (default) or bf16 (half the memory, K/V rounded)"}};
    options.insert(options.end(), decoding.begin(), decoding.end());
    return options;
}

void apply_decoding_options(const ParsedArgs& args, unmask_generate_params& params) {
    if (auto v = args.value("policy")) params.policy = named(unmask_names::policies(), *v, "--policy");
    if (auto v = args.integer("gen-length")) params.gen_length = *v;
    if (auto v = args.integer("steps")) params.steps = *v;
    else params.steps = params.gen_length;
    if (auto v = args.integer("block-length")) params.block_length = *v;
    if (auto v = args.integer("min-steps")) params.min_steps = *v;
    if (auto v = args.integer("max-steps")) params.max_steps = *v;
    if (auto v = args.number("temperature")) params.temperature = *v;
    if (auto v = args.integer("top-k")) params.top_k = *v;
    if (auto v = args.number("top-p")) params.top_p = *v;
    if (auto v = args.number("threshold")) params.threshold = *v;
    if (auto v = args.number("factor")) params.factor = *v;
    if (auto v = args.number("cfg")) params.cfg_scale = *v;
    if (auto v = args.number("alg-temp")) params.alg_temp = *v;
    if (auto v = args.integer("seed")) params.seed = static_cast<uint64_t>(*v);
    if (args.has("no-eos")) params.logits_eos_inf = 1;
    if (args.has("early-stop")) params.early_stop = 1;
    if (auto v = args.value("cache")) params.cache_mode = named(unmask_names::cache_modes(), *v, "--cache");
    if (auto v = args.integer("cache-refresh")) params.cache_refresh_steps = *v;
    if (auto v = args.integer("cache-vicinity")) params.cache_vicinity = *v;
    if (auto v = args.value("cache-precision"))
        params.cache_precision = named(unmask_names::cache_precisions(), *v, "--cache-precision");
}

void apply_json_params(const nlohmann::json& request, const std::vector<std::string>& skip,
                       unmask_generate_params& p) {
    bool steps_given = false;
    for (const auto& [key, value] : request.items()) {
        if (std::find(skip.begin(), skip.end(), key) != skip.end()) continue;
        auto integer = [&, &key = key, &value = value]() -> int64_t {
            if (!value.is_number_integer()) throw UsageError("'" + key + "' must be an integer");
            return value.get<int64_t>();
        };
        auto number = [&, &key = key, &value = value]() -> double {
            if (!value.is_number()) throw UsageError("'" + key + "' must be a number");
            return value.get<double>();
        };
        auto flag = [&, &key = key, &value = value]() -> int32_t {
            if (value.is_boolean()) return value.get<bool>() ? 1 : 0;
            throw UsageError("'" + key + "' must be true or false");
        };
        auto int32 = [&, &key = key]() -> int32_t {
            const int64_t v = integer();
            if (v < INT32_MIN || v > INT32_MAX) throw UsageError("'" + key + "' is out of range");
            return static_cast<int32_t>(v);
        };
        auto name_or_int32 = [&, &key = key, &value = value](const Names& names) -> int32_t {
            return value.is_string() ? named(names, value.get<std::string>(), "'" + key + "'") : int32();
        };
        if (key == "policy") p.policy = name_or_int32(unmask_names::policies());
        else if (key == "eos_confidence") p.eos_confidence = name_or_int32(unmask_names::eos_confidences());
        else if (key == "gen_length") p.gen_length = integer();
        else if (key == "steps") p.steps = integer(), steps_given = true;
        else if (key == "block_length") p.block_length = integer();
        else if (key == "min_steps") p.min_steps = integer();
        else if (key == "max_steps") p.max_steps = integer();
        else if (key == "temperature") p.temperature = number();
        else if (key == "top_k") p.top_k = integer();
        else if (key == "top_p") p.top_p = number();
        else if (key == "cfg_scale") p.cfg_scale = number();
        else if (key == "threshold") p.threshold = number();
        else if (key == "factor") p.factor = number();
        else if (key == "alg_temp") p.alg_temp = number();
        else if (key == "eps") p.eps = number();
        else if (key == "seed") p.seed = static_cast<uint64_t>(integer());
        else if (key == "logits_eos_inf") p.logits_eos_inf = flag();
        else if (key == "early_stop") p.early_stop = flag();
        else if (key == "eos_token_id") p.eos_token_id = integer();
        else if (key == "eot_token_id") p.eot_token_id = integer();
        else if (key == "timeout_seconds") p.timeout_seconds = number();
        else if (key == "cache_mode") p.cache_mode = name_or_int32(unmask_names::cache_modes());
        else if (key == "cache_refresh_steps") p.cache_refresh_steps = integer();
        else if (key == "cache_vicinity") p.cache_vicinity = integer();
        else if (key == "cache_precision") p.cache_precision = name_or_int32(unmask_names::cache_precisions());
        else throw UsageError("'" + key + "' is not a generation parameter");
    }
    if (!steps_given) p.steps = p.gen_length;
}

}  // namespace unmask_cli

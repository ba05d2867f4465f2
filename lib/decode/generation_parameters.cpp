#include "decode/generation_parameters.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "decode/decode_params.hpp"
#include "decode/sequence.hpp"
#include "model/load_options.hpp"

namespace unmask {
namespace {

constexpr double unbounded = std::numeric_limits<double>::infinity();

template <typename Enum>
constexpr NamedValue named(std::string_view name, Enum value) {
    return {name, static_cast<int32_t>(value)};
}

// The enums' numbers are the C constants' (capi/abi_enums.cpp ties them).
constexpr std::array policies = {named("low_confidence", CommitPolicy::low_confidence), named("random", CommitPolicy::random),
                                 named("origin", CommitPolicy::origin), named("maskgit_plus", CommitPolicy::maskgit_plus),
                                 named("topk_margin", CommitPolicy::topk_margin), named("entropy", CommitPolicy::entropy),
                                 named("rnd1", CommitPolicy::rnd1)};
constexpr std::array cache_modes = {named("none", CacheMode::none), named("prefix", CacheMode::prefix),
                                    named("dual", CacheMode::dual)};
constexpr std::array precisions = {named("auto", Precision::automatic), named("fp32", Precision::fp32),
                                   named("bf16", Precision::bf16), named("fp16", Precision::fp16),
                                   named("int8", Precision::int8), named("q4", Precision::q4), named("fp8", Precision::fp8)};
constexpr std::array cache_precisions = {named("fp32", Precision::fp32), named("bf16", Precision::bf16)};
// A generation's finish reasons, and the engine's two more (its RequestFinish continues these).
constexpr std::array finish_reasons = {named("length", FinishReason::length), named("eos", FinishReason::eos),
                                       named("cancelled", FinishReason::cancelled), NamedValue{"timeout", 4},
                                       NamedValue{"error", 5}};
constexpr std::array eos_confidences = {named("off", EosConfidence::off), named("reference", EosConfidence::reference_quirk),
                                        named("both", EosConfidence::eos_and_eot)};

constexpr GenerationParameter integer(std::string_view name, double minimum, double maximum, double default_value,
                            std::string_view doc) {
    return {name, ParameterType::integer, minimum, maximum, false, false, {}, default_value, doc, false};
}
// Any uint64 (the seed): held in ParameterValue::integer as its bits.
constexpr GenerationParameter unsigned64(std::string_view name, std::string_view doc) {
    return {name, ParameterType::integer, 0, 18446744073709551615.0, false, false, {}, 0, doc, true};
}
constexpr GenerationParameter number(std::string_view name, double minimum, double maximum, double default_value,
                           std::string_view doc, bool minimum_exclusive = false, bool maximum_exclusive = false) {
    return {name, ParameterType::number, minimum, maximum, minimum_exclusive, maximum_exclusive, {}, default_value, doc,
            false};
}
constexpr GenerationParameter flag(std::string_view name, std::string_view doc) {
    return {name, ParameterType::flag, 0, 1, false, false, {}, 0, doc, false};
}
constexpr GenerationParameter choice(std::string_view name, std::span<const NamedValue> choices, double default_value,
                           std::string_view doc) {
    return {name, ParameterType::choice, 0, 0, false, false, choices, default_value, doc, false};
}

constexpr double max_positions = double(int64_t{1} << 30);

// constexpr: filled at compile time, so a caller's static initialisers may read it.
constexpr std::array parameters = {
    choice("policy", policies, 0, "commit policy: LLaDA's low_confidence or random, Dream's origin, maskgit_plus, "
                                  "topk_margin or entropy, RND1's rnd1"),
    integer("gen_length", 1, unbounded, 128, "positions to generate after the prompt"),
    integer("steps", 1, unbounded, 128, "denoising steps of a fixed schedule"),
    integer("block_length", 0, unbounded, 0,
            "semi-autoregressive block length (0: a block diffusion model's own, else gen_length)"),
    integer("min_steps", 0, unbounded, 0, "lower bound on the steps (0: none)"),
    integer("max_steps", 0, unbounded, 0, "upper bound on the steps (0: none)"),
    number("temperature", 0, unbounded, 0, "sampling temperature (0: greedy)"),
    integer("top_k", 0, unbounded, 0, "Dream's policies: keep the k most likely tokens (0: off)"),
    number("top_p", 0, 1, 1, "Dream's policies: nucleus sampling (1: off)", true),
    number("cfg_scale", 0, unbounded, 0, "classifier-free guidance scale (0: off)"),
    number("threshold", 0, 1, 0, "parallel decoding: commit every position with confidence >= threshold (0: off)"),
    number("factor", 0, unbounded, 0, "parallel decoding with Fast-dLLM's factor rule (0: off)"),
    number("alg_temp", 0, unbounded, 0, "Dream: sample the committed positions at this temperature (0: the top ones)"),
    number("eps", 0, 1, 1e-3, "Dream: the final timestep", true, true),
    unsigned64("seed", "the seed of all randomness"),
    flag("logits_eos_inf", "never sample EOS (LLaDA's logits_eos_inf)"),
    choice("eos_confidence", eos_confidences, 0, "EOS/EOT confidences: off, reference (as LLaDA's code), both"),
    flag("early_stop", "stop once the answer has ended with EOS in a finished block"),
    number("edit_threshold", 0, 1, 0, "LLaDA2.1 token editing with threshold decoding: also replace a committed "
                                      "token of the block whose prediction differs with probability above this (0: off)"),
    integer("max_post_edit_steps", 0, double(max_supported_steps), 16,
            "token editing: steps of edits alone after a block's last mask"),
    integer("threads", 0, 1024, 0, "CPU threads of a synchronous generation (0: all)"),
    integer("eos_token_id", -1, unbounded, -1, "the EOS token (-1: the model's)"),
    integer("eot_token_id", -1, unbounded, -1, "the EOT token (-1: none)"),
    number("timeout_seconds", 0, unbounded, 0, "engine requests: the deadline from submission (0: the engine's)"),
    flag("stream_steps", "engine requests: a stream event after every step, not only per block"),
    choice("cache_mode", cache_modes, 0, "K/V cache: none (exact), prefix or dual"),
    integer("cache_refresh_steps", 0, double(max_supported_steps), 0,
            "with a cache: also recompute the whole canvas every this many steps of a block (0: at block starts)"),
    integer("cache_vicinity", 0, max_positions, 0, "with a cache: also recompute this many positions on each side"),
    choice("cache_precision", cache_precisions, 1, "with a cache: fp32, or bf16 (half the memory, K/V rounded)"),
};

[[noreturn]] void refuse_range(const GenerationParameter& p, const std::string& shown) {
    const bool open_above = std::isinf(p.maximum);
    if (p.type == ParameterType::integer) {
        if (open_above && p.minimum == 1) fail(Status::invalid_argument, "{} must be positive, got {}", p.name, shown);
        if (open_above && p.minimum == 0) fail(Status::invalid_argument, "{} must not be negative, got {}", p.name, shown);
        if (open_above) fail(Status::invalid_argument, "{} must be >= {}, got {}", p.name, p.minimum, shown);
        fail(Status::invalid_argument, "{} must be in {}..{}, got {}", p.name, int64_t(p.minimum), int64_t(p.maximum),
             shown);
    }
    if (open_above)
        fail(Status::invalid_argument, "{} must be {} {}, got {}", p.name, p.minimum_exclusive ? ">" : ">=", p.minimum,
             shown);
    fail(Status::invalid_argument, "{} must be in {}{}, {}{}, got {}", p.name, p.minimum_exclusive ? "(" : "[", p.minimum,
         p.maximum, p.maximum_exclusive ? ")" : "]", shown);
}

bool within(const GenerationParameter& p, double v) {
    const bool above = p.minimum_exclusive ? v > p.minimum : v >= p.minimum;
    const bool below = p.maximum_exclusive ? v < p.maximum : v <= p.maximum;
    return above && below;
}

// Text that is a whole number of T's form, but beyond T's range (1e400 for a double).
template <typename T>
bool out_of_range(std::string_view text) {
    T value{};
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    return error == std::errc::result_out_of_range && end == text.data() + text.size();
}

template <typename T>
std::optional<T> parse_whole(std::string_view text) {
    T value{};
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
    return value;
}

}  // namespace

std::span<const NamedValue> enumeration_values(Enumeration enumeration) noexcept {
    switch (enumeration) {
        case Enumeration::policy: return policies;
        case Enumeration::cache_mode: return cache_modes;
        case Enumeration::precision: return precisions;
        case Enumeration::finish_reason: return finish_reasons;
        case Enumeration::eos_confidence: return eos_confidences;
    }
    return {};
}

std::optional<std::string_view> enumeration_name(Enumeration enumeration, int32_t value) noexcept {
    for (const NamedValue& v : enumeration_values(enumeration))
        if (v.value == value) return v.name;
    return std::nullopt;
}

std::optional<int32_t> enumeration_value(Enumeration enumeration, std::string_view name) noexcept {
    for (const NamedValue& v : enumeration_values(enumeration))
        if (v.name == name) return v.value;
    return std::nullopt;
}

std::string value_names(std::span<const NamedValue> values) {
    std::string out;
    for (const NamedValue& v : values) out += (out.empty() ? "" : ", ") + std::string(v.name);
    return out;
}

std::span<const GenerationParameter> generation_parameters() noexcept { return parameters; }

const GenerationParameter& generation_parameter(std::string_view name) {
    for (const GenerationParameter& p : parameters)
        if (p.name == name) return p;
    std::string names;
    for (const GenerationParameter& p : parameters) names += (names.empty() ? "" : ", ") + std::string(p.name);
    fail(Status::invalid_argument, "'{}' is not a generation parameter (they are {})", name, names);
}

void check_parameter(const GenerationParameter& p, const ParameterValue& value) {
    switch (p.type) {
        case ParameterType::integer:
            if (!p.unsigned_64 && !within(p, double(value.integer))) refuse_range(p, std::to_string(value.integer));
            return;
        case ParameterType::number:
            if (!std::isfinite(value.number))
                fail(Status::invalid_argument, "{} must be a finite number, got {}", p.name, value.number);
            if (!within(p, value.number)) refuse_range(p, fmt::format("{}", value.number));
            return;
        case ParameterType::flag:
            if (value.integer != 0 && value.integer != 1)
                fail(Status::invalid_argument, "{} must be true or false (1 or 0), got {}", p.name, value.integer);
            return;
        case ParameterType::choice:
            for (const NamedValue& v : p.choices)
                if (v.value == value.integer) return;
            fail(Status::invalid_argument, "{} must be one of {}, got {}", p.name, value_names(p.choices), value.integer);
    }
}

void check_parameter(std::string_view name, double value) { check_parameter(generation_parameter(name), {0, value}); }

void check_parameter(std::string_view name, int64_t value) { check_parameter(generation_parameter(name), {value, 0}); }

ParameterValue parse_parameter(const GenerationParameter& p, std::string_view text) {
    ParameterValue value;
    switch (p.type) {
        case ParameterType::integer: {
            if (p.unsigned_64) {
                const auto parsed = parse_whole<uint64_t>(text);
                if (!parsed)
                    fail(Status::invalid_argument, "{} must be a whole number in 0..18446744073709551615, got '{}'", p.name,
                         text);
                value.integer = static_cast<int64_t>(*parsed);
                break;
            }
            const auto parsed = parse_whole<int64_t>(text);
            if (!parsed && out_of_range<int64_t>(text))
                fail(Status::invalid_argument, "{} must be an integer within int64, got '{}'", p.name, text);
            if (!parsed) fail(Status::invalid_argument, "{} must be an integer, got '{}'", p.name, text);
            value.integer = *parsed;
            break;
        }
        case ParameterType::number: {
            const auto parsed = parse_whole<double>(text);
            if (!parsed && out_of_range<double>(text))
                fail(Status::invalid_argument, "{} must be a finite number, got '{}'", p.name, text);
            if (!parsed) fail(Status::invalid_argument, "{} must be a number, got '{}'", p.name, text);
            value.number = *parsed;
            break;
        }
        case ParameterType::flag:
            if (text == "true" || text == "1") value.integer = 1;
            else if (text == "false" || text == "0") value.integer = 0;
            else fail(Status::invalid_argument, "{} must be true or false, got '{}'", p.name, text);
            break;
        case ParameterType::choice: {
            bool found = false;
            for (const NamedValue& v : p.choices)
                if (v.name == text) value.integer = v.value, found = true;
            if (!found) {
                const auto parsed = parse_whole<int32_t>(text);
                if (!parsed) fail(Status::invalid_argument, "{} must be one of {}, got '{}'", p.name, value_names(p.choices), text);
                value.integer = *parsed;
            }
            break;
        }
    }
    check_parameter(p, value);
    return value;
}

std::string format_parameter(const GenerationParameter& p, const ParameterValue& value) {
    switch (p.type) {
        case ParameterType::integer:
            return p.unsigned_64 ? std::to_string(static_cast<uint64_t>(value.integer)) : std::to_string(value.integer);
        case ParameterType::number: return fmt::format("{}", value.number);  // shortest text that reads back exactly
        case ParameterType::flag:
            return value.integer == 0 ? "false" : value.integer == 1 ? "true" : std::to_string(value.integer);
        case ParameterType::choice:
            for (const NamedValue& v : p.choices)
                if (v.value == value.integer) return std::string(v.name);
            return std::to_string(value.integer);
    }
    return {};
}

}  // namespace unmask

// The names of unmask.h's enumerated generation parameters as the tools spell them (the unmask
// command, serve-stdin requests, the quality harness): one table per parameter, shared.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "unmask.h"

namespace unmask_names {

using Names = std::map<std::string, int32_t>;

inline const Names& policies() {
    static const Names names = {
        {"low_confidence", UNMASK_POLICY_LOW_CONFIDENCE}, {"random", UNMASK_POLICY_RANDOM},
        {"origin", UNMASK_POLICY_ORIGIN},                 {"maskgit_plus", UNMASK_POLICY_MASKGIT_PLUS},
        {"topk_margin", UNMASK_POLICY_TOPK_MARGIN},       {"entropy", UNMASK_POLICY_ENTROPY}};
    return names;
}

inline const Names& eos_confidences() {
    static const Names names = {{"off", UNMASK_EOS_CONFIDENCE_OFF},
                                {"reference", UNMASK_EOS_CONFIDENCE_REFERENCE},
                                {"both", UNMASK_EOS_CONFIDENCE_BOTH}};
    return names;
}

inline const Names& cache_modes() {
    static const Names names = {
        {"none", UNMASK_CACHE_NONE}, {"prefix", UNMASK_CACHE_PREFIX}, {"dual", UNMASK_CACHE_DUAL}};
    return names;
}

// The K/V cache's element types (cache_precision).
inline const Names& cache_precisions() {
    static const Names names = {{"fp32", UNMASK_PRECISION_FP32}, {"bf16", UNMASK_PRECISION_BF16}};
    return names;
}

inline std::optional<int32_t> lookup(const Names& names, const std::string& name) {
    const auto it = names.find(name);
    if (it == names.end()) return std::nullopt;
    return it->second;
}

// "a, b, c": for error messages.
inline std::string listed(const Names& names) {
    std::string out;
    for (const auto& entry : names) out += (out.empty() ? "" : ", ") + entry.first;
    return out;
}

}  // namespace unmask_names

// The library's table of generation parameters (unmask_generate_param_info), read once: where
// the command line and the server look up a parameter's name, type and choices. The values
// themselves are checked by unmask_generate_params_set.
#pragma once

#include <string_view>
#include <vector>

#include "unmask.h"

namespace unmask_examples {

inline const std::vector<unmask_parameter_info>& generation_parameters() {
    static const std::vector<unmask_parameter_info> all = [] {
        std::vector<unmask_parameter_info> out;
        for (int64_t i = 0; i < unmask_generate_param_count(); ++i) {
            unmask_parameter_info info{};
            info.struct_size = sizeof info;
            if (unmask_generate_param_info(i, &info) == UNMASK_OK) out.push_back(info);
        }
        return out;
    }();
    return all;
}

// Null when the library has no parameter called `name`.
inline const unmask_parameter_info* find_generation_parameter(std::string_view name) {
    for (const unmask_parameter_info& info : generation_parameters())
        if (name == info.name) return &info;
    return nullptr;
}

}  // namespace unmask_examples

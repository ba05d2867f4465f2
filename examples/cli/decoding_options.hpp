// The decoding parameters of unmask_generate_params, from command-line flags (`unmask generate`)
// or from a JSON request by their C API names (`unmask serve-stdin`).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "args.hpp"
#include "parameter_names.hpp"
#include "unmask.h"

namespace unmask_cli {

std::vector<OptionSpec> with_decoding_options(std::vector<OptionSpec> options);
void apply_decoding_options(const ParsedArgs& args, unmask_generate_params& params);

// Every key but `skip` must be a field of unmask_generate_params by its C name, with a value of
// its type ("policy" and "eos_confidence" also by name); UsageError naming the key otherwise.
void apply_json_params(const nlohmann::json& request, const std::vector<std::string>& skip,
                       unmask_generate_params& params);

const char* finish_name(int32_t reason);

// The value `text` names in `names`; UsageError naming `what` and the names otherwise.
int32_t named(const unmask_names::Names& names, const std::string& text, const std::string& what);

}  // namespace unmask_cli

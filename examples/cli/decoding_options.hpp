// The generation parameters of unmask_generate_params by their names in the library's table
// (unmask_generate_param_info): as command-line flags (`unmask generate`: --block-length for
// block_length) or as the keys of a JSON request (`unmask serve-stdin`). Values are checked by
// unmask_generate_params_set; nothing here knows a range.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "args.hpp"
#include "unmask.h"

namespace unmask_cli {

std::vector<OptionSpec> with_decoding_options(std::vector<OptionSpec> options);
// UsageError for a value of the wrong form or an unknown choice; CommandError (INVALID_ARGUMENT)
// for one outside its range.
void apply_decoding_options(const ParsedArgs& args, unmask_generate_params& params);

// Every key but `skip` must be a parameter by its name, with a JSON value of its type (choices
// also by name); UsageError naming the key otherwise.
void apply_json_params(const nlohmann::json& request, const std::vector<std::string>& skip,
                       unmask_generate_params& params);

// The name of a finish reason (UNMASK_FINISH_*).
const char* finish_name(int32_t reason);

// The value of `enumeration` (UNMASK_ENUM_*) that `text` names; UsageError naming `what` and
// the names otherwise.
int32_t named(int32_t enumeration, const std::string& text, const std::string& what);

}  // namespace unmask_cli

#include "decoding_options.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "commands.hpp"
#include "generation_parameters.hpp"

namespace unmask_cli {
namespace {

// The parameters `unmask generate` takes as flags: the engine's options cover the CPU threads and
// the deadline, and the command streams no steps.
bool is_decoding_flag(std::string_view name) {
    return name != "threads" && name != "timeout_seconds" && name != "stream_steps";
}

std::string flag_of(std::string_view name) {
    std::string flag(name);
    std::replace(flag.begin(), flag.end(), '_', '-');
    return flag;
}

std::vector<std::string> choices_of(const unmask_parameter_info& info) {
    std::vector<std::string> out;
    std::string_view rest = info.choices;
    while (!rest.empty()) {
        const size_t comma = std::min(rest.find(','), rest.size());
        out.emplace_back(rest.substr(0, comma));
        rest.remove_prefix(std::min(comma + 1, rest.size()));
    }
    return out;
}

// A choice's name, checked here so that a misspelt one is a usage error listing the names.
std::string choice(const unmask_parameter_info& info, const std::string& text, const std::string& what) {
    const auto names = choices_of(info);
    if (std::find(names.begin(), names.end(), text) != names.end()) return text;
    std::string listed;
    for (const auto& n : names) listed += (listed.empty() ? "" : ", ") + n;
    throw UsageError(what + " must be one of " + listed + ", got '" + text + "'");
}

void set(unmask_generate_params& params, const char* name, const std::string& value) {
    check(unmask_generate_params_set(&params, name, value.c_str()));
}


}  // namespace

int32_t named(int32_t enumeration, const std::string& text, const std::string& what) {
    int32_t value = 0;
    if (unmask_enum_value(enumeration, text.c_str(), &value) == UNMASK_OK) return value;
    std::string listed;
    for (int32_t v = 0; v < 64; ++v)
        if (const char* n = unmask_enum_name(enumeration, v)) listed += (listed.empty() ? "" : ", ") + std::string(n);
    throw UsageError(what + " must be one of " + listed + ", got '" + text + "'");
}

const char* finish_name(int32_t reason) {
    const char* name = unmask_enum_name(UNMASK_ENUM_FINISH_REASON, reason);
    return name != nullptr ? name : "length";
}

std::vector<OptionSpec> with_decoding_options(std::vector<OptionSpec> options) {
    for (const unmask_parameter_info& info : unmask_examples::generation_parameters()) {
        if (!is_decoding_flag(info.name)) continue;
        std::string help = info.doc;
        if (info.type == UNMASK_PARAM_CHOICE) help += " (" + std::string(info.choices) + ")";
        if (std::string_view(info.name) == "steps") help += "; default: --gen-length";
        else if (info.type != UNMASK_PARAM_FLAG) help += "; default " + std::string(info.default_value);
        const char* value_name = info.type == UNMASK_PARAM_FLAG      ? ""
                                 : info.type == UNMASK_PARAM_INTEGER ? "N"
                                 : info.type == UNMASK_PARAM_NUMBER  ? "X"
                                                                     : "NAME";
        options.push_back({flag_of(info.name), value_name, help});
    }
    return options;
}

void apply_decoding_options(const ParsedArgs& args, unmask_generate_params& params) {
    for (const unmask_parameter_info& info : unmask_examples::generation_parameters()) {
        const std::string flag = flag_of(info.name);
        if (!is_decoding_flag(info.name) || !args.has(flag)) continue;
        switch (info.type) {
            case UNMASK_PARAM_FLAG: set(params, info.name, "true"); break;
            // The text as given, once it has a number's form (a usage error otherwise): the
            // library reads it, and says what is out of range. The seed takes any uint64.
            case UNMASK_PARAM_INTEGER:
                if (!(std::isfinite(info.maximum) && info.maximum > 9.3e18)) args.integer(flag);  // int64 form
                set(params, info.name, *args.value(flag));
                break;
            case UNMASK_PARAM_NUMBER:
                args.number(flag);
                set(params, info.name, *args.value(flag));
                break;
            default: set(params, info.name, choice(info, *args.value(flag), "--" + flag));
        }
    }
    if (!args.has("steps")) params.steps = params.gen_length;
}

void apply_json_params(const nlohmann::json& request, const std::vector<std::string>& skip,
                       unmask_generate_params& params) {
    for (const auto& [key, value] : request.items()) {
        if (std::find(skip.begin(), skip.end(), key) != skip.end()) continue;
        const unmask_parameter_info* info = unmask_examples::find_generation_parameter(key);
        if (info == nullptr) throw UsageError("'" + key + "' is not a generation parameter");
        const std::string quoted = "'" + key + "'";
        switch (info->type) {
            case UNMASK_PARAM_INTEGER:
                if (!value.is_number_integer()) throw UsageError(quoted + " must be an integer");
                set(params, info->name, value.dump());
                break;
            case UNMASK_PARAM_NUMBER:
                if (!value.is_number()) throw UsageError(quoted + " must be a number");
                set(params, info->name, value.dump());
                break;
            case UNMASK_PARAM_FLAG:
                if (!value.is_boolean()) throw UsageError(quoted + " must be true or false");
                set(params, info->name, value.dump());
                break;
            default:
                if (value.is_string()) set(params, info->name, choice(*info, value.get<std::string>(), quoted));
                else if (value.is_number_integer()) set(params, info->name, value.dump());
                else throw UsageError(quoted + " must be one of " + std::string(info->choices));
        }
    }
    if (!request.contains("steps")) params.steps = params.gen_length;
}

}  // namespace unmask_cli

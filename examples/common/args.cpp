#include "args.hpp"

#include <algorithm>
#include <sstream>

#include "parse_number.hpp"

namespace unmask_cli {
namespace {

std::vector<OptionSpec> all_options(const CommandSpec& spec) {
    std::vector<OptionSpec> options = spec.options;
    if (spec.json) options.push_back({"json", "", "print machine-readable JSON on stdout"});
    options.push_back({"help", "", "show this help", 'h'});
    return options;
}

const OptionSpec* find_option(const std::vector<OptionSpec>& options, const std::string& name) {
    for (const auto& option : options)
        if (option.name == name) return &option;
    return nullptr;
}

}  // namespace

std::optional<std::string> ParsedArgs::value(const std::string& name) const {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second.back();
}

std::vector<std::string> ParsedArgs::all(const std::string& name) const {
    const auto it = values.find(name);
    return it == values.end() ? std::vector<std::string>{} : it->second;
}

std::optional<int64_t> ParsedArgs::integer(const std::string& name) const {
    const auto text = value(name);
    if (!text) return std::nullopt;
    if (const auto v = unmask_examples::parse_integer(*text)) return v;
    throw UsageError("--" + name + " needs an integer, got '" + *text + "'");
}

std::optional<double> ParsedArgs::number(const std::string& name) const {
    const auto text = value(name);
    if (!text) return std::nullopt;
    if (const auto v = unmask_examples::parse_number(*text)) return v;
    throw UsageError("--" + name + " needs a number, got '" + *text + "'");
}

int64_t ParsedArgs::integer(const std::string& name, int64_t otherwise, int64_t min, int64_t max) const {
    const int64_t value = integer(name).value_or(otherwise);
    if (value < min || value > max)
        throw UsageError("--" + name + " must be " +
                         (max == INT64_MAX ? "at least " + std::to_string(min)
                                           : "within " + std::to_string(min) + ".." + std::to_string(max)) +
                         ", got " + std::to_string(value));
    return value;
}

ParsedArgs parse_args(const CommandSpec& spec, const std::vector<std::string>& args) {
    const auto options = all_options(spec);
    ParsedArgs parsed;
    for (size_t i = 0; i < args.size(); ++i) {
        std::string arg = args[i];
        if (arg.size() == 2 && arg[0] == '-' && arg[1] != '-') {  // a short alias (-m): its long name
            const auto it = std::find_if(options.begin(), options.end(),
                                         [&](const OptionSpec& o) { return o.short_name == arg[1]; });
            if (it == options.end()) throw UsageError("unknown option '" + arg + "'");
            arg = "--" + it->name;
        }
        if (arg.rfind("--", 0) != 0 || arg == "--") {
            parsed.positional.push_back(arg);
            continue;
        }
        std::string name = arg.substr(2);
        std::optional<std::string> inline_value;
        if (auto eq = name.find('='); eq != std::string::npos) {
            inline_value = name.substr(eq + 1);
            name = name.substr(0, eq);
        }
        const OptionSpec* option = find_option(options, name);
        if (option == nullptr) throw UsageError("unknown option '--" + name + "'");
        std::string value;
        if (option->value_name.empty()) {
            if (inline_value) throw UsageError("option '--" + name + "' takes no value");
        } else if (inline_value) {
            value = *inline_value;
        } else {
            // The next argument is the value as it stands, even when it looks like an option (-1).
            if (i + 1 >= args.size()) throw UsageError("option '--" + name + "' needs a value " + option->value_name);
            value = args[++i];
        }
        parsed.values[name].push_back(value);
    }
    if (parsed.has("help")) return parsed;
    if (parsed.positional.size() < spec.min_positional)
        throw UsageError("missing argument " + spec.positional);
    if (parsed.positional.size() > spec.max_positional)
        throw UsageError("unexpected argument '" + parsed.positional[spec.max_positional] + "'");
    return parsed;
}

std::string help_text(const CommandSpec& spec) {
    std::ostringstream out;
    out << "usage: " << spec.program << (spec.name.empty() ? "" : " " + spec.name) << " [options]";
    if (!spec.positional.empty()) out << " " << spec.positional;
    out << "\n\n" << spec.summary << "\n\noptions:\n";
    for (const auto& option : all_options(spec)) {
        std::string left = std::string(option.short_name ? "  -" + std::string(1, option.short_name) + ", --" : "  --") +
                           option.name + (option.value_name.empty() ? "" : " " + option.value_name);
        if (left.size() < 28) left.resize(28, ' ');
        else left += "  ";
        out << left << option.help << "\n";
    }
    return out.str();
}

}  // namespace unmask_cli

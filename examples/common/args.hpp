// A small declarative command-line parser for the example programs (the `unmask` command's
// subcommands, unmask-server): each command declares its options, and parsing either succeeds or
// throws UsageError with one line that says what was wrong.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace unmask_cli {

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct OptionSpec {
    std::string name;        // without the leading "--"
    std::string value_name;  // empty: a flag that takes no value
    std::string help;
    char short_name = 0;     // e.g. 'm' for -m; 0: none
};

// An option several programs take (unmask's subcommands, unmask-quality), spelt once.
inline const OptionSpec quantize_embeddings_option{"quantize-embeddings", "",
                                                   "with int8, q4 or fp8: quantize the embedding and the LM head too"};

struct CommandSpec {
    std::string name;  // the subcommand ("generate"); empty for a program without them
    std::string summary;
    std::string positional;  // e.g. "DIR"; empty when the command takes none
    size_t min_positional = 0;
    size_t max_positional = 0;
    std::vector<OptionSpec> options;  // --help is added to every command
    bool json = true;                 // add --json (machine-readable output)
    std::string program = "unmask";
};

struct ParsedArgs {
    std::vector<std::string> positional;
    std::map<std::string, std::vector<std::string>> values;  // each option's values in order; flags give ""

    bool has(const std::string& name) const { return values.count(name) != 0; }
    // The last value of an option given more than once.
    std::optional<std::string> value(const std::string& name) const;
    // Every value of a repeatable option (--setting A --setting B), in order.
    std::vector<std::string> all(const std::string& name) const;
    // Typed values; UsageError naming the option when the text is not a number.
    std::optional<int64_t> integer(const std::string& name) const;
    std::optional<double> number(const std::string& name) const;
    // The integer value, `otherwise` when absent; UsageError unless within min..max.
    int64_t integer(const std::string& name, int64_t otherwise, int64_t min, int64_t max = INT64_MAX) const;
};

ParsedArgs parse_args(const CommandSpec& spec, const std::vector<std::string>& args);
std::string help_text(const CommandSpec& spec);

}  // namespace unmask_cli

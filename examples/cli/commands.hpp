// The subcommands of `unmask`. Each returns the process exit code and reports failures by
// throwing CommandError (one line on stderr, exit 1) or UsageError (exit 2).
#pragma once

#include <stdexcept>
#include <string>

#include "args.hpp"
#include "unmask.h"

namespace unmask_cli {

// A failed library call or a failed command: `status` is the library status when there is one.
struct CommandError : std::runtime_error {
    CommandError(unmask_status s, const std::string& message) : std::runtime_error(message), status(s) {}
    unmask_status status;
};

// Throws CommandError with unmask_last_error() when `status` is not UNMASK_OK.
void check(unmask_status status);

struct Command {
    CommandSpec spec;
    int (*run)(const ParsedArgs& args);
};

extern const Command version_command;
extern const Command inspect_command;
extern const Command generate_command;
extern const Command chat_command;
extern const Command plan_command;
extern const Command tokenize_command;
extern const Command detokenize_command;
extern const Command serve_stdin_command;

}  // namespace unmask_cli

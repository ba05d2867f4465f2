// `unmask`: the command-line face of the library. It uses only the public C API (unmask.h).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"

using namespace unmask_cli;

namespace {

const Command* const commands[] = {&version_command,  &inspect_command,    &generate_command,
                                   &chat_command,     &plan_command,       &tokenize_command,
                                   &detokenize_command, &serve_stdin_command};

void print_usage(std::ostream& out) {
    out << "usage: unmask <command> [options]\n\n"
           "unmask runs diffusion language models (LLaDA, LLaDA-MoE, Dream) from Hugging Face directories.\n\n"
           "commands:\n";
    size_t width = 0;
    for (const Command* command : commands) width = std::max(width, command->spec.name.size());
    for (const Command* command : commands) {
        std::string name = "  " + command->spec.name;
        name.resize(width + 4, ' ');  // never cuts a name: `serve-stdin` ran into its summary
        out << name << command->spec.summary.substr(0, command->spec.summary.find('\n')) << "\n";
    }
    out << "\nRun 'unmask <command> --help' for the options of a command.\n";
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty()) {
        print_usage(std::cerr);
        return 2;
    }
    if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        print_usage(std::cout);
        return 0;
    }
    if (args[0] == "--version") args[0] = "version";

    for (const Command* command : commands) {
        if (command->spec.name != args[0]) continue;
        const std::vector<std::string> rest(args.begin() + 1, args.end());
        try {
            const ParsedArgs parsed = parse_args(command->spec, rest);
            if (parsed.has("help")) {
                std::cout << help_text(command->spec);
                return 0;
            }
            return command->run(parsed);
        } catch (const UsageError& e) {
            std::cerr << "unmask " << command->spec.name << ": " << e.what() << " (see 'unmask "
                      << command->spec.name << " --help')\n";
            return 2;
        } catch (const CommandError& e) {
            std::cerr << "unmask " << command->spec.name << ": error: " << e.what() << "\n";
            return 1;
        } catch (const std::exception& e) {
            std::cerr << "unmask " << command->spec.name << ": error: " << e.what() << "\n";
            return 1;
        }
    }
    std::cerr << "unmask: unknown command '" << args[0] << "' (see 'unmask --help')\n";
    return 2;
}

// Subcommands whose library side is not built yet. They fail loudly and name what is missing, so
// nobody mistakes them for working features.
#include "commands.hpp"

namespace unmask_cli {
namespace {

int run_plan(const ParsedArgs&) {
    throw CommandError(UNMASK_ERR_UNSUPPORTED, "UNSUPPORTED: memory planning is not implemented yet in this version");
}

}  // namespace

const Command plan_command{
    {"plan", "Plan memory for a model against a budget (not implemented yet).", "", 0, 0, {}}, run_plan};

}  // namespace unmask_cli

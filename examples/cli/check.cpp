#include "commands.hpp"

namespace unmask_cli {

void check(unmask_status status) {
    if (status == UNMASK_OK) return;
    throw CommandError(status, std::string(unmask_status_string(status)) + ": " + unmask_last_error());
}

}  // namespace unmask_cli

// Where the default model is when none is named: $UNMASK_MODEL, else the bundled model installed
// beside the binary, else this source tree's. Shared by the `unmask` command and unmask-server.
#pragma once

#include <string>

namespace unmask_examples {

// Throws std::runtime_error listing the places tried when there is none.
std::string default_model_path();

}  // namespace unmask_examples

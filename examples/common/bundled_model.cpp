#include "bundled_model.hpp"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace unmask_examples {

std::string default_model_path() {
    if (const char* chosen = std::getenv("UNMASK_MODEL"); chosen != nullptr && *chosen != '\0') return chosen;
    namespace fs = std::filesystem;
    std::vector<fs::path> places;
    std::error_code error;
    const fs::path executable = fs::read_symlink("/proc/self/exe", error);
    if (!error)
        places.push_back((executable.parent_path() / UNMASK_INSTALLED_MODELS_FROM_BIN / UNMASK_BUNDLED_MODEL_NAME).lexically_normal());
    places.emplace_back(UNMASK_SOURCE_MODELS_DIR "/" UNMASK_BUNDLED_MODEL_NAME);
    std::string tried;
    for (const fs::path& place : places) {
        if (fs::is_regular_file(place / "config.json", error)) return place.string();
        tried += (tried.empty() ? "" : ", ") + place.string();
    }
    throw std::runtime_error("no model given (-m DIR, --config FILE or $UNMASK_MODEL) and the bundled model is not at " +
                             tried);
}

}  // namespace unmask_examples

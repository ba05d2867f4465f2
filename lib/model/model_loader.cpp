#include <system_error>

#include "core/error.hpp"
#include "model/model.hpp"

namespace unmask {

std::unique_ptr<Model> load_model(const std::filesystem::path& directory, const LoadOptions& options) {
    std::error_code ec;
    if (!std::filesystem::exists(directory, ec))
        fail(Status::io, "model directory '{}' does not exist", directory.string());
    if (!std::filesystem::is_directory(directory, ec))
        fail(Status::io, "model path '{}' is not a directory", directory.string());
    if (!std::filesystem::exists(directory / "config.json", ec))
        fail(Status::io, "model directory '{}' has no config.json", directory.string());
    if (options.backend == BackendKind::cuda)
        fail(Status::unsupported, "the CUDA backend is not implemented yet");
    fail(Status::unsupported, "loading model weights is not implemented yet (directory '{}')", directory.string());
}

}  // namespace unmask

// Every tensor of a model directory, across its safetensors shards: either model.safetensors, or
// the shards named by model.safetensors.index.json. Built from headers only (no tensor data read),
// so the memory planner and `unmask inspect` can use it cheaply.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "format/safetensors.hpp"

namespace unmask {

struct CatalogEntry {
    const SafetensorsFile* file;
    const TensorInfo* info;
};

class TensorCatalog {
public:
    // Opens the weights of `directory`. Throws IO (missing file, naming it) or MODEL_FORMAT.
    static TensorCatalog open(const std::filesystem::path& directory);

    const std::vector<std::unique_ptr<SafetensorsFile>>& files() const noexcept { return files_; }
    const std::map<std::string, CatalogEntry>& tensors() const noexcept { return tensors_; }
    const CatalogEntry* find(const std::string& name) const;
    uint64_t total_file_bytes() const noexcept;

private:
    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::map<std::string, CatalogEntry> tensors_;
};

// A file name written inside a model file (a shard in the index, an entry of SHA256SUMS) must
// be a plain name in the model directory: not empty, not absolute, no "..", no separators.
// Throws MODEL_FORMAT naming `source` and the name.
void require_plain_file_name(const std::string& name, std::string_view source);

}  // namespace unmask

#include "format/tensor_catalog.hpp"

#include <set>
#include <system_error>

#include "core/error.hpp"
#include "core/mapped_file.hpp"
#include "format/strict_json.hpp"

namespace unmask {
namespace {

constexpr const char* single_file_name = "model.safetensors";
constexpr const char* index_file_name = "model.safetensors.index.json";

std::map<std::string, std::string> read_weight_map(const std::filesystem::path& index_path) {
    const MappedFile file(index_path);
    const std::string_view text(reinterpret_cast<const char*>(file.data()), file.size());
    const nlohmann::json root = parse_json_rejecting_duplicates(text, index_file_name);
    if (!root.is_object()) fail(Status::model_format, "{}: the top level is not a JSON object", index_file_name);
    const auto it = root.find("weight_map");
    if (it == root.end() || !it->is_object())
        fail(Status::model_format, "{}: 'weight_map' is missing or not an object", index_file_name);
    std::map<std::string, std::string> weight_map;
    for (const auto& [tensor, shard] : it->items()) {
        if (!shard.is_string())
            fail(Status::model_format, "{}: weight_map entry '{}' is not a file name", index_file_name, tensor);
        require_plain_file_name(shard.get<std::string>(), index_file_name);
        weight_map[tensor] = shard.get<std::string>();
    }
    return weight_map;
}

}  // namespace

void require_plain_file_name(const std::string& name, std::string_view source) {
    const bool plain = !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
                       name.find('\\') == std::string::npos && name.find('\0') == std::string::npos;
    if (!plain)
        fail(Status::model_format, "{}: file name '{}' is not a plain name inside the model directory", source, name);
}

TensorCatalog TensorCatalog::open(const std::filesystem::path& directory) {
    TensorCatalog catalog;
    std::error_code ec;
    const auto index_path = directory / index_file_name;
    if (std::filesystem::exists(index_path, ec)) {
        const auto weight_map = read_weight_map(index_path);
        std::set<std::string> shard_names;
        for (const auto& [tensor, shard] : weight_map) shard_names.insert(shard);
        for (const auto& shard : shard_names) {
            const auto path = directory / shard;
            if (!std::filesystem::exists(path, ec))
                fail(Status::io, "shard '{}' named in {} does not exist in '{}'", shard, index_file_name, directory.string());
            catalog.files_.push_back(std::make_unique<SafetensorsFile>(path));
        }
        // Every tensor lives in exactly one shard, and in the one the index names.
        for (const auto& file : catalog.files_) {
            const std::string shard = file->path().filename().string();
            for (const TensorInfo& info : file->header().tensors) {
                const auto [it, inserted] = catalog.tensors_.emplace(info.name, CatalogEntry{file.get(), &info});
                if (!inserted)
                    fail(Status::model_format, "tensor '{}' is stored in two shards: '{}' and '{}'", info.name,
                         it->second.file->path().filename().string(), shard);
                const auto mapped = weight_map.find(info.name);
                if (mapped == weight_map.end())
                    fail(Status::model_format, "tensor '{}' in shard '{}' is not listed in {}", info.name, shard,
                         index_file_name);
                if (mapped->second != shard)
                    fail(Status::model_format, "tensor '{}' is in shard '{}' but {} places it in '{}'", info.name, shard,
                         index_file_name, mapped->second);
            }
        }
        for (const auto& [tensor, shard] : weight_map)
            if (catalog.tensors_.count(tensor) == 0)
                fail(Status::model_format, "tensor '{}' is listed in {} for shard '{}' but that shard lacks it", tensor,
                     index_file_name, shard);
        return catalog;
    }
    const auto single_path = directory / single_file_name;
    if (!std::filesystem::exists(single_path, ec))
        fail(Status::io, "'{}' has neither {} nor {}", directory.string(), single_file_name, index_file_name);
    catalog.files_.push_back(std::make_unique<SafetensorsFile>(single_path));
    for (const TensorInfo& info : catalog.files_.back()->header().tensors)
        catalog.tensors_.emplace(info.name, CatalogEntry{catalog.files_.back().get(), &info});
    return catalog;
}

const CatalogEntry* TensorCatalog::find(const std::string& name) const {
    const auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
}

uint64_t TensorCatalog::total_file_bytes() const noexcept {
    uint64_t total = 0;
    for (const auto& file : files_) total += file->size();
    return total;
}

}  // namespace unmask

// The safetensors format: an 8-byte little-endian header length, a JSON header mapping tensor
// names to {dtype, shape, data_offsets} (plus an optional "__metadata__" string map), then the
// tensor bytes. Every check a hostile file could need is done here, before any byte is used.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.hpp"
#include "format/dtype.hpp"

namespace unmask {

inline constexpr uint64_t safetensors_max_header_bytes = 100'000'000;

struct TensorInfo {
    std::string name;
    DType dtype = DType::f32;
    std::vector<int64_t> shape;
    uint64_t elements = 0;
    uint64_t begin = 0;  // byte offsets inside the data section
    uint64_t end = 0;
};

struct SafetensorsHeader {
    std::vector<TensorInfo> tensors;  // ordered by data offset
    std::map<std::string, std::string> metadata;
    uint64_t data_offset = 0;         // 8 + header length: where the data section starts
};

// Parses and validates a header's JSON against a data section of `data_size` bytes. `label`
// (usually the file name) prefixes every error message. Throws Error(MODEL_FORMAT).
SafetensorsHeader parse_safetensors_header(std::string_view header_json, uint64_t data_size, std::string_view label);

// Validates a whole file image: the length prefix, then the header, then the total size.
SafetensorsHeader parse_safetensors_file(const uint8_t* bytes, size_t size, std::string_view label);

// A mapped safetensors file. Opening reads only the header pages; tensor bytes are touched only
// when used.
class SafetensorsFile {
public:
    explicit SafetensorsFile(const std::filesystem::path& path);

    const std::filesystem::path& path() const noexcept { return path_; }
    const SafetensorsHeader& header() const noexcept { return header_; }
    uint64_t size() const noexcept { return file_.size(); }
    // The length prefix and the JSON header: every tensor's name, dtype, shape and offsets.
    std::span<const uint8_t> header_bytes() const noexcept { return {file_.data(), header_.data_offset}; }
    const uint8_t* tensor_bytes(const TensorInfo& tensor) const noexcept {
        return file_.data() + header_.data_offset + tensor.begin;
    }

private:
    std::filesystem::path path_;
    MappedFile file_;
    SafetensorsHeader header_;
};

}  // namespace unmask

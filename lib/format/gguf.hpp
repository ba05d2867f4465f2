// The GGUF container (versions 2 and 3, little-endian), as llama.cpp's converter and quantizer
// write it: a header (magic "GGUF", version, tensor and metadata counts), typed metadata
// key-value pairs, tensor descriptions (name, dimensions, ggml type, offset), then the tensor
// data at an alignment given by `general.alignment` (default 32). Specification: ggml's
// docs/gguf.md. Every check a hostile file could need is done here, before any byte is used:
// lengths, counts and offsets against the file's size, known value and tensor types, UTF-8
// keys, strings and names, no duplicates, no nested arrays (so no recursion), tensors aligned,
// inside the data and not overlapping.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.hpp"

namespace unmask {

// Metadata value types (gguf_metadata_value_type).
enum class GgufType : uint32_t {
    uint8 = 0, int8 = 1, uint16 = 2, int16 = 3, uint32 = 4, int32 = 5, float32 = 6, boolean = 7,
    string = 8, array = 9, uint64 = 10, int64 = 11, float64 = 12,
};
std::string_view gguf_type_name(GgufType type) noexcept;

// Tensor element types (ggml_type) with their block layout: `block_elements` consecutive
// elements of a row are stored in `block_bytes` bytes (1 and the element size for plain types).
struct GgmlType {
    uint32_t id = 0;
    std::string_view name;  // "F32", "Q4_K", ...: llama.cpp's spelling
    uint32_t block_elements = 1;
    uint32_t block_bytes = 4;
};
// The ggml type of this id, or nullopt for an id this reader does not know the layout of.
std::optional<GgmlType> ggml_type(uint32_t id) noexcept;

// One metadata pair. Values stay in the file's bytes and are decoded on request.
struct GgufMetadata {
    std::string_view key;
    GgufType type = GgufType::uint8;
    GgufType element_type = GgufType::uint8;  // arrays only
    uint64_t count = 1;                      // elements of an array; 1 otherwise
    const uint8_t* value = nullptr;          // the value (an array's first element)
};

struct GgufTensor {
    std::string_view name;
    GgmlType type;
    std::vector<int64_t> dims;   // ggml order: dims[0] varies fastest (a row's length)
    std::vector<int64_t> shape;  // row-major order, as PyTorch and safetensors write it (dims reversed)
    uint64_t elements = 0;
    uint64_t begin = 0;  // byte offsets inside the data section
    uint64_t end = 0;
};

// A parsed header. Its views point into the bytes it was parsed from.
struct GgufHeader {
    uint32_t version = 0;
    uint64_t alignment = 32;
    uint64_t data_offset = 0;  // where the data section starts in the file
    std::vector<GgufMetadata> metadata;  // in file order
    std::vector<GgufTensor> tensors;     // in file order
    std::string label;                   // prefixes every error message

    const GgufMetadata* find(std::string_view key) const noexcept;
    const GgufTensor* find_tensor(std::string_view name) const noexcept;

    // Typed reads; nullopt when the key is absent. A present key of another type is
    // Error(MODEL_FORMAT) naming the key and both types. Integers of every width are integers (a
    // uint64 above INT64_MAX is an error); numbers are floats or integers.
    std::optional<int64_t> integer(std::string_view key) const;
    std::optional<double> number(std::string_view key) const;
    std::optional<bool> boolean(std::string_view key) const;
    std::optional<std::string_view> string(std::string_view key) const;
    std::optional<std::vector<std::string_view>> strings(std::string_view key) const;
    std::optional<std::vector<int64_t>> integers(std::string_view key) const;
    std::optional<std::vector<double>> numbers(std::string_view key) const;
};

// Parses and validates a whole file image. Throws Error(MODEL_FORMAT) with the label and the
// malformed part named.
GgufHeader parse_gguf_file(const uint8_t* bytes, size_t size, std::string_view label);

// Whether these bytes begin with GGUF's magic.
bool is_gguf(const uint8_t* bytes, size_t size) noexcept;

// A mapped GGUF file. Opening reads the header's pages; tensor bytes are touched only when used.
class GgufFile {
public:
    explicit GgufFile(const std::filesystem::path& path);

    const std::filesystem::path& path() const noexcept { return path_; }
    const GgufHeader& header() const noexcept { return header_; }
    uint64_t size() const noexcept { return file_.size(); }
    // Everything before the data section: the metadata and every tensor's name, type, shape and offset.
    std::span<const uint8_t> header_bytes() const noexcept { return {file_.data(), header_.data_offset}; }
    const uint8_t* tensor_bytes(const GgufTensor& tensor) const noexcept {
        return file_.data() + header_.data_offset + tensor.begin;
    }

private:
    std::filesystem::path path_;
    MappedFile file_;
    GgufHeader header_;
};

}  // namespace unmask

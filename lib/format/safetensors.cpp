#include "format/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "core/checked_math.hpp"
#include "core/error.hpp"
#include "core/utf8.hpp"
#include "format/strict_json.hpp"

namespace unmask {
namespace {

using nlohmann::json;

uint64_t read_u64_le(const uint8_t* p) {
    uint64_t value = 0;
    for (int i = 7; i >= 0; --i) value = (value << 8) | p[i];
    return value;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    return fmt::format("[{}]", fmt::join(shape, ", "));
}

TensorInfo parse_tensor_entry(const std::string& name, const json& entry, std::string_view label) {
    if (!entry.is_object()) fail(Status::model_format, "{}: tensor '{}' is not a JSON object", label, name);
    TensorInfo tensor;
    tensor.name = name;

    const auto dtype_it = entry.find("dtype");
    if (dtype_it == entry.end() || !dtype_it->is_string())
        fail(Status::model_format, "{}: tensor '{}' has no string 'dtype'", label, name);
    const auto dtype = parse_dtype(dtype_it->get_ref<const std::string&>());
    if (!dtype)
        fail(Status::model_format, "{}: tensor '{}' has unknown dtype '{}'", label, name,
             dtype_it->get_ref<const std::string&>());
    tensor.dtype = *dtype;

    const auto shape_it = entry.find("shape");
    if (shape_it == entry.end() || !shape_it->is_array())
        fail(Status::model_format, "{}: tensor '{}' has no array 'shape'", label, name);
    uint64_t elements = 1;
    for (const json& dim : *shape_it) {
        if (!dim.is_number_unsigned())
            fail(Status::model_format, "{}: tensor '{}' has a shape entry that is not a non-negative integer: {}",
                 label, name, dim.dump());
        const uint64_t extent = dim.get<uint64_t>();
        if (extent > static_cast<uint64_t>(INT64_MAX) || !checked_multiply(elements, extent, elements))
            fail(Status::model_format, "{}: tensor '{}' has a shape {} whose element count overflows", label, name,
                 shape_it->dump());
        tensor.shape.push_back(static_cast<int64_t>(extent));
    }
    tensor.elements = elements;
    uint64_t bytes = 0;
    if (!checked_multiply(elements, dtype_size(tensor.dtype), bytes))
        fail(Status::model_format, "{}: tensor '{}' has a byte size that overflows (shape {})", label, name,
             shape_it->dump());

    const auto offsets_it = entry.find("data_offsets");
    if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2 ||
        !(*offsets_it)[0].is_number_unsigned() || !(*offsets_it)[1].is_number_unsigned())
        fail(Status::model_format, "{}: tensor '{}' needs 'data_offsets' as two non-negative integers", label, name);
    tensor.begin = (*offsets_it)[0].get<uint64_t>();
    tensor.end = (*offsets_it)[1].get<uint64_t>();
    if (tensor.end < tensor.begin)
        fail(Status::model_format, "{}: tensor '{}' has data_offsets [{}, {}] that end before they begin", label,
             name, tensor.begin, tensor.end);
    if (tensor.end - tensor.begin != bytes)
        fail(Status::model_format,
             "{}: tensor '{}' has {} bytes in data_offsets but shape {} of {} needs {} bytes", label, name,
             tensor.end - tensor.begin, shape_text(tensor.shape), dtype_name(tensor.dtype), bytes);
    return tensor;
}

}  // namespace

SafetensorsHeader parse_safetensors_header(std::string_view header_json, uint64_t data_size, std::string_view label) {
    if (auto bad = find_invalid_utf8(header_json))
        fail(Status::model_format, "{}: header is not valid UTF-8 (byte {} of the header)", label, *bad);
    const json root = parse_json_rejecting_duplicates(header_json, label);
    if (!root.is_object()) fail(Status::model_format, "{}: header is not a JSON object", label);

    SafetensorsHeader header;
    for (const auto& [key, value] : root.items()) {
        if (key == "__metadata__") {
            if (!value.is_object()) fail(Status::model_format, "{}: '__metadata__' is not a JSON object", label);
            for (const auto& [meta_key, meta_value] : value.items()) {
                if (!meta_value.is_string())
                    fail(Status::model_format, "{}: '__metadata__' entry '{}' is not a string", label, meta_key);
                header.metadata[meta_key] = meta_value.get<std::string>();
            }
            continue;
        }
        header.tensors.push_back(parse_tensor_entry(key, value, label));
    }

    // The data section must be covered exactly: tensors in offset order, each starting where the
    // previous one ended, the last ending at the end of the data.
    std::sort(header.tensors.begin(), header.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    uint64_t expected_begin = 0;
    const TensorInfo* previous = nullptr;
    for (const TensorInfo& tensor : header.tensors) {
        if (tensor.begin < expected_begin)
            fail(Status::model_format, "{}: tensors '{}' and '{}' overlap (bytes {}..{} and {}..{})", label,
                 previous->name, tensor.name, previous->begin, previous->end, tensor.begin, tensor.end);
        if (tensor.begin > expected_begin)
            fail(Status::model_format, "{}: gap of {} bytes before tensor '{}' (data offset {}, expected {})", label,
                 tensor.begin - expected_begin, tensor.name, tensor.begin, expected_begin);
        expected_begin = tensor.end;
        previous = &tensor;
    }
    if (expected_begin != data_size)
        fail(Status::model_format, "{}: tensors cover {} bytes of data but the file holds {} bytes after the header{}",
             label, expected_begin, data_size, expected_begin > data_size ? " (truncated file?)" : "");
    return header;
}

SafetensorsHeader parse_safetensors_file(const uint8_t* bytes, size_t size, std::string_view label) {
    if (size < 8)
        fail(Status::model_format, "{}: file is {} bytes, shorter than the 8-byte header length", label, size);
    const uint64_t header_length = read_u64_le(bytes);
    if (header_length > safetensors_max_header_bytes)
        fail(Status::model_format, "{}: header length {} exceeds the limit of {} bytes", label, header_length,
             safetensors_max_header_bytes);
    if (header_length > size - 8)
        fail(Status::model_format, "{}: header length {} runs past the end of the file ({} bytes)", label,
             header_length, size);
    const std::string_view header_json(reinterpret_cast<const char*>(bytes + 8), header_length);
    SafetensorsHeader header = parse_safetensors_header(header_json, size - 8 - header_length, label);
    header.data_offset = 8 + header_length;
    return header;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path)
    : path_(path), file_(path), header_(parse_safetensors_file(file_.data(), file_.size(), path.filename().string())) {}

}  // namespace unmask

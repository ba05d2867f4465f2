#include "format/gguf.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "core/checked_math.hpp"
#include "core/error.hpp"
#include "core/utf8.hpp"

namespace unmask {
namespace {

constexpr uint32_t max_dims = 4;             // GGML_MAX_DIMS
constexpr uint64_t max_name_bytes = 65535;   // keys and tensor names (the specification's key limit)
constexpr uint32_t default_alignment = 32;   // GGUF_DEFAULT_ALIGNMENT
constexpr uint64_t max_alignment = 1 << 20;  // far above any writer's; keeps the padding bounded

// The block layouts of ggml's types (ggml's type traits: elements per block, bytes per block).
// Types whose layout this reader does not know (the IQ families, ternary and MXFP4) are unknown:
// a file using them is refused by id, which is clearer than misreading it.
constexpr std::array<GgmlType, 20> ggml_types{{
    {0, "F32", 1, 4},      {1, "F16", 1, 2},      {2, "Q4_0", 32, 18},   {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},   {7, "Q5_1", 32, 24},   {8, "Q8_0", 32, 34},   {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84}, {11, "Q3_K", 256, 110}, {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210}, {15, "Q8_K", 256, 292}, {24, "I8", 1, 1},     {25, "I16", 1, 2},
    {26, "I32", 1, 4},     {27, "I64", 1, 8},     {28, "F64", 1, 8},     {30, "BF16", 1, 2},
}};

// Bytes of a scalar value type; 0 for strings and arrays.
uint64_t scalar_bytes(GgufType type) noexcept {
    switch (type) {
        case GgufType::uint8: case GgufType::int8: case GgufType::boolean: return 1;
        case GgufType::uint16: case GgufType::int16: return 2;
        case GgufType::uint32: case GgufType::int32: case GgufType::float32: return 4;
        case GgufType::uint64: case GgufType::int64: case GgufType::float64: return 8;
        case GgufType::string: case GgufType::array: return 0;
    }
    return 0;
}

bool is_integer(GgufType type) noexcept {
    switch (type) {
        case GgufType::uint8: case GgufType::int8: case GgufType::uint16: case GgufType::int16:
        case GgufType::uint32: case GgufType::int32: case GgufType::uint64: case GgufType::int64: return true;
        default: return false;
    }
}

bool is_float(GgufType type) noexcept { return type == GgufType::float32 || type == GgufType::float64; }

template <typename T>
T load(const uint8_t* p) noexcept {  // little-endian, as every GGUF this reader accepts
    T value;
    std::memcpy(&value, p, sizeof value);
    return value;
}

// Reads the file front to back; every read is checked against the bytes left.
class Reader {
public:
    Reader(const uint8_t* bytes, size_t size, std::string_view label) : bytes_(bytes), size_(size), label_(label) {}

    uint64_t position() const noexcept { return position_; }
    uint64_t left() const noexcept { return size_ - position_; }

    const uint8_t* take(uint64_t count, std::string_view what) {
        if (count > left())
            fail(Status::model_format, "{}: {} needs {} bytes at offset {} but the file has {} left (truncated file?)",
                 label_, what, count, position_, left());
        const uint8_t* at = bytes_ + position_;
        position_ += count;
        return at;
    }
    uint32_t u32(std::string_view what) { return load<uint32_t>(take(4, what)); }
    uint64_t u64(std::string_view what) { return load<uint64_t>(take(8, what)); }

    // A GGUF string: a uint64 length, then that many bytes of UTF-8.
    std::string_view string(std::string_view what, uint64_t max_bytes = std::numeric_limits<uint64_t>::max()) {
        const uint64_t length = u64(what);
        if (length > max_bytes)
            fail(Status::model_format, "{}: {} is {} bytes long, more than the limit of {}", label_, what, length, max_bytes);
        const std::string_view text(reinterpret_cast<const char*>(take(length, what)), length);
        if (auto bad = find_invalid_utf8(text))
            fail(Status::model_format, "{}: {} is not valid UTF-8 (byte {})", label_, what, *bad);
        return text;
    }

    GgufType value_type(std::string_view what) {
        const uint32_t id = u32(what);
        if (id > static_cast<uint32_t>(GgufType::float64))
            fail(Status::model_format, "{}: {} has unknown value type {}", label_, what, id);
        return static_cast<GgufType>(id);
    }

    // Skips over `count` values of a scalar or string type, checking each.
    void values(GgufType type, uint64_t count, std::string_view what) {
        if (type == GgufType::string) {
            for (uint64_t i = 0; i < count; ++i) string(what);  // each takes at least 8 bytes: bounded
            return;
        }
        uint64_t bytes = 0;
        if (!checked_multiply(count, scalar_bytes(type), bytes))
            fail(Status::model_format, "{}: {} has {} elements, whose size overflows", label_, what, count);
        const uint8_t* data = take(bytes, what);
        if (type == GgufType::boolean)
            for (uint64_t i = 0; i < bytes; ++i)
                if (data[i] > 1) fail(Status::model_format, "{}: {} has a bool of value {} (must be 0 or 1)", label_, what, data[i]);
    }

private:
    const uint8_t* bytes_;
    uint64_t size_;
    uint64_t position_ = 0;
    std::string_view label_;
};

GgufMetadata read_metadata(Reader& reader, uint64_t index, std::string_view label) {
    GgufMetadata entry;
    entry.key = reader.string(fmt::format("the key of metadata pair {}", index), max_name_bytes);
    if (entry.key.empty()) fail(Status::model_format, "{}: metadata pair {} has an empty key", label, index);
    const std::string what = fmt::format("metadata '{}'", entry.key);
    entry.type = reader.value_type(what);
    if (entry.type == GgufType::array) {
        entry.element_type = reader.value_type(what + "'s element type");
        if (entry.element_type == GgufType::array)
            fail(Status::model_format, "{}: {} is an array of arrays, which no model uses and this reader refuses",
                 label, what);
        entry.count = reader.u64(what + "'s element count");
        entry.value = reader.take(0, what);
        reader.values(entry.element_type, entry.count, what);
    } else {
        entry.value = reader.take(0, what);
        reader.values(entry.type, 1, what);
    }
    return entry;
}

GgufTensor read_tensor(Reader& reader, uint64_t index, uint64_t alignment, std::string_view label) {
    GgufTensor tensor;
    tensor.name = reader.string(fmt::format("the name of tensor {}", index), max_name_bytes);
    if (tensor.name.empty()) fail(Status::model_format, "{}: tensor {} has an empty name", label, index);
    const std::string what = fmt::format("tensor '{}'", tensor.name);
    const uint32_t dims = reader.u32(what + "'s dimension count");
    if (dims < 1 || dims > max_dims)
        fail(Status::model_format, "{}: {} has {} dimensions (1 to {} allowed)", label, what, dims, max_dims);
    uint64_t elements = 1;
    for (uint32_t d = 0; d < dims; ++d) {
        const uint64_t extent = reader.u64(what + "'s dimensions");
        if (extent > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
            !checked_multiply(elements, extent, elements))
            fail(Status::model_format, "{}: {} has dimensions whose element count overflows", label, what);
        tensor.dims.push_back(static_cast<int64_t>(extent));
    }
    tensor.shape.assign(tensor.dims.rbegin(), tensor.dims.rend());
    tensor.elements = elements;
    const uint32_t type_id = reader.u32(what + "'s type");
    const auto type = ggml_type(type_id);
    if (!type) fail(Status::model_format, "{}: {} has ggml type {}, which this reader does not know", label, what, type_id);
    tensor.type = *type;
    if (static_cast<uint64_t>(tensor.dims[0]) % type->block_elements != 0)
        fail(Status::model_format, "{}: {} has rows of {} elements, not a multiple of {}'s block of {}", label, what,
             tensor.dims[0], type->name, type->block_elements);
    uint64_t bytes = 0;
    if (!checked_multiply(elements / type->block_elements, type->block_bytes, bytes))
        fail(Status::model_format, "{}: {} has a byte size that overflows", label, what);
    tensor.begin = reader.u64(what + "'s offset");
    if (tensor.begin % alignment != 0)
        fail(Status::model_format, "{}: {} starts at data offset {}, not a multiple of the alignment {}", label, what,
             tensor.begin, alignment);
    if (!checked_add(tensor.begin, bytes, tensor.end))
        fail(Status::model_format, "{}: {} has an offset {} whose end overflows", label, what, tensor.begin);
    return tensor;
}

[[noreturn]] void wrong_type(const GgufHeader& header, const GgufMetadata& entry, std::string_view expected) {
    if (entry.type == GgufType::array)
        fail(Status::model_format, "{}: metadata '{}' is an array of {} but must be {}", header.label, entry.key,
             gguf_type_name(entry.element_type), expected);
    fail(Status::model_format, "{}: metadata '{}' is {} but must be {}", header.label, entry.key,
         gguf_type_name(entry.type), expected);
}

int64_t integer_at(const GgufHeader& header, const GgufMetadata& entry, GgufType type, const uint8_t* p) {
    switch (type) {
        case GgufType::uint8: return load<uint8_t>(p);
        case GgufType::int8: return load<int8_t>(p);
        case GgufType::uint16: return load<uint16_t>(p);
        case GgufType::int16: return load<int16_t>(p);
        case GgufType::uint32: return load<uint32_t>(p);
        case GgufType::int32: return load<int32_t>(p);
        case GgufType::int64: return load<int64_t>(p);
        case GgufType::uint64: {
            const uint64_t value = load<uint64_t>(p);
            if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                fail(Status::model_format, "{}: metadata '{}' holds {}, too large for this reader", header.label, entry.key,
                     value);
            return static_cast<int64_t>(value);
        }
        default: wrong_type(header, entry, "an integer");
    }
}

double number_at(const GgufHeader& header, const GgufMetadata& entry, GgufType type, const uint8_t* p) {
    if (type == GgufType::float32) return load<float>(p);
    if (type == GgufType::float64) return load<double>(p);
    if (is_integer(type)) return static_cast<double>(integer_at(header, entry, type, p));
    wrong_type(header, entry, "a number");
}

// The entry of `key`, or nullptr when absent; a present entry that `accepts` refuses is
// Error(MODEL_FORMAT) naming what was `expected`.
template <typename Accepts>
const GgufMetadata* typed_entry(const GgufHeader& header, std::string_view key, Accepts accepts,
                                std::string_view expected) {
    const GgufMetadata* entry = header.find(key);
    if (entry != nullptr && !accepts(*entry)) wrong_type(header, *entry, expected);
    return entry;
}

bool is_number(GgufType type) noexcept { return is_integer(type) || is_float(type); }

}  // namespace

std::string_view gguf_type_name(GgufType type) noexcept {
    static constexpr std::array<std::string_view, 13> names{"uint8", "int8",   "uint16", "int16", "uint32",
                                                            "int32", "float32", "bool",  "string", "array",
                                                            "uint64", "int64", "float64"};
    const auto index = static_cast<size_t>(type);
    return index < names.size() ? names[index] : "unknown";
}

std::optional<GgmlType> ggml_type(uint32_t id) noexcept {
    for (const GgmlType& type : ggml_types)
        if (type.id == id) return type;
    return std::nullopt;
}

bool is_gguf(const uint8_t* bytes, size_t size) noexcept { return size >= 4 && std::memcmp(bytes, "GGUF", 4) == 0; }

const GgufMetadata* GgufHeader::find(std::string_view key) const noexcept {
    for (const GgufMetadata& entry : metadata)
        if (entry.key == key) return &entry;
    return nullptr;
}

const GgufTensor* GgufHeader::find_tensor(std::string_view name) const noexcept {
    for (const GgufTensor& tensor : tensors)
        if (tensor.name == name) return &tensor;
    return nullptr;
}

std::optional<int64_t> GgufHeader::integer(std::string_view key) const {
    const GgufMetadata* entry = typed_entry(*this, key, [](const GgufMetadata& e) { return is_integer(e.type); }, "an integer");
    if (entry == nullptr) return std::nullopt;
    return integer_at(*this, *entry, entry->type, entry->value);
}

std::optional<double> GgufHeader::number(std::string_view key) const {
    const GgufMetadata* entry = typed_entry(*this, key, [](const GgufMetadata& e) { return is_number(e.type); }, "a number");
    if (entry == nullptr) return std::nullopt;
    return number_at(*this, *entry, entry->type, entry->value);
}

std::optional<bool> GgufHeader::boolean(std::string_view key) const {
    const GgufMetadata* entry =
        typed_entry(*this, key, [](const GgufMetadata& e) { return e.type == GgufType::boolean; }, "a bool");
    if (entry == nullptr) return std::nullopt;
    return *entry->value != 0;
}

std::optional<std::string_view> GgufHeader::string(std::string_view key) const {
    const GgufMetadata* entry =
        typed_entry(*this, key, [](const GgufMetadata& e) { return e.type == GgufType::string; }, "a string");
    if (entry == nullptr) return std::nullopt;
    return std::string_view(reinterpret_cast<const char*>(entry->value + 8), load<uint64_t>(entry->value));
}

std::optional<std::vector<std::string_view>> GgufHeader::strings(std::string_view key) const {
    const GgufMetadata* entry = typed_entry(
        *this, key, [](const GgufMetadata& e) { return e.type == GgufType::array && e.element_type == GgufType::string; },
        "an array of strings");
    if (entry == nullptr) return std::nullopt;
    std::vector<std::string_view> out;
    out.reserve(entry->count);  // validated: the file holds at least 8 bytes per element
    const uint8_t* p = entry->value;
    for (uint64_t i = 0; i < entry->count; ++i) {
        const uint64_t length = load<uint64_t>(p);
        out.emplace_back(reinterpret_cast<const char*>(p + 8), length);
        p += 8 + length;
    }
    return out;
}

std::optional<std::vector<int64_t>> GgufHeader::integers(std::string_view key) const {
    const GgufMetadata* entry = typed_entry(
        *this, key, [](const GgufMetadata& e) { return e.type == GgufType::array && is_integer(e.element_type); },
        "an array of integers");
    if (entry == nullptr) return std::nullopt;
    std::vector<int64_t> out(entry->count);
    const uint64_t step = scalar_bytes(entry->element_type);
    for (uint64_t i = 0; i < entry->count; ++i) out[i] = integer_at(*this, *entry, entry->element_type, entry->value + i * step);
    return out;
}

std::optional<std::vector<double>> GgufHeader::numbers(std::string_view key) const {
    const GgufMetadata* entry = typed_entry(
        *this, key, [](const GgufMetadata& e) { return e.type == GgufType::array && is_number(e.element_type); },
        "an array of numbers");
    if (entry == nullptr) return std::nullopt;
    std::vector<double> out(entry->count);
    const uint64_t step = scalar_bytes(entry->element_type);
    for (uint64_t i = 0; i < entry->count; ++i) out[i] = number_at(*this, *entry, entry->element_type, entry->value + i * step);
    return out;
}

GgufHeader parse_gguf_file(const uint8_t* bytes, size_t size, std::string_view label) {
    GgufHeader header;
    header.label = std::string(label);
    Reader reader(bytes, size, label);
    if (!is_gguf(bytes, size)) fail(Status::model_format, "{}: not a GGUF file (no 'GGUF' magic at its start)", label);
    reader.take(4, "the magic");
    header.version = reader.u32("the version");
    if (header.version == 1)
        fail(Status::model_format, "{}: GGUF version 1 (32-bit counts, before August 2023) is not supported; "
             "convert the model again with a current llama.cpp", label);
    if (header.version != 2 && header.version != 3) {
        const uint32_t swapped = __builtin_bswap32(header.version);
        fail(Status::model_format, "{}: GGUF version {} is not supported (2 and 3 are){}", label, header.version,
             swapped == 2 || swapped == 3 ? " (a big-endian file?)" : "");
    }
    const uint64_t tensor_count = reader.u64("the tensor count");
    const uint64_t metadata_count = reader.u64("the metadata count");
    // Each metadata pair takes at least 13 bytes (key length, a key byte, type, a value byte) and
    // each tensor 33 (name length, a name byte, dimension count, one dimension, type, offset).
    if (metadata_count > reader.left() / 13)
        fail(Status::model_format, "{}: the header claims {} metadata pairs but only {} bytes follow", label,
             metadata_count, reader.left());
    if (tensor_count > reader.left() / 33)
        fail(Status::model_format, "{}: the header claims {} tensors but only {} bytes follow", label, tensor_count,
             reader.left());

    std::unordered_set<std::string_view> keys;
    header.metadata.reserve(metadata_count);
    for (uint64_t i = 0; i < metadata_count; ++i) {
        header.metadata.push_back(read_metadata(reader, i, label));
        if (!keys.insert(header.metadata.back().key).second)
            fail(Status::model_format, "{}: metadata '{}' appears twice", label, header.metadata.back().key);
    }
    if (const GgufMetadata* alignment = typed_entry(
            header, "general.alignment", [](const GgufMetadata& e) { return e.type == GgufType::uint32; }, "uint32")) {
        header.alignment = load<uint32_t>(alignment->value);
        if (header.alignment == 0 || (header.alignment & (header.alignment - 1)) != 0 || header.alignment > max_alignment)
            fail(Status::model_format, "{}: general.alignment {} is not a power of two up to {}", label, header.alignment,
                 max_alignment);
    } else {
        header.alignment = default_alignment;
    }

    std::unordered_set<std::string_view> names;
    header.tensors.reserve(tensor_count);
    for (uint64_t i = 0; i < tensor_count; ++i) {
        header.tensors.push_back(read_tensor(reader, i, header.alignment, label));
        if (!names.insert(header.tensors.back().name).second)
            fail(Status::model_format, "{}: tensor '{}' appears twice", label, header.tensors.back().name);
    }

    // The data section starts at the next multiple of the alignment; every tensor lies inside it
    // and no two overlap (padding between them is allowed).
    const uint64_t padding = (header.alignment - reader.position() % header.alignment) % header.alignment;
    header.data_offset = reader.position() + padding;
    if (header.data_offset > size && !header.tensors.empty())
        fail(Status::model_format, "{}: the data section would start at byte {}, past the end of the file ({} bytes; "
             "truncated file?)", label, header.data_offset, size);
    const uint64_t data_size = header.data_offset <= size ? size - header.data_offset : 0;
    std::vector<const GgufTensor*> by_offset;
    by_offset.reserve(header.tensors.size());
    for (const GgufTensor& tensor : header.tensors) {
        if (tensor.end > data_size)
            fail(Status::model_format, "{}: tensor '{}' needs data bytes {}..{} but the data section holds {} (truncated file?)",
                 label, tensor.name, tensor.begin, tensor.end, data_size);
        by_offset.push_back(&tensor);
    }
    std::sort(by_offset.begin(), by_offset.end(), [](const GgufTensor* a, const GgufTensor* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    for (size_t i = 1; i < by_offset.size(); ++i)
        if (by_offset[i]->begin < by_offset[i - 1]->end)
            fail(Status::model_format, "{}: tensors '{}' and '{}' overlap (data bytes {}..{} and {}..{})", label,
                 by_offset[i - 1]->name, by_offset[i]->name, by_offset[i - 1]->begin, by_offset[i - 1]->end,
                 by_offset[i]->begin, by_offset[i]->end);
    return header;
}

GgufFile::GgufFile(const std::filesystem::path& path)
    : path_(path), file_(path), header_(parse_gguf_file(file_.data(), file_.size(), path.filename().string())) {}

}  // namespace unmask

// load_model: config.json (or a GGUF file's metadata) -> ModelSpec, the files' tensors by binding
// name, checksums, binding of every expected tensor (all problems reported at once), then the
// weights at the chosen precision.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <system_error>

#include "core/error.hpp"
#include "core/float_convert.hpp"
#include "core/mapped_file.hpp"
#include "core/utf8.hpp"
#include "format/checksum_manifest.hpp"
#include "format/config_reader.hpp"
#include "format/strict_json.hpp"
#include "cpu/dequantize.hpp"
#include "cpu/quantize.hpp"
#include "backend/backend.hpp"
#include "model/gguf_model.hpp"
#include "model/model.hpp"
#include "model/model_identity.hpp"

namespace unmask {
namespace {

constexpr size_t max_listed_problems = 20;

void require_model_directory(const std::filesystem::path& directory) {
    std::error_code ec;
    if (!std::filesystem::exists(directory, ec))
        fail(Status::io, "model directory '{}' does not exist", directory.string());
    if (!std::filesystem::is_directory(directory, ec))
        fail(Status::io, "model path '{}' is not a directory", directory.string());
    if (!std::filesystem::exists(directory / "config.json", ec))
        fail(Status::io, "model directory '{}' has no config.json", directory.string());
}

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

template <DType D>
float load_element(const uint8_t* p) {
    if constexpr (D == DType::f32) {
        float f;
        std::memcpy(&f, p, 4);
        return f;
    } else {
        uint16_t half;
        std::memcpy(&half, p, 2);
        return D == DType::bf16 ? bf16_to_float(half) : fp16_to_float(half);
    }
}

template <DType D>
void store_element(uint8_t* p, float value) {
    if constexpr (D == DType::f32) {
        std::memcpy(p, &value, 4);
    } else {
        const uint16_t half = D == DType::bf16 ? float_to_bf16(value) : float_to_fp16(value);
        std::memcpy(p, &half, 2);
    }
}

// One loop per (from, to) pair, so the element conversion inlines.
template <DType From, DType To>
void convert_loop(const uint8_t* source, uint8_t* destination, uint64_t n) {
    constexpr size_t in = From == DType::f32 ? 4 : 2, out = To == DType::f32 ? 4 : 2;
    for (uint64_t i = 0; i < n; ++i) store_element<To>(destination + i * out, load_element<From>(source + i * in));
}

template <DType From>
void convert_from(const uint8_t* source, uint8_t* destination, DType to, uint64_t n) {
    switch (to) {
        case DType::f32: return convert_loop<From, DType::f32>(source, destination, n);
        case DType::bf16: return convert_loop<From, DType::bf16>(source, destination, n);
        default: return convert_loop<From, DType::f16>(source, destination, n);
    }
}

void convert_elements(const uint8_t* source, DType from, uint8_t* destination, DType to, uint64_t n) {
    if (from == to) {
        std::memcpy(destination, source, n * dtype_size(from));
        return;
    }
    switch (from) {
        case DType::f32: return convert_from<DType::f32>(source, destination, to, n);
        case DType::bf16: return convert_from<DType::bf16>(source, destination, to, n);
        default: return convert_from<DType::f16>(source, destination, to, n);
    }
}

std::map<std::string, std::string> read_manifest(const std::filesystem::path& directory, ChecksumMode mode) {
    if (mode == ChecksumMode::skip) return {};
    std::error_code ec;
    const auto path = directory / checksum_manifest_name;
    if (!std::filesystem::exists(path, ec)) {
        if (mode == ChecksumMode::require)
            fail(Status::model_format, "checksum verification was requested but '{}' has no {}", directory.string(),
                 checksum_manifest_name);
        return {};
    }
    const MappedFile file(path);
    auto manifest = parse_checksum_manifest(
        std::string_view(reinterpret_cast<const char*>(file.data()), file.size()), checksum_manifest_name);
    if (manifest.empty()) fail(Status::model_format, "{} lists no files", checksum_manifest_name);
    return manifest;
}

}  // namespace

void Model::FreeDeleter::operator()(void* p) const noexcept { std::free(p); }

const Weight& Model::weight(const std::string& name) const {
    const auto it = index_.find(name);
    if (it == index_.end()) fail(Status::internal, "weight '{}' was not bound", name);
    return weights_[it->second];
}

namespace {

// A path names a GGUF file when it is a file; a model directory otherwise.
bool is_gguf_model(const std::filesystem::path& path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec);
}

}  // namespace

ModelSpec read_model_config(const std::filesystem::path& path) {
    if (is_gguf_model(path)) return read_gguf_model_spec(GgufFile(path).header());
    require_model_directory(path);
    const MappedFile file(path / "config.json");
    const std::string_view text(reinterpret_cast<const char*>(file.data()), file.size());
    if (auto bad = find_invalid_utf8(text))
        fail(Status::model_format, "config.json: not valid UTF-8 (byte {})", *bad);
    const nlohmann::json root = parse_json_rejecting_duplicates(text, "config.json");
    return read_model_spec(ConfigReader(root, "config.json"));
}

bool quantizable(Role role) noexcept {
    switch (role) {
        case Role::attention_norm: case Role::mlp_norm: case Role::final_norm: case Role::q_norm: case Role::k_norm:
        case Role::q_bias: case Role::k_bias: case Role::v_bias: case Role::router: case Role::router_bias:
            return false;
        default: return true;
    }
}

namespace {

// The dense matrices of a layer: those a backend may multiply in fp8 with quantized activations
// (Weight::fp8_w8a8). Not the embedding and LM head, nor routed experts (grouped matmuls).
bool takes_w8a8(Role role) noexcept {
    switch (role) {
        case Role::q_proj: case Role::k_proj: case Role::v_proj: case Role::o_proj: case Role::mlp_gate:
        case Role::mlp_up: case Role::mlp_down: case Role::shared_gate: case Role::shared_up: case Role::shared_down:
            return true;
        default: return false;
    }
}

}  // namespace

DType loaded_dtype(Precision precision, DType file_dtype, Role role, const std::vector<int64_t>& shape,
                   bool quantize_embeddings) noexcept {
    const auto whole_blocks = [&](DType blocks) {
        return shape.size() == 2 && shape[1] % int64_t(dtype_block_elements(blocks)) == 0;
    };
    // An fp8 checkpoint's weight needs its scale beside every value: F8_E4M3_B128 blocks where
    // its rows are whole blocks, else decoded.
    const DType fp8_file_kept = quantizable(role) && whole_blocks(DType::f8_e4m3_b128) ? DType::f8_e4m3_b128 : DType::f32;
    switch (precision) {
        case Precision::fp32: return DType::f32;
        case Precision::bf16: return DType::bf16;
        case Precision::fp16: return DType::f16;
        case Precision::int8:
        case Precision::q4:
        case Precision::fp8: {
            const DType blocks = precision == Precision::int8 ? DType::q8_0
                                 : precision == Precision::q4 ? DType::q4_0
                                                              : DType::f8_e4m3_b128;
            const bool embedding = role == Role::embedding || role == Role::lm_head;
            const bool kept = (embedding && !quantize_embeddings) || !quantizable(role);
            if (file_dtype == DType::f8_e4m3) return fp8_file_kept;
            return is_quantized_dtype(file_dtype) || kept || !whole_blocks(blocks) ? file_dtype : blocks;
        }
        case Precision::automatic: break;
    }
    return file_dtype == DType::f8_e4m3 ? fp8_file_kept : file_dtype;
}

namespace {

// The scales of an fp8 checkpoint's weight (a scale tensor of F32, BF16 or F16): one for the whole
// tensor (block_rows 0), or one per block of block_rows x block_cols, grid_cols blocks to a row.
struct Fp8Scales {
    const uint8_t* bytes = nullptr;
    DType dtype = DType::f32;
    int64_t block_rows = 0, block_cols = 0, grid_cols = 1;

    // The scale of the weight at (row, col) of the file.
    float at(int64_t row, int64_t col) const {
        const int64_t index = block_rows == 0 ? 0 : row / block_rows * grid_cols + col / block_cols;
        float value = 0.0f;
        convert_elements(bytes + uint64_t(index) * dtype_size(dtype), dtype, reinterpret_cast<uint8_t*>(&value), DType::f32, 1);
        return value;
    }
};

// A tensor as a weight file stores it, in either format.
struct StoredTensor {
    std::string file_name;  // its name in the file
    std::vector<int64_t> shape;
    std::optional<DType> dtype;  // nullopt: a type the forward pass cannot use
    std::string type_name;       // "BF16", "Q4_K"
    const uint8_t* bytes = nullptr;
    uint64_t elements = 0;
    uint64_t size = 0;
    int64_t interleaved_heads = 0;  // see gguf_interleaved_heads
    bool quantized = false;         // a GGUF block type (read or not), or F8_E4M3
    Fp8Scales fp8 = {};             // F8_E4M3: its scales
    std::string problem = {};       // why a tensor without a usable dtype cannot be used, when known
};

// What a model's files hold: each expected tensor found (by its binding name), the tensors
// nobody asked for, and the checksum manifest's entries for the files read.
struct ModelFiles {
    std::map<std::string, StoredTensor> tensors = {};
    std::vector<std::string> unused = {};
    std::map<std::string, std::string> manifest = {};
    std::filesystem::path directory = {};  // where the manifest's names are
};

uint64_t ceil_div(int64_t a, int64_t b) { return uint64_t((a + b - 1) / b); }

// The scale tensor of fp8 weight `stored` (`name`), or a problem naming what is wrong with it.
std::optional<std::string> bind_fp8_scales(const ModelSpec& spec, const TensorCatalog& catalog, const std::string& name,
                                           StoredTensor& stored, std::set<std::string>& consumed) {
    if (!spec.fp8_weights)
        return fmt::format("tensor '{}' has dtype F8_E4M3 but config.json has no quantization_config with quant_method "
                           "fp8 to say how it is scaled", name);
    if (stored.shape.size() != 2) return fmt::format("tensor '{}' is F8_E4M3 but not a matrix", name);
    const bool blocks = spec.fp8_block_rows > 0;
    const std::string scale_name = name + (blocks ? "_scale_inv" : "_scale");
    const CatalogEntry* entry = catalog.find(scale_name);
    if (entry == nullptr) return fmt::format("missing tensor '{}' (the scales of F8_E4M3 '{}')", scale_name, name);
    consumed.insert(scale_name);
    const TensorInfo& info = *entry->info;
    const uint64_t want = blocks ? ceil_div(stored.shape[0], spec.fp8_block_rows) * ceil_div(stored.shape[1], spec.fp8_block_cols) : 1;
    if (!is_float_weight_dtype(info.dtype) || info.elements != want)
        return fmt::format("tensor '{}' has dtype {} and shape {}; the scales of '{}' {} must be {} F32, BF16 or F16 value(s)",
                           scale_name, dtype_name(info.dtype), shape_text(info.shape), name, shape_text(stored.shape), want);
    stored.fp8 = {.bytes = entry->file->tensor_bytes(info), .dtype = info.dtype, .block_rows = spec.fp8_block_rows,
                  .block_cols = spec.fp8_block_cols,
                  .grid_cols = blocks ? int64_t(ceil_div(stored.shape[1], spec.fp8_block_cols)) : 1};
    return std::nullopt;
}

ModelFiles safetensors_files(const std::filesystem::path& directory, const TensorCatalog& catalog, const ModelSpec& spec,
                             const std::vector<ExpectedTensor>& expected, ChecksumMode checksums) {
    ModelFiles files{.manifest = read_manifest(directory, checksums), .directory = directory};
    for (const auto& file : catalog.files()) {
        const std::string name = file->path().filename().string();
        if (!files.manifest.empty() && files.manifest.count(name) == 0)
            fail(Status::model_format, "{} does not list the weight file '{}'", checksum_manifest_name, name);
    }
    std::set<std::string> expected_names, consumed;  // consumed: fp8 scales, and activation scales (not used)
    for (const ExpectedTensor& want : expected) expected_names.insert(want.name);
    for (const auto& [name, entry] : catalog.tensors()) {
        if (expected_names.count(name) == 0) continue;
        const TensorInfo& info = *entry.info;
        StoredTensor& stored = files.tensors[name] = {
            .file_name = name, .shape = info.shape,
            .dtype = is_float_weight_dtype(info.dtype) ? std::optional(info.dtype) : std::nullopt,
            .type_name = std::string(dtype_name(info.dtype)), .bytes = entry.file->tensor_bytes(info),
            .elements = info.elements, .size = info.end - info.begin};
        if (info.dtype != DType::f8_e4m3) continue;
        if (auto problem = bind_fp8_scales(spec, catalog, name, stored, consumed)) stored.problem = std::move(*problem);
        else stored.dtype = DType::f8_e4m3;
    }
    for (const auto& [name, entry] : catalog.tensors()) {
        const bool activation_scale = spec.fp8_weights && name.size() > 12 && name.ends_with(".input_scale");
        if (expected_names.count(name) == 0 && consumed.count(name) == 0 && !activation_scale) files.unused.push_back(name);
    }
    return files;
}

// The GGUF types the forward pass reads (by llama.cpp's spelling, which dtype_name shares).
std::optional<DType> gguf_dtype(const GgmlType& type) {
    for (DType d : {DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0, DType::q4_k, DType::q5_k, DType::q6_k})
        if (dtype_name(d) == type.name) return d;
    return std::nullopt;
}

ModelFiles gguf_files(const std::filesystem::path& path, const GgufFile& gguf, const ModelSpec& spec,
                      const std::vector<ExpectedTensor>& expected, ChecksumMode checksums) {
    // A SHA256SUMS beside the file is honoured for this file's entry only.
    ModelFiles files{.directory = path.parent_path()};
    const std::string file_name = path.filename().string();
    const auto manifest = read_manifest(files.directory, checksums);
    if (!manifest.empty()) {
        const auto it = manifest.find(file_name);
        if (it == manifest.end())
            fail(Status::model_format, "{} does not list the weight file '{}'", checksum_manifest_name, file_name);
        files.manifest.insert(*it);
    }
    const GgufHeader& header = gguf.header();
    std::set<std::string_view> bound;
    for (const ExpectedTensor& want : expected) {
        const std::string name = gguf_tensor_name(want);
        const GgufTensor* tensor = header.find_tensor(name);
        if (tensor == nullptr) continue;
        bound.insert(tensor->name);
        StoredTensor& stored = files.tensors[want.name] = {
            .file_name = name, .shape = tensor->shape, .dtype = gguf_dtype(tensor->type),
            .type_name = std::string(tensor->type.name), .bytes = gguf.tensor_bytes(*tensor), .elements = tensor->elements,
            .size = tensor->end - tensor->begin, .interleaved_heads = gguf_interleaved_heads(header, spec, want.role),
            .quantized = tensor->type.block_elements > 1};
        // A routed expert's matrix: its slice of the layer's stacked [experts, rows, columns] (whole
        // rows, so whole blocks); a stack of another shape is reported whole.
        if (want.expert >= 0 && tensor->shape.size() == 3 && tensor->shape[0] == spec.experts) {
            const uint64_t slice = stored.size / uint64_t(spec.experts);
            stored.shape.erase(stored.shape.begin());
            stored.elements /= uint64_t(spec.experts);
            stored.bytes += slice * uint64_t(want.expert);
            stored.size = slice;
        }
    }
    for (const GgufTensor& tensor : header.tensors)
        if (bound.count(tensor.name) == 0) files.unused.emplace_back(tensor.name);
    return files;
}

// Row `row` of an fp8 weight as F8_E4M3_B128 blocks: its values as stored, each run of 128 after
// the scale it is multiplied by (a run never straddles two scale blocks: their columns are a
// multiple of 128).
void fp8_row_blocks(const Fp8Scales& scales, int64_t row, const uint8_t* values, uint64_t columns, uint8_t* out) {
    for (uint64_t c = 0; c < columns; c += 128, out += 132) {
        const float scale = scales.at(row, int64_t(c));
        std::memcpy(out, &scale, 4);
        std::memcpy(out + 4, values + c, 128);
    }
}

// Row `row` of an fp8 weight decoded: each value times its scale, one fp32 product (as the blocks decode).
void fp8_row_values(const Fp8Scales& scales, int64_t row, const uint8_t* values, uint64_t columns, float* out) {
    for (uint64_t c = 0; c < columns; ++c) out[c] = fp8_e4m3_to_float(values[c]) * scales.at(row, int64_t(c));
}

// Copies `stored` into `destination` as `dtype` row by row, in Hugging Face's row order
// (interleaved heads restored): as is, converted between float types, or through fp32 when blocks
// are decoded (a quantized file at a float precision) or made (int8 and q4 at load).
void copy_rows(const StoredTensor& stored, uint8_t* destination, DType dtype) {
    const DType from = *stored.dtype;
    // A vector is one row, unless its elements are interleaved by head (a q or k bias): then each is a row.
    const bool by_row = stored.shape.size() > 1 || stored.interleaved_heads > 0;
    const uint64_t rows = by_row ? uint64_t(stored.shape.at(0)) : 1, columns = stored.elements / rows;
    const uint64_t in = dtype_bytes(from, columns), out = dtype_bytes(dtype, columns);
    const uint64_t head_rows = stored.interleaved_heads > 0 ? rows / uint64_t(stored.interleaved_heads) : rows;
    const uint64_t half = head_rows / 2;
    const bool through_fp32 = from != dtype && (is_quantized_dtype(from) || is_quantized_dtype(dtype) || from == DType::f8_e4m3);
    std::vector<float> values(through_fp32 ? columns : 0);
    for (uint64_t row = 0; row < rows; ++row) {
        // Original row j * half + i of a head sits at 2i + j in the file.
        const uint64_t head = row / head_rows, within = row % head_rows;
        const uint64_t source = stored.interleaved_heads > 0 ? head * head_rows + 2 * (within % half) + within / half : row;
        const uint8_t* bytes = stored.bytes + source * in;
        uint8_t* target = destination + row * out;
        if (from == dtype) {
            std::memcpy(target, bytes, in);
        } else if (from == DType::f8_e4m3 && dtype == DType::f8_e4m3_b128) {
            fp8_row_blocks(stored.fp8, int64_t(source), bytes, columns, target);
        } else if (!through_fp32) {
            convert_elements(bytes, from, target, dtype, columns);
        } else {
            auto* fp32 = reinterpret_cast<uint8_t*>(values.data());
            if (is_quantized_dtype(from)) kernels::cpu::dequantize_row(element_type(from), bytes, int64_t(columns), values.data());
            else if (from == DType::f8_e4m3) fp8_row_values(stored.fp8, int64_t(source), bytes, columns, values.data());
            else convert_elements(bytes, from, fp32, DType::f32, columns);
            if (is_quantized_dtype(dtype)) kernels::cpu::quantize_row(element_type(dtype), values.data(), int64_t(columns), target);
            else convert_elements(fp32, DType::f32, target, dtype, columns);
        }
    }
}

}  // namespace

std::unique_ptr<Model> load_model(const std::filesystem::path& path, const LoadOptions& options) {
    auto model = std::unique_ptr<Model>(new Model());
    const bool gguf = is_gguf_model(path);
    if (gguf) {
        model->gguf_ = std::make_unique<GgufFile>(path);
        model->spec_ = read_gguf_model_spec(model->gguf_->header());
    } else {
        model->spec_ = read_model_config(path);
        model->catalog_ = TensorCatalog::open(path);
    }
    const ModelSpec& spec = model->spec_;
    const std::vector<ExpectedTensor> expected = expected_tensors(spec);
    const ModelFiles files = gguf ? gguf_files(path, *model->gguf_, spec, expected, options.checksum_mode)
                                  : safetensors_files(path, model->catalog_, spec, expected, options.checksum_mode);

    // Bind every expected tensor; collect every problem before failing.
    std::vector<std::string> problems;
    size_t unsupported_types = 0;  // quantized where this version cannot read it: a valid file all the same
    uint64_t tensor_bytes = 0;
    for (const ExpectedTensor& want : expected) {
        const auto found = files.tensors.find(want.name);
        if (found == files.tensors.end()) {
            problems.push_back(fmt::format("missing tensor '{}' (shape {})", gguf ? gguf_tensor_name(want) : want.name,
                                           shape_text(want.shape)));
            continue;
        }
        const StoredTensor& stored = found->second;
        if (stored.shape != want.shape)
            problems.push_back(fmt::format("tensor '{}' has shape {} but the config implies {}", stored.file_name,
                                           shape_text(stored.shape), shape_text(want.shape)));
        else if (!stored.problem.empty())
            problems.push_back(stored.problem);
        else if (!stored.dtype) {
            unsupported_types += stored.quantized ? 1 : 0;
            problems.push_back(fmt::format("tensor '{}' has dtype {}; weights must be F32, F16 or BF16{}", stored.file_name,
                                           stored.type_name, stored.quantized ? ", or one of the quantized Q8_0, Q4_0, Q4_K, Q5_K, Q6_K" : ""));
        } else if (is_quantized_dtype(*stored.dtype) && !quantizable(want.role)) {
            ++unsupported_types;
            problems.push_back(fmt::format("tensor '{}' has dtype {}; norms, biases and routers must be F32, F16 or BF16",
                                           stored.file_name, stored.type_name));
        } else if (stored.interleaved_heads > 0 && (want.shape[0] % (2 * stored.interleaved_heads) != 0))
            problems.push_back(fmt::format("tensor '{}' has {} rows, which {} heads of even size cannot hold", stored.file_name,
                                           want.shape[0], stored.interleaved_heads));
        tensor_bytes += stored.size;
    }
    if (!problems.empty()) {
        std::string listed = fmt::format("{}", fmt::join(problems.begin(),
                                                         problems.begin() + static_cast<std::ptrdiff_t>(std::min(problems.size(), max_listed_problems)),
                                                         "; "));
        if (problems.size() > max_listed_problems) listed += fmt::format("; and {} more", problems.size() - max_listed_problems);
        fail(unsupported_types == problems.size() ? Status::unsupported : Status::model_format,
             "{} problem(s) binding the weights of '{}' as {}: {}", problems.size(),
             path.string(), spec.architecture_name, listed);
    }
    const std::vector<std::string>& unexpected = files.unused;
    if (!unexpected.empty())
        options.logger.warn("{} tensor(s) in '{}' are not used by {} and are ignored: {}{}", unexpected.size(),
                            path.string(), spec.architecture_name,
                            fmt::join(unexpected.begin(), unexpected.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(unexpected.size(), 5)), ", "),
                            unexpected.size() > 5 ? ", ..." : "");

    uint64_t verify_bytes = 0;
    for (const auto& [name, digest] : files.manifest) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(files.directory / name, ec);
        if (!ec) verify_bytes += size;
    }
    const uint64_t progress_total = verify_bytes + (options.metadata_only ? 0 : tensor_bytes);
    if (!files.manifest.empty()) {
        verify_checksums(files.directory, files.manifest, options.progress, 0, progress_total);
        model->description_.checksums = ChecksumResult::verified;
        options.logger.info("verified {} file(s) against {}", files.manifest.size(), checksum_manifest_name);
    }
    {
        std::vector<IdentifyingFile> identifying;
        std::optional<MappedFile> config;
        if (gguf) {
            identifying.push_back({path.filename().string(), model->gguf_->size(), model->gguf_->header_bytes()});
        } else {
            config.emplace(path / "config.json");
            identifying.push_back({"config.json", config->size(), {config->data(), config->size()}});
            for (const auto& file : model->catalog_.files())
                identifying.push_back({file->path().filename().string(), file->size(), file->header_bytes()});
        }
        model->description_.fingerprint = model_fingerprint(files.manifest, identifying);
    }

    if (options.memory != nullptr && !options.metadata_only) {
        uint64_t weight_bytes = 0;
        for (const ExpectedTensor& want : expected) {
            const StoredTensor& stored = files.tensors.at(want.name);
            weight_bytes += dtype_bytes(
                loaded_dtype(options.precision, *stored.dtype, want.role, want.shape, options.quantize_embeddings),
                stored.elements);
        }
        model->memory_ = options.memory->reserve(weight_bytes, fmt::format("the weights of '{}'", path.string()));
    }

    // Materialise the weights: zero-copy from the map when dtype and alignment allow.
    // A buffer of `bytes` the model owns (64-byte aligned, at least one granule), for `what`.
    auto owned_buffer = [&model](uint64_t bytes, const std::string& what) {
        void* buffer = std::aligned_alloc(64, (std::max<uint64_t>(bytes, 1) + 63) / 64 * 64);
        if (buffer == nullptr) fail(Status::out_of_budget, "cannot allocate {} bytes for '{}'", bytes, what);
        model->buffers_.emplace_back(buffer);
        return buffer;
    };
    uint64_t done = verify_bytes;
    ModelDescription& description = model->description_;
    std::set<DType> loaded_dtypes;
    for (const ExpectedTensor& want : expected) {
        const StoredTensor& stored = files.tensors.at(want.name);
        const DType dtype = loaded_dtype(options.precision, *stored.dtype, want.role, want.shape, options.quantize_embeddings);
        const uint64_t bytes = dtype_bytes(dtype, stored.elements);
        const uint8_t* data = nullptr;
        if (!options.metadata_only) {
            const bool aligned = reinterpret_cast<uintptr_t>(stored.bytes) % std::max<size_t>(dtype_size(dtype), 1) == 0;
            if (dtype == *stored.dtype && aligned && stored.interleaved_heads == 0) {
                data = stored.bytes;
            } else {
                void* buffer = owned_buffer(bytes, want.name);
                copy_rows(stored, static_cast<uint8_t*>(buffer), dtype);
                drop_mapped_pages(stored.bytes, stored.size);
                data = static_cast<const uint8_t*>(buffer);
            }
            done += stored.size;
            if (options.progress && !options.progress(done, progress_total))
                fail(Status::cancelled, "model loading was cancelled by the progress callback");
        }
        loaded_dtypes.insert(dtype);
        // One weight, or one per part of a fused tensor (row ranges of the same data).
        const std::vector<TensorPart> parts = want.parts.empty() ? std::vector{TensorPart{want.role, want.shape.at(0)}}
                                                                 : want.parts;
        const uint64_t row_elements = want.shape.size() > 1 ? stored.elements / uint64_t(want.shape[0]) : 1;
        int64_t row = 0;
        for (const TensorPart& part : parts) {
            Weight weight;
            weight.name = want.parts.empty() ? want.name : fmt::format("{}[{}:{}]", want.name, row, row + part.rows);
            weight.role = part.role;
            weight.layer = want.layer;
            weight.expert = want.expert;
            weight.component = component_of(part.role);
            weight.file_dtype = *stored.dtype;
            weight.dtype = dtype;
            weight.shape = want.shape;
            weight.shape[0] = part.rows;
            weight.fp8_w8a8 = dtype == DType::f8_e4m3_b128 && *stored.dtype == DType::f8_e4m3 && takes_w8a8(part.role) &&
                              spec.fp8_dynamic_activations && spec.fp8_block_rows == 128 && spec.fp8_block_cols == 128 &&
                              row % 128 == 0;
            weight.elements = uint64_t(part.rows) * row_elements;
            if (data != nullptr) weight.data = data + dtype_bytes(dtype, uint64_t(row) * row_elements);
            row += part.rows;
            const uint64_t part_bytes = dtype_bytes(dtype, weight.elements);
            description.parameters_total += weight.elements;
            description.parameters_active +=
                weight.component == Component::experts
                    ? weight.elements * static_cast<uint64_t>(spec.experts_per_token) / static_cast<uint64_t>(spec.experts)
                    : weight.elements;
            description.weight_bytes += part_bytes;
            description.bytes_by_component[static_cast<size_t>(weight.component)] += part_bytes;
            model->index_[weight.name] = model->weights_.size();
            model->weights_.push_back(std::move(weight));
        }
        if (row != want.shape.at(0)) fail(Status::internal, "the parts of '{}' cover {} of its {} rows", want.name, row, want.shape[0]);
        if (options.cpu_panels && data != nullptr && data == stored.bytes) {  // straight from the map
            // The CPU's panels of the tensor's parts, where every part takes them: they hold its
            // bytes, and its mapped pages are dropped, so that it is held once.
            const std::span<Weight> loaded(model->weights_.end() - std::ptrdiff_t(parts.size()), model->weights_.end());
            if (std::all_of(loaded.begin(), loaded.end(), [](const Weight& w) { return cpu_packs_panels(w); })) {
                for (Weight& w : loaded) {
                    void* panels = owned_buffer(dtype_bytes(w.dtype, w.elements), "the panels of " + w.name);
                    pack_cpu_panels(w, static_cast<uint32_t*>(panels));
                    w.panels = static_cast<const uint32_t*>(panels);
                }
                drop_mapped_pages(stored.bytes, stored.size);
            }
        }
    }
    description.precision = options.precision != Precision::automatic ? options.precision
                            : loaded_dtypes.size() == 1 && *loaded_dtypes.begin() == DType::f32  ? Precision::fp32
                            : loaded_dtypes.size() == 1 && *loaded_dtypes.begin() == DType::bf16 ? Precision::bf16
                            : loaded_dtypes.size() == 1 && *loaded_dtypes.begin() == DType::f16  ? Precision::fp16
                                                                                                 : Precision::automatic;
    model->has_data_ = !options.metadata_only;
    options.logger.info("loaded {} ({} tensors, {} parameters, {} bytes{})", spec.architecture_name,
                        model->weights_.size(), description.parameters_total, description.weight_bytes,
                        options.metadata_only ? ", metadata only" : "");
    return model;
}

}  // namespace unmask

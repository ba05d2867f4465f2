// load_model: config.json -> ModelSpec, safetensors headers -> catalog, checksums, binding of
// every expected tensor (all problems reported at once), then the weights at the chosen precision.
#include <cstdlib>
#include <set>
#include <system_error>

#include "core/error.hpp"
#include "core/float_convert.hpp"
#include "core/mapped_file.hpp"
#include "core/utf8.hpp"
#include "format/checksum_manifest.hpp"
#include "format/config_reader.hpp"
#include "format/strict_json.hpp"
#include "model/model.hpp"

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

ModelSpec read_model_config(const std::filesystem::path& directory) {
    require_model_directory(directory);
    const MappedFile file(directory / "config.json");
    const std::string_view text(reinterpret_cast<const char*>(file.data()), file.size());
    if (auto bad = find_invalid_utf8(text))
        fail(Status::model_format, "config.json: not valid UTF-8 (byte {})", *bad);
    const nlohmann::json root = parse_json_rejecting_duplicates(text, "config.json");
    return read_model_spec(ConfigReader(root, "config.json"));
}

DType loaded_dtype(Precision precision, DType file_dtype) noexcept {
    switch (precision) {
        case Precision::fp32: return DType::f32;
        case Precision::bf16: return DType::bf16;
        case Precision::fp16: return DType::f16;
        case Precision::automatic: break;
    }
    return file_dtype;
}

std::unique_ptr<Model> load_model(const std::filesystem::path& directory, const LoadOptions& options) {
    auto model = std::unique_ptr<Model>(new Model());
    model->spec_ = read_model_config(directory);
    const ModelSpec& spec = model->spec_;
    const auto manifest = read_manifest(directory, options.checksum_mode);
    model->catalog_ = TensorCatalog::open(directory);
    const TensorCatalog& catalog = model->catalog_;

    for (const auto& file : catalog.files()) {
        const std::string name = file->path().filename().string();
        if (!manifest.empty() && manifest.count(name) == 0)
            fail(Status::model_format, "{} does not list the weight file '{}'", checksum_manifest_name, name);
    }

    // Bind every expected tensor; collect every problem before failing.
    const std::vector<ExpectedTensor> expected = expected_tensors(spec);
    std::vector<std::string> problems;
    std::set<std::string> expected_names;
    uint64_t tensor_bytes = 0;
    for (const ExpectedTensor& want : expected) {
        expected_names.insert(want.name);
        const CatalogEntry* entry = catalog.find(want.name);
        if (entry == nullptr) {
            problems.push_back(fmt::format("missing tensor '{}' (shape {})", want.name, shape_text(want.shape)));
            continue;
        }
        if (entry->info->shape != want.shape)
            problems.push_back(fmt::format("tensor '{}' has shape {} but the config implies {}", want.name,
                                           shape_text(entry->info->shape), shape_text(want.shape)));
        else if (!is_float_weight_dtype(entry->info->dtype))
            problems.push_back(fmt::format("tensor '{}' has dtype {}; weights must be F32, F16 or BF16", want.name,
                                           dtype_name(entry->info->dtype)));
        tensor_bytes += entry->info->end - entry->info->begin;
    }
    if (!problems.empty()) {
        std::string listed = fmt::format("{}", fmt::join(problems.begin(),
                                                         problems.begin() + static_cast<std::ptrdiff_t>(std::min(problems.size(), max_listed_problems)),
                                                         "; "));
        if (problems.size() > max_listed_problems) listed += fmt::format("; and {} more", problems.size() - max_listed_problems);
        fail(Status::model_format, "{} problem(s) binding the weights of '{}' as {}: {}", problems.size(),
             directory.string(), spec.architecture_name, listed);
    }
    std::vector<std::string> unexpected;
    for (const auto& [name, entry] : catalog.tensors())
        if (expected_names.count(name) == 0) unexpected.push_back(name);
    if (!unexpected.empty())
        options.logger.warn("{} tensor(s) in '{}' are not used by {} and are ignored: {}{}", unexpected.size(),
                            directory.string(), spec.architecture_name,
                            fmt::join(unexpected.begin(), unexpected.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(unexpected.size(), 5)), ", "),
                            unexpected.size() > 5 ? ", ..." : "");

    uint64_t verify_bytes = 0;
    for (const auto& [name, digest] : manifest) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(directory / name, ec);
        if (!ec) verify_bytes += size;
    }
    const uint64_t progress_total = verify_bytes + (options.metadata_only ? 0 : tensor_bytes);
    if (!manifest.empty()) {
        verify_checksums(directory, manifest, options.progress, 0, progress_total);
        model->description_.checksums = ChecksumResult::verified;
        options.logger.info("verified {} file(s) against {}", manifest.size(), checksum_manifest_name);
    }

    if (options.memory != nullptr && !options.metadata_only) {
        uint64_t weight_bytes = 0;
        for (const ExpectedTensor& want : expected) {
            const TensorInfo& info = *catalog.find(want.name)->info;
            weight_bytes += info.elements * dtype_size(loaded_dtype(options.precision, info.dtype));
        }
        model->memory_ = options.memory->reserve(weight_bytes, fmt::format("the weights of '{}'", directory.string()));
    }

    // Materialise the weights: zero-copy from the map when dtype and alignment allow.
    uint64_t done = verify_bytes;
    ModelDescription& description = model->description_;
    std::set<DType> loaded_dtypes;
    for (const ExpectedTensor& want : expected) {
        const CatalogEntry& entry = *catalog.find(want.name);
        const DType dtype = loaded_dtype(options.precision, entry.info->dtype);
        const uint64_t bytes = entry.info->elements * dtype_size(dtype);
        const uint8_t* data = nullptr;
        if (!options.metadata_only) {
            const uint8_t* source = entry.file->tensor_bytes(*entry.info);
            const bool aligned = reinterpret_cast<uintptr_t>(source) % dtype_size(dtype) == 0;
            if (dtype == entry.info->dtype && aligned) {
                data = source;
            } else {
                void* buffer = std::aligned_alloc(64, (std::max<uint64_t>(bytes, 1) + 63) / 64 * 64);
                if (buffer == nullptr) fail(Status::out_of_budget, "cannot allocate {} bytes for '{}'", bytes, want.name);
                model->buffers_.emplace_back(buffer);
                convert_elements(source, entry.info->dtype, static_cast<uint8_t*>(buffer), dtype, entry.info->elements);
                data = static_cast<const uint8_t*>(buffer);
            }
            done += entry.info->end - entry.info->begin;
            if (options.progress && !options.progress(done, progress_total))
                fail(Status::cancelled, "model loading was cancelled by the progress callback");
        }
        loaded_dtypes.insert(dtype);
        // One weight, or one per part of a fused tensor (row ranges of the same data).
        const std::vector<TensorPart> parts = want.parts.empty() ? std::vector{TensorPart{want.role, want.shape.at(0)}}
                                                                 : want.parts;
        const uint64_t row_elements = want.shape.size() > 1 ? entry.info->elements / uint64_t(want.shape[0]) : 1;
        int64_t row = 0;
        for (const TensorPart& part : parts) {
            Weight weight;
            weight.name = want.parts.empty() ? want.name : fmt::format("{}[{}:{}]", want.name, row, row + part.rows);
            weight.role = part.role;
            weight.layer = want.layer;
            weight.expert = want.expert;
            weight.component = component_of(part.role);
            weight.file_dtype = entry.info->dtype;
            weight.dtype = dtype;
            weight.shape = want.shape;
            weight.shape[0] = part.rows;
            weight.elements = uint64_t(part.rows) * row_elements;
            if (data != nullptr) weight.data = data + uint64_t(row) * row_elements * dtype_size(dtype);
            row += part.rows;
            const uint64_t part_bytes = weight.elements * dtype_size(dtype);
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

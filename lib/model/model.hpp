// A loaded model: its spec and its weights, immutable once built and shared by every engine that
// serves it. Weights are used straight from the mapped files where dtype and alignment allow.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/types.hpp"
#include "core/memory_ledger.hpp"
#include "format/dtype.hpp"
#include "format/gguf.hpp"
#include "format/tensor_catalog.hpp"
#include "model/architecture.hpp"
#include "model/load_options.hpp"
#include "model/model_spec.hpp"

namespace unmask {

enum class ChecksumResult : int32_t { not_checked = 0, verified = 1 };

// Architecture-neutral facts about a model, as reported by unmask_model_info.
struct ModelDescription {
    Precision precision = Precision::automatic;  // automatic: the weights keep mixed file dtypes
    uint64_t parameters_total = 0;
    uint64_t parameters_active = 0;  // per token: routed experts count k/E of their parameters
    uint64_t weight_bytes = 0;       // at the loaded precision
    std::array<uint64_t, component_count> bytes_by_component{};
    ChecksumResult checksums = ChecksumResult::not_checked;
    std::string fingerprint;  // model/model_identity.hpp
};

class Model {
public:
    const ModelSpec& spec() const noexcept { return spec_; }
    const ModelDescription& description() const noexcept { return description_; }
    const std::vector<Weight>& weights() const noexcept { return weights_; }
    // The weight called `name`; throws Error(INTERNAL) when the binding did not produce it.
    const Weight& weight(const std::string& name) const;
    bool has_data() const noexcept { return has_data_; }
    // The GGUF file the model was loaded from, or nullptr for a model directory.
    const GgufFile* gguf() const noexcept { return gguf_.get(); }

private:
    friend std::unique_ptr<Model> load_model(const std::filesystem::path&, const LoadOptions&);
    struct FreeDeleter {
        void operator()(void* p) const noexcept;
    };

    ModelSpec spec_;
    ModelDescription description_;
    std::vector<Weight> weights_;
    std::map<std::string, size_t> index_;
    Reservation memory_;                                       // the weights' bytes, released last
    TensorCatalog catalog_;                                    // keeps the mapped files alive
    std::unique_ptr<GgufFile> gguf_;                           // or the mapped GGUF file
    std::vector<std::unique_ptr<void, FreeDeleter>> buffers_;  // converted or realigned weights
    bool has_data_ = false;
};

// Loads a Hugging Face model directory (config.json, the safetensors weights, the checksum
// manifest) or a GGUF file (model/gguf_model.hpp; a SHA256SUMS beside it is honoured for its
// entry). Throws Error (IO, MODEL_FORMAT, UNSUPPORTED, CANCELLED) naming what was wrong.
std::unique_ptr<Model> load_model(const std::filesystem::path& path, const LoadOptions& options);

// Weights the matmuls and the embedding lookup read, which may be quantized; norms, biases and
// routers stay in their float type.
bool quantizable(Role role) noexcept;

// The dtype a weight of `role` and `shape` stored as `file_dtype` has in memory at `precision`:
// the file's at automatic; the float type asked for (decoding quantized blocks); at int8, q4 and
// fp8, Q8_0, Q4_0 or F8_E4M3_B128 blocks for the matrices of float files whose rows are whole
// blocks, except the embedding and the LM head unless `quantize_embeddings`, and the file's type
// for everything else. An fp8 checkpoint's F8_E4M3 weight (file_dtype f8_e4m3) is F8_E4M3_B128 at
// automatic, int8, q4 and fp8 where it is a quantizable matrix of whole groups of 128, and fp32
// otherwise.
DType loaded_dtype(Precision precision, DType file_dtype, Role role, const std::vector<int64_t>& shape,
                   bool quantize_embeddings = false) noexcept;

// config.json (or a GGUF file's metadata) -> ModelSpec, without reading any tensor.
ModelSpec read_model_config(const std::filesystem::path& path);

}  // namespace unmask

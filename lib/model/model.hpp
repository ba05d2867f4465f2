// A loaded model: immutable once built, shared by every engine that serves it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "model/load_options.hpp"

namespace unmask {

// Architecture-neutral facts about a model, as reported by unmask_model_info.
struct ModelDescription {
    std::string architecture;
    Precision precision = Precision::automatic;
    uint64_t parameters_total = 0;
    uint64_t parameters_active = 0;
    uint64_t weight_bytes = 0;
    int64_t vocab_size = 0;
    int32_t layers = 0;
    int32_t hidden_size = 0;
    int32_t attention_heads = 0;
    int32_t kv_heads = 0;
    int32_t head_dim = 0;
    int32_t experts = 0;
    int32_t experts_per_token = 0;
    int32_t mask_token_id = 0;
    int64_t max_sequence_length = 0;
};

class Model {
public:
    virtual ~Model() = default;
    virtual const ModelDescription& description() const = 0;
};

// Loads a Hugging Face model directory. Throws Error (IO, MODEL_FORMAT, UNSUPPORTED, CANCELLED).
std::unique_ptr<Model> load_model(const std::filesystem::path& directory, const LoadOptions& options);

}  // namespace unmask

// tokenizer.json pre-tokenizers: Split, ByteLevel, Metaspace, Digits, Whitespace-free Sequence.
// Each refines a list of pieces; BPE then runs on every piece separately.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace unmask {

class PreTokenizer {
public:
    virtual ~PreTokenizer() = default;
    virtual void split(std::vector<std::string>& pieces) const = 0;
};

// nullptr for a JSON null. Throws UNSUPPORTED for an unknown type, MODEL_FORMAT for a bad field.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& config);

}  // namespace unmask

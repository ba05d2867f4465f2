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
    // `text_start`: the first piece begins the whole text (not after an added token), which
    // Metaspace's prepend_scheme "first" needs.
    virtual void split(std::vector<std::string>& pieces, bool text_start) const = 0;
};

// The one code point of a component's character field (Metaspace replacement, Strip content);
// MODEL_FORMAT otherwise.
std::string single_character(const nlohmann::json& config, const char* key, const std::string& fallback,
                             std::string_view where);

// nullptr for a JSON null. Throws UNSUPPORTED for an unknown type, MODEL_FORMAT for a bad field.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& config);

}  // namespace unmask

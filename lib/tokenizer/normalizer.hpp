// tokenizer.json normalizers: NFC, NFKC, NFD, NFKD, Prepend, Replace, Strip, Lowercase, Sequence.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace unmask {

class Normalizer {
public:
    virtual ~Normalizer() = default;
    virtual void normalize(std::string& text) const = 0;
};

// nullptr for a JSON null. Throws UNSUPPORTED for an unknown type, MODEL_FORMAT for a bad field.
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& config);

}  // namespace unmask

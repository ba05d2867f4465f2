// tokenizer.json decoders: ByteLevel, ByteFallback, Metaspace, Fuse, Strip, Replace, Sequence.
// Each maps the list of token strings onto a new list; the result is their concatenation.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace unmask {

class Decoder {
public:
    virtual ~Decoder() = default;
    virtual void decode(std::vector<std::string>& tokens) const = 0;
};

// nullptr for a JSON null. Throws UNSUPPORTED for an unknown type.
std::unique_ptr<Decoder> make_decoder(const nlohmann::json& config);

}  // namespace unmask

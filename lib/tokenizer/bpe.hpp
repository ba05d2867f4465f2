// The BPE model of tokenizer.json: a vocabulary, ranked merges, and what to do with symbols the
// vocabulary lacks (byte fallback to <0xXX> tokens, or the unknown token).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace unmask {

class BpeModel {
public:
    // Throws MODEL_FORMAT naming the field or merge that is wrong, UNSUPPORTED for dropout etc.
    explicit BpeModel(const nlohmann::json& model);

    // Appends the ids of one pre-tokenized piece.
    void encode(std::string_view piece, std::vector<int32_t>& out) const;

    const std::unordered_map<std::string, int32_t>& vocab() const noexcept { return vocab_; }
    int32_t id_of(std::string_view token) const;  // -1 when absent

private:
    struct Merge {
        int32_t rank;
        int32_t result;
    };
    static uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

    std::unordered_map<std::string, int32_t> vocab_;
    std::unordered_map<uint64_t, Merge> merges_;
    int32_t unk_ = -1;
    bool byte_fallback_ = false;
    bool fuse_unk_ = false;
    bool ignore_merges_ = false;
    int32_t byte_tokens_[256];  // <0xXX>, -1 when absent
};

}  // namespace unmask

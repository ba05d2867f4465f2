#include "tokenizer/bpe.hpp"

#include <cstdio>
#include <queue>

#include "core/error.hpp"
#include "core/utf8.hpp"
#include "tokenizer/tokenizer_json.hpp"

namespace unmask {

BpeModel::BpeModel(const nlohmann::json& model) {
    const auto vocab = model.find("vocab");
    if (vocab == model.end() || !vocab->is_object())
        fail(Status::model_format, "tokenizer.json: model.vocab must be an object of token -> id");
    for (const auto& [token, id] : vocab->items()) vocab_.emplace(token, json_token_id(id, "model.vocab['" + token + "']"));
    if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"].get<double>() > 0)
        fail(Status::unsupported, "tokenizer.json: BPE dropout is not supported at inference");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
        if (model.contains(key) && model[key].is_string() && !model[key].get<std::string>().empty())
            fail(Status::unsupported, "tokenizer.json: BPE {} is not supported", key);
    if (model.contains("unk_token") && model["unk_token"].is_string()) unk_ = id_of(model["unk_token"].get<std::string>());
    byte_fallback_ = model.value("byte_fallback", false);
    fuse_unk_ = model.value("fuse_unk", false);
    ignore_merges_ = model.value("ignore_merges", false);
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        byte_tokens_[b] = id_of(name);
    }

    const auto merges = model.find("merges");
    if (merges == model.end() || !merges->is_array()) fail(Status::model_format, "tokenizer.json: model.merges must be an array");
    int32_t rank = 0;
    for (const auto& merge : *merges) {
        std::string left, right;
        if (merge.is_string()) {  // "a b"
            const std::string text = merge.get<std::string>();
            const size_t space = text.find(' ', 1);
            if (space == std::string::npos) fail(Status::model_format, "tokenizer.json: merge '{}' is not 'a b'", text);
            left = text.substr(0, space);
            right = text.substr(space + 1);
        } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
            left = merge[0].get<std::string>();
            right = merge[1].get<std::string>();
        } else {
            fail(Status::model_format, "tokenizer.json: merge {} is neither 'a b' nor [a, b]", rank);
        }
        const int32_t a = id_of(left), b = id_of(right), result = id_of(left + right);
        if (a < 0 || b < 0 || result < 0)
            fail(Status::model_format, "tokenizer.json: merge {} ('{}' '{}') uses a token outside the vocabulary", rank,
                 left, right);
        merges_.insert_or_assign(pair_key(a, b), Merge{rank++, result});  // a repeated pair keeps its last rank, as the reference
    }
}

int32_t BpeModel::id_of(std::string_view token) const {
    const auto it = vocab_.find(std::string(token));
    return it == vocab_.end() ? -1 : it->second;
}

void BpeModel::encode(std::string_view piece, std::vector<int32_t>& out) const {
    if (piece.empty()) return;
    if (ignore_merges_)
        if (const int32_t whole = id_of(piece); whole >= 0) {
            out.push_back(whole);
            return;
        }
    // Symbols start as single code points, linked so merges can remove them in place.
    struct Symbol {
        int32_t id;
        int32_t previous, next;
        uint32_t begin, end;  // bytes of `piece`
    };
    std::vector<Symbol> symbols;
    for (size_t i = 0; i < piece.size();) {
        const size_t begin = i;
        next_code_point(piece, i);
        const auto n = static_cast<int32_t>(symbols.size());
        symbols.push_back({id_of(piece.substr(begin, i - begin)), n - 1, n + 1, uint32_t(begin), uint32_t(i)});
    }
    symbols.back().next = -1;

    // The lowest rank merges first; among equal ranks, the leftmost.
    struct Candidate {
        int32_t rank, left, right;
        bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    auto consider = [&](int32_t left) {
        if (left < 0) return;
        const int32_t right = symbols[size_t(left)].next;
        if (right < 0 || symbols[size_t(left)].id < 0 || symbols[size_t(right)].id < 0) return;
        const auto it = merges_.find(pair_key(symbols[size_t(left)].id, symbols[size_t(right)].id));
        if (it != merges_.end()) queue.push({it->second.rank, left, right});
    };
    for (int32_t i = 0; i < static_cast<int32_t>(symbols.size()); ++i) consider(i);
    while (!queue.empty()) {
        const Candidate c = queue.top();
        queue.pop();
        Symbol& left = symbols[size_t(c.left)];
        if (left.id < 0 && left.begin == left.end) continue;  // removed
        if (left.next != c.right) continue;                   // stale: the right symbol changed
        Symbol& right = symbols[size_t(c.right)];
        const auto it = merges_.find(pair_key(left.id, right.id));
        if (it == merges_.end() || it->second.rank != c.rank) continue;
        left.id = it->second.result;
        left.end = right.end;
        left.next = right.next;
        if (right.next >= 0) symbols[size_t(right.next)].previous = c.left;
        right = {-1, -1, -1, 0, 0};
        consider(left.previous);
        consider(c.left);
    }

    bool previous_unknown = false;
    for (int32_t i = 0; i >= 0 && i < static_cast<int32_t>(symbols.size()); i = symbols[size_t(i)].next) {
        const Symbol& s = symbols[size_t(i)];
        if (s.id >= 0) {
            out.push_back(s.id);
            previous_unknown = false;
            continue;
        }
        if (byte_fallback_) {
            bool all_bytes = true;
            for (uint32_t b = s.begin; b < s.end; ++b) all_bytes = all_bytes && byte_tokens_[uint8_t(piece[b])] >= 0;
            if (all_bytes) {
                for (uint32_t b = s.begin; b < s.end; ++b) out.push_back(byte_tokens_[uint8_t(piece[b])]);
                previous_unknown = false;
                continue;
            }
        }
        if (unk_ < 0) continue;  // no unknown token: the reference drops the symbol
        if (!(fuse_unk_ && previous_unknown)) out.push_back(unk_);
        previous_unknown = true;
    }
}

}  // namespace unmask

// Unicode regular expressions (PCRE2 with JIT, UTF + UCP), for the split patterns of
// tokenizer.json (\p{L}, \p{N}, case-insensitive groups, lookahead), which std::regex cannot do.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace unmask {

class Regex {
public:
    // Throws Error(MODEL_FORMAT) naming `label` when the pattern does not compile.
    Regex(const std::string& pattern, std::string_view label);
    ~Regex();
    Regex(Regex&&) noexcept;
    Regex& operator=(Regex&&) noexcept;

    // Every non-overlapping match, as [begin, end) byte offsets; empty matches are skipped.
    std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

    // `pattern` matching exactly `literal`.
    static std::string escape(std::string_view literal);

private:
    struct Compiled;
    std::unique_ptr<Compiled> compiled_;
};

}  // namespace unmask

#include "answer_text.hpp"

#include <algorithm>

#include "unmask.hpp"

namespace unmask_examples {

AnswerText::AnswerText(const unmask_tokenizer* tokenizer, int32_t mask_token_id, int32_t eos_token_id,
                       std::vector<std::string> stop)
    : tokenizer_(tokenizer), mask_token_id_(mask_token_id), eos_token_id_(eos_token_id), stop_(std::move(stop)) {}

std::string AnswerText::advance(const int32_t* tokens, int64_t count, bool final) {
    if (ended_) return {};
    int64_t end = 0;
    while (end < count && tokens[end] != mask_token_id_ && tokens[end] != eos_token_id_) ++end;
    const bool eos = end < count && tokens[end] == eos_token_id_;
    std::string text = unmask::api::Tokenizer(tokenizer_).decode({tokens, static_cast<size_t>(end)}, true);
    committed_ = end;

    size_t settled = text.size();
    for (const auto& stop : stop_) {
        const size_t at = text.find(stop);
        if (at != std::string::npos && at < settled) {
            settled = at;
            stopped_ = true;
        }
    }
    ended_ = eos || stopped_ || final;
    if (!ended_) {
        // Hold back an incomplete character (decoded as U+FFFD) and a tail that may begin a stop string.
        static const std::string replacement = "\xEF\xBF\xBD";
        while (settled >= replacement.size() && text.compare(settled - replacement.size(), replacement.size(), replacement) == 0)
            settled -= replacement.size();
        for (const auto& stop : stop_)
            for (size_t keep = std::min(stop.size() - 1, settled); keep > 0; --keep)
                if (text.compare(settled - keep, keep, stop, 0, keep) == 0) {
                    settled -= keep;
                    break;
                }
    }
    text.resize(settled);
    // The committed prefix only grows, so its text extends what was sent; if a tokenizer's decoder
    // ever rewrote earlier text, nothing more is sent rather than something inconsistent.
    if (text.size() <= sent_.size() || text.compare(0, sent_.size(), sent_) != 0) return {};
    std::string delta = text.substr(sent_.size());
    sent_ = std::move(text);
    return delta;
}

}  // namespace unmask_examples

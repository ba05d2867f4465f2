// The answer of a generation as text while it is being generated, for streaming: the committed
// prefix of the generated region (everything before the first still-masked position) is final,
// so each call returns only text beyond what the previous calls returned. The answer ends at
// the first EOS and before the first stop string; text that may still turn out to be the start
// of a stop string, or an incomplete UTF-8 character, is held back until it is settled.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "unmask.h"

namespace unmask_examples {

class AnswerText {
public:
    AnswerText(const unmask_tokenizer* tokenizer, int32_t mask_token_id, int32_t eos_token_id,
               std::vector<std::string> stop);

    // `tokens` is the generated region as it stands (masks where nothing is committed yet);
    // `final`: the generation has finished, so nothing is held back. Returns the new text; throws
    // unmask::api::Error when the tokenizer cannot decode.
    std::string advance(const int32_t* tokens, int64_t count, bool final);

    const std::string& text() const { return sent_; }  // returned so far
    bool stopped() const { return stopped_; }          // a stop string ended the answer
    bool ended() const { return ended_; }              // EOS or a stop string ended the answer
    int64_t committed_tokens() const { return committed_; }  // generated ids up to the answer's end

private:
    const unmask_tokenizer* tokenizer_;
    int32_t mask_token_id_, eos_token_id_;
    std::vector<std::string> stop_;
    std::string sent_;
    bool stopped_ = false, ended_ = false;
    int64_t committed_ = 0;
};

}  // namespace unmask_examples

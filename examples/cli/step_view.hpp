// `--show-steps`: the canvas drawn after every step, committed runs as text (or ids without a
// tokenizer) and masks as a glyph; redrawn in place on a terminal, one line per step otherwise.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "unmask.h"

namespace unmask_cli {

struct StepView {
    FILE* stream;
    bool terminal;
    int32_t mask;
    const unmask_tokenizer* tokenizer;
    int lines_drawn = 0;

    // An unmask_stream_callback; `user` is the StepView.
    static int32_t draw(const unmask_stream_event* event, void* user);
    // Ends the drawing (a newline after an in-place view).
    void finish() const;
};

// The text of `count` ids.
std::string detokenize(const unmask_tokenizer* tokenizer, const int32_t* ids, int64_t count, bool skip_special);

}  // namespace unmask_cli

#include "step_view.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <string>

#include "commands.hpp"

namespace unmask_cli {

std::string detokenize(const unmask_tokenizer* tokenizer, const int32_t* ids, int64_t count, bool skip_special) {
    int64_t length = 0;
    check(unmask_detokenize(tokenizer, ids, count, skip_special ? 1 : 0, nullptr, 0, &length));
    std::string text(static_cast<size_t>(length), '\0');
    check(unmask_detokenize(tokenizer, ids, count, skip_special ? 1 : 0, text.data(), length, &length));
    return text;
}

int32_t StepView::draw(const unmask_stream_event* event, void* user) {
    auto* view = static_cast<StepView*>(user);
    if (event->kind != UNMASK_STREAM_STEP) return 0;
    const int32_t* canvas = event->tokens;
    const int64_t length = event->token_count;
    const char* glyph = view->terminal ? "\u2592" : "_";
    std::string line = "step ";
    line.append(std::to_string(event->step + 1)).append(" (+").append(std::to_string(event->committed)).append("): ");
    for (int64_t i = 0; i < length;) {
        if (canvas[i] == view->mask) {
            line.append(glyph);
            ++i;
            continue;
        }
        int64_t end = i;
        while (end < length && canvas[end] != view->mask) ++end;
        if (view->tokenizer != nullptr) {
            std::string text = detokenize(view->tokenizer, canvas + i, end - i, false);
            for (char& c : text)  // control characters would move the cursor
                if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
            line.append(text);
        } else {
            for (int64_t j = i; j < end; ++j) line.append(j > i ? " " : "").append(std::to_string(canvas[j]));
            if (end < length) line.push_back(' ');
        }
        i = end;
    }
    if (view->terminal) {
        winsize size{};
        const int columns = ioctl(fileno(view->stream), TIOCGWINSZ, &size) == 0 && size.ws_col > 0 ? size.ws_col : 80;
        if (view->lines_drawn > 1) std::fprintf(view->stream, "\033[%dA", view->lines_drawn - 1);
        std::fprintf(view->stream, "\r\033[J%s", line.c_str());
        view->lines_drawn = static_cast<int>((line.size() + size_t(columns) - 1) / size_t(columns));
    } else {
        std::fprintf(view->stream, "%s\n", line.c_str());
    }
    std::fflush(view->stream);
    return 0;
}

void StepView::finish() const {
    if (terminal) std::fprintf(stream, "\n");
}

}  // namespace unmask_cli

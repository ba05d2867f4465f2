#include "decode/feed_window.hpp"

#include <algorithm>

namespace unmask {

FeedWindow feed_window(const FeedWindowInputs& in) noexcept {
    FeedWindow w{0, in.length};
    if (in.mode == CacheMode::none) return w;
    const bool refresh = in.refresh > 0 && in.block_step % in.refresh == 0;
    const int64_t shift = in.logits_shift ? 1 : 0;
    const int64_t part_begin = std::max<int64_t>(0, in.block_begin - shift - in.vicinity);
    const int64_t part_end = in.mode == CacheMode::dual ? std::min(in.length, in.block_end + in.vicinity) : in.length;
    if (in.block_causal) {
        // Block-causal attention: the cache is exact, and nothing after the block matters to it. A
        // block's first forward also feeds the finished blocks whose K/V are not final yet (the
        // previous one, more after blocks that needed no forward; the prompt with block 0),
        // extending the cache like a prefill.
        w.begin = refresh ? 0 : part_begin;
        if (in.block_step == 0) w.begin = std::min(w.begin, in.cache_final);
        w.end = in.block_end;
    } else if (in.block_step > 0 && !refresh) {
        w = {part_begin, part_end};
    }
    return w;
}

}  // namespace unmask

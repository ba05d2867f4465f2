// Which positions a denoising step feeds to the forward under a K/V cache mode
// (docs/cache-modes.md): a pure function of where the step is, so that each mode's window is
// tested alone.
#pragma once

#include <cstdint>

#include "decode/decode_params.hpp"

namespace unmask {

struct FeedWindowInputs {
    CacheMode mode = CacheMode::none;
    int64_t refresh = 0;   // > 0: feed from position 0 every this many steps of a block
    int64_t vicinity = 0;  // also feed this many positions on each side of the block
    bool logits_shift = false;  // position p is predicted from p - 1: feed one before the block too
    bool block_causal = false;  // a block diffusion model: the cache is exact
    int64_t block_begin = 0, block_end = 0;  // the positions the step decodes
    int64_t block_step = 0;                  // steps taken in the block before this one
    int64_t length = 0;                      // of the canvas
    int64_t cache_final = 0;  // block diffusion: the cached K/V of [0, cache_final) are final
};

struct FeedWindow {
    int64_t begin = 0, end = 0;
};

// The whole canvas without a cache mode. Bidirectional models: a block's first step (and every
// refresh) feeds the whole canvas, its other steps the block (dual) or everything from it (prefix),
// widened by the vicinity and the logits shift. Block diffusion models feed the block (from 0 at
// a refresh), at its first step also the finished blocks whose K/V are not final yet.
FeedWindow feed_window(const FeedWindowInputs& in) noexcept;

}  // namespace unmask

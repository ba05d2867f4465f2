// Which recordings of replayable work (Backend::run_replayable) a backend keeps, by key: host
// bookkeeping only, so that it is tested without a device. The CUDA backend keeps CUDA graphs in
// its slots.
//
// A key is recorded the second time it comes: a shape seen once (the one-off forwards of a
// generation, say) is not worth a recording. Recordings go into a fixed number of slots,
// the least recently used given up for a new one once that one is made; a key whose recording
// failed is run as it comes while it is among the last `remembered` such keys, and so is a key
// whose recording was abandoned `attempts` times in a row (something that was to pass kept
// breaking it). One recording is made at a time: each `decide` that answers record is followed by
// recorded, refuse or abandon before the next `decide`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

namespace unmask {

class ReplayCache {
public:
    // `remembered`: how many keys seen once (and keys refused, and abandoned recordings) are
    // remembered.
    explicit ReplayCache(size_t slots, size_t remembered = 64, size_t attempts = 3);

    enum class Action { run, record, replay };
    struct Decision {
        Action action = Action::run;
        // record: the slot to record into (its old recording, if any, stays until recorded() says
        // the new one is made, and is the slot's again if it is not); replay: the slot
        size_t slot = 0;
    };
    // What to do with work of `key` now.
    Decision decide(std::span<const int64_t> key);
    // The recording `decide` asked for into `slot` was made: the key replays from now on (the
    // slot's old recording is to go).
    void recorded(size_t slot);
    // The recording `decide` asked for into `slot` could not be made: the key runs as it comes
    // from now on (while remembered); the slot's old recording stays.
    void refuse(size_t slot);
    // The recording `decide` asked for into `slot` was not made this time (it may be next time:
    // the key is recorded again when it comes, unless this was its `attempts`th abandoned
    // recording in a row, which refuses it); the slot's old recording stays.
    void abandon(size_t slot);
    // Forgets every recording (what they read has moved).
    void clear();

    size_t slots() const noexcept { return slots_.size(); }
    size_t recordings() const noexcept;

private:
    struct Slot {
        std::vector<int64_t> key;
        uint64_t last_use = 0;
        bool filled = false;  // a recording is there (else, when key is set, one is being made)
    };
    static bool contains(const std::deque<std::vector<int64_t>>& keys, std::span<const int64_t> key);
    void remember(std::deque<std::vector<int64_t>>& keys, std::span<const int64_t> key);

    std::vector<Slot> slots_;
    Slot displaced_;  // what the recording being made is to replace
    std::deque<std::vector<int64_t>> seen_, refused_, abandoned_;  // abandoned_: a key per attempt
    size_t remembered_, attempts_;
    uint64_t clock_ = 0;
};

}  // namespace unmask

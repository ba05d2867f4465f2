#include "backend/replay_cache.hpp"

#include <algorithm>
#include <utility>

namespace unmask {

namespace {

bool same(std::span<const int64_t> a, std::span<const int64_t> b) { return std::ranges::equal(a, b); }

}  // namespace

ReplayCache::ReplayCache(size_t slots, size_t remembered, size_t attempts)
    : slots_(slots), remembered_(remembered), attempts_(attempts) {}

bool ReplayCache::contains(const std::deque<std::vector<int64_t>>& keys, std::span<const int64_t> key) {
    return std::ranges::any_of(keys, [&](const std::vector<int64_t>& k) { return same(k, key); });
}

void ReplayCache::remember(std::deque<std::vector<int64_t>>& keys, std::span<const int64_t> key) {
    if (remembered_ == 0) return;
    if (keys.size() == remembered_) keys.pop_front();
    keys.emplace_back(key.begin(), key.end());
}

ReplayCache::Decision ReplayCache::decide(std::span<const int64_t> key) {
    ++clock_;
    for (size_t s = 0; s < slots_.size(); ++s)
        if (slots_[s].filled && same(slots_[s].key, key)) {
            slots_[s].last_use = clock_;
            return {Action::replay, s};
        }
    if (slots_.empty() || contains(refused_, key)) return {Action::run, 0};
    if (!contains(seen_, key)) {
        remember(seen_, key);
        return {Action::run, 0};
    }
    const auto oldest = std::ranges::min_element(slots_, {}, [](const Slot& s) { return s.last_use; });
    displaced_ = std::exchange(*oldest, Slot{std::vector<int64_t>(key.begin(), key.end()), clock_, false});
    return {Action::record, static_cast<size_t>(oldest - slots_.begin())};
}

void ReplayCache::recorded(size_t slot) {
    Slot& s = slots_.at(slot);
    s.filled = true;
    std::erase_if(abandoned_, [&](const std::vector<int64_t>& k) { return same(k, s.key); });
    displaced_ = Slot{};
}

void ReplayCache::refuse(size_t slot) {
    const std::vector<int64_t>& key = slots_.at(slot).key;
    std::erase_if(abandoned_, [&](const std::vector<int64_t>& k) { return same(k, key); });
    remember(refused_, key);
    slots_[slot] = std::exchange(displaced_, Slot{});
}

void ReplayCache::abandon(size_t slot) {
    const std::vector<int64_t>& key = slots_.at(slot).key;
    const auto attempts = static_cast<size_t>(
        std::ranges::count_if(abandoned_, [&](const std::vector<int64_t>& k) { return same(k, key); }));
    if (attempts + 1 >= attempts_) return refuse(slot);
    remember(abandoned_, key);
    slots_[slot] = std::exchange(displaced_, Slot{});
}

void ReplayCache::clear() {
    for (Slot& s : slots_) s = Slot{};
    displaced_ = Slot{};
}

size_t ReplayCache::recordings() const noexcept {
    return static_cast<size_t>(std::ranges::count_if(slots_, [](const Slot& s) { return s.filled; }));
}

}  // namespace unmask

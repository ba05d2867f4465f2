#include "core/memory_ledger.hpp"

#include <algorithm>
#include <utility>

#include "core/error.hpp"

namespace unmask {

Reservation::Reservation(Reservation&& other) noexcept
    : ledger_(std::exchange(other.ledger_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

Reservation& Reservation::operator=(Reservation&& other) noexcept {
    if (this != &other) {
        release();
        ledger_ = std::exchange(other.ledger_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
}

Reservation::~Reservation() { release(); }

void Reservation::release() noexcept {
    if (ledger_ != nullptr) ledger_->give_back(bytes_, true);
    ledger_ = nullptr;
    bytes_ = 0;
}

MemoryLedger::MemoryLedger(std::string name, uint64_t capacity) : name_(std::move(name)), capacity_(capacity) {}

MemoryLedger::MemoryLedger(std::string name, uint64_t capacity, MemoryLedger* parent)
    : name_(std::move(name)), capacity_(capacity), parent_(parent) {}

MemoryLedger::~MemoryLedger() {
    if (parent_ != nullptr) parent_->give_back(capacity_, false);
}

void MemoryLedger::take(uint64_t bytes, bool used, std::string_view what) {
    {
        std::lock_guard lock(mutex_);
        if (bytes > capacity_ - reserved_)
            fail(Status::out_of_budget, "{} needs {} bytes but {} has {} of its {} bytes left", what, bytes, name_,
                 capacity_ - reserved_, capacity_);
        reserved_ += bytes;
        peak_reserved_ = std::max(peak_reserved_, reserved_);
    }
    if (used) add_use(bytes);
}

bool MemoryLedger::try_take(uint64_t bytes, bool used) noexcept {
    {
        std::lock_guard lock(mutex_);
        if (bytes > capacity_ - reserved_) return false;
        reserved_ += bytes;
        peak_reserved_ = std::max(peak_reserved_, reserved_);
    }
    if (used) add_use(bytes);
    return true;
}

void MemoryLedger::give_back(uint64_t bytes, bool used) noexcept {
    if (used) remove_use(bytes);
    std::lock_guard lock(mutex_);
    reserved_ -= bytes;
}

// Use propagates to every ancestor, so a device's peak includes what its pools really allocated.
void MemoryLedger::add_use(uint64_t bytes) noexcept {
    for (MemoryLedger* ledger = this; ledger != nullptr; ledger = ledger->parent_) {
        std::lock_guard lock(ledger->mutex_);
        ledger->in_use_ += bytes;
        ledger->peak_in_use_ = std::max(ledger->peak_in_use_, ledger->in_use_);
    }
}

void MemoryLedger::remove_use(uint64_t bytes) noexcept {
    for (MemoryLedger* ledger = this; ledger != nullptr; ledger = ledger->parent_) {
        std::lock_guard lock(ledger->mutex_);
        ledger->in_use_ -= bytes;
    }
}

Reservation MemoryLedger::reserve(uint64_t bytes, std::string_view what) {
    take(bytes, true, what);
    return Reservation(this, bytes);
}

std::optional<Reservation> MemoryLedger::try_reserve(uint64_t bytes) {
    if (!try_take(bytes, true)) return std::nullopt;
    return Reservation(this, bytes);
}

std::unique_ptr<MemoryLedger> MemoryLedger::pool(std::string name, uint64_t capacity) {
    take(capacity, false, name);
    return std::unique_ptr<MemoryLedger>(new MemoryLedger(std::move(name), capacity, this));
}

std::unique_ptr<MemoryLedger> MemoryLedger::try_pool(std::string name, uint64_t capacity) {
    if (!try_take(capacity, false)) return nullptr;
    return std::unique_ptr<MemoryLedger>(new MemoryLedger(std::move(name), capacity, this));
}

void MemoryLedger::charge(uint64_t bytes, std::string_view what) { take(bytes, true, what); }

void MemoryLedger::discharge(uint64_t bytes) noexcept { give_back(bytes, true); }

uint64_t MemoryLedger::reserved() const {
    std::lock_guard lock(mutex_);
    return reserved_;
}
uint64_t MemoryLedger::available() const {
    std::lock_guard lock(mutex_);
    return capacity_ - reserved_;
}
uint64_t MemoryLedger::peak_reserved() const {
    std::lock_guard lock(mutex_);
    return peak_reserved_;
}
uint64_t MemoryLedger::in_use() const {
    std::lock_guard lock(mutex_);
    return in_use_;
}
uint64_t MemoryLedger::peak_in_use() const {
    std::lock_guard lock(mutex_);
    return peak_in_use_;
}

}  // namespace unmask

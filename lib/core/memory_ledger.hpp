// The tracking allocator's books: one ledger per device holds the budget (capacity) and every
// byte charged against it. Weights reserve at load, a generation's scratch is a child pool
// reserved whole and then charged allocation by allocation, and each sequence's state is reserved
// at admission. Nothing is charged past the capacity: the charge that would cross it throws
// OUT_OF_BUDGET naming what asked and what was left.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace unmask {

class MemoryLedger;

// Bytes held in a ledger until destroyed (movable, not copyable).
class Reservation {
public:
    Reservation() = default;
    Reservation(Reservation&& other) noexcept;
    Reservation& operator=(Reservation&& other) noexcept;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    ~Reservation();

    uint64_t bytes() const noexcept { return bytes_; }

private:
    friend class MemoryLedger;
    Reservation(MemoryLedger* ledger, uint64_t bytes) : ledger_(ledger), bytes_(bytes) {}
    void release() noexcept;

    MemoryLedger* ledger_ = nullptr;
    uint64_t bytes_ = 0;
};

class MemoryLedger {
public:
    // A device's books: `capacity` is the usable budget (after the margin).
    MemoryLedger(std::string name, uint64_t capacity);
    // Releases the pool's share of its parent.
    ~MemoryLedger();
    MemoryLedger(const MemoryLedger&) = delete;
    MemoryLedger& operator=(const MemoryLedger&) = delete;

    // Holds `bytes` for `what` (weights, a sequence's state); counted as in use.
    // Throws Error(OUT_OF_BUDGET) when they do not fit.
    Reservation reserve(uint64_t bytes, std::string_view what);
    // The same, or nothing when the bytes do not fit now.
    std::optional<Reservation> try_reserve(uint64_t bytes);

    // A child pool that takes `capacity` of this ledger whole (reserved here, not yet in use)
    // and charges its allocations to itself; its use shows here as it happens. The pool must
    // outlive every allocation charged to it, and this ledger the pool.
    std::unique_ptr<MemoryLedger> pool(std::string name, uint64_t capacity);
    // The same, or null when `capacity` does not fit now.
    std::unique_ptr<MemoryLedger> try_pool(std::string name, uint64_t capacity);

    // The tracking allocator's hooks: count an allocation of `bytes`, and its release.
    void charge(uint64_t bytes, std::string_view what);
    void discharge(uint64_t bytes) noexcept;

    const std::string& name() const noexcept { return name_; }
    uint64_t capacity() const noexcept { return capacity_; }
    uint64_t reserved() const;       // reservations, pools and allocations held now
    uint64_t available() const;      // capacity - reserved
    uint64_t peak_reserved() const;  // never above capacity
    uint64_t in_use() const;         // bytes actually allocated or reserved-and-used now
    uint64_t peak_in_use() const;    // the measured peak the plan is held against

private:
    MemoryLedger(std::string name, uint64_t capacity, MemoryLedger* parent);
    void take(uint64_t bytes, bool used, std::string_view what);
    bool try_take(uint64_t bytes, bool used) noexcept;
    void give_back(uint64_t bytes, bool used) noexcept;
    void add_use(uint64_t bytes) noexcept;
    void remove_use(uint64_t bytes) noexcept;
    friend class Reservation;

    std::string name_;
    uint64_t capacity_;
    MemoryLedger* parent_ = nullptr;
    mutable std::mutex mutex_;
    uint64_t reserved_ = 0, peak_reserved_ = 0, in_use_ = 0, peak_in_use_ = 0;
};

}  // namespace unmask

// Progress of long work for people: loading and verifying a model (bytes), or an evaluation
// (requests). On a terminal one line is redrawn in place (percent, done of total, rate, time
// left); anywhere else a plain line is written at each tenth, so logs and pipes stay readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace unmask_examples {

class ProgressMeter {
public:
    enum class Unit { bytes, items };
    using Sink = std::function<void(const std::string& line)>;

    // Redrawn in place on `terminal` when it is not null; otherwise each tenth goes to `sink`.
    ProgressMeter(std::string label, Unit unit, FILE* terminal, Sink sink = {});

    // On a terminal nothing is drawn in the first half second: quick work shows nothing.
    void update(uint64_t done, uint64_t total);
    // Ends the in-place line.
    void finish();

    // An unmask_progress_callback whose user data is a ProgressMeter; it never cancels.
    static int32_t callback(uint64_t done, uint64_t total, void* meter);

    // "45% 2.8 GiB of 6.2 GiB, 310 MiB/s, 11 s left"
    static std::string describe(uint64_t done, uint64_t total, Unit unit, double seconds);

private:
    std::string label_;
    Unit unit_;
    FILE* terminal_;
    Sink sink_;
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now(), drawn_{};
    int tenths_written_ = 0;
    bool drawing_ = false;
};

bool stderr_is_terminal();

}  // namespace unmask_examples

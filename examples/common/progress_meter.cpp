#include "progress_meter.hpp"

#include <unistd.h>

#include <cinttypes>
#include <cmath>

namespace unmask_examples {
namespace {

std::string amount(double value, ProgressMeter::Unit unit) {
    char text[32];
    if (unit == ProgressMeter::Unit::items) {
        std::snprintf(text, sizeof text, "%.0f", value);
        return text;
    }
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (value >= 1024 && u < 4) {
        value /= 1024;
        ++u;
    }
    std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.1f %s", value, units[u]);
    return text;
}

std::string duration(double seconds) {
    char text[32];
    if (seconds < 90) std::snprintf(text, sizeof text, "%.0f s", seconds);
    else if (seconds < 5400) std::snprintf(text, sizeof text, "%.0f min", seconds / 60);
    else std::snprintf(text, sizeof text, "%.1f h", seconds / 3600);
    return text;
}

}  // namespace

ProgressMeter::ProgressMeter(std::string label, Unit unit, FILE* terminal, Sink sink)
    : label_(std::move(label)), unit_(unit), terminal_(terminal), sink_(std::move(sink)) {}

std::string ProgressMeter::describe(uint64_t done, uint64_t total, Unit unit, double seconds) {
    const double fraction = total ? double(done) / double(total) : 1.0;
    std::string text = std::to_string(int(std::floor(fraction * 100))) + "% " + amount(double(done), unit) + " of " +
                       amount(double(total), unit);
    if (seconds > 0 && done > 0) {
        const double rate = double(done) / seconds;
        text += ", " + amount(rate, unit) + (unit == Unit::bytes ? "/s" : " a second");
        if (done < total) text += ", " + duration(double(total - done) / rate) + " left";
        else text += ", " + duration(seconds);
    }
    return text;
}

void ProgressMeter::update(uint64_t done, uint64_t total) {
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - started_).count();
    if (terminal_) {
        if (seconds < 0.5) return;
        // At most ten redraws a second, and always the last.
        if (done < total && drawing_ && now - drawn_ < std::chrono::milliseconds(100)) return;
        drawn_ = now;
        drawing_ = true;
        std::fprintf(terminal_, "\r\033[K%s: %s", label_.c_str(), describe(done, total, unit_, seconds).c_str());
        std::fflush(terminal_);
        return;
    }
    const int tenths = total ? int(std::min<uint64_t>(10, done * 10 / total)) : 10;
    if (tenths <= tenths_written_ || !sink_) return;
    tenths_written_ = tenths;
    sink_(label_ + ": " + describe(done, total, unit_, seconds));
}

void ProgressMeter::finish() {
    if (terminal_ && drawing_) {
        std::fputs("\n", terminal_);
        std::fflush(terminal_);
    }
    drawing_ = false;
}

int32_t ProgressMeter::callback(uint64_t done, uint64_t total, void* meter) {
    static_cast<ProgressMeter*>(meter)->update(done, total);
    return 0;
}

bool stderr_is_terminal() { return isatty(fileno(stderr)) != 0; }

}  // namespace unmask_examples

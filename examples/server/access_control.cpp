#include "access_control.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>

namespace unmask_server {
namespace {

std::string trimmed(std::string_view text) {
    const auto begin = text.find_first_not_of(" \t\r\n");
    if (begin == std::string_view::npos) return {};
    const auto end = text.find_last_not_of(" \t\r\n");
    return std::string(text.substr(begin, end - begin + 1));
}

// Equal strings in time that depends only on their lengths.
bool same_secret(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    unsigned char diff = 0;
    for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

}  // namespace

ApiKeys ApiKeys::parse(const std::vector<std::string>& entries) {
    ApiKeys keys;
    std::set<std::string> names;
    for (const auto& entry : entries) {
        const auto colon = entry.find(':');
        std::string name = colon == std::string::npos ? "key-" + std::to_string(keys.keys_.size() + 1)
                                                      : trimmed(std::string_view(entry).substr(0, colon));
        std::string secret = trimmed(colon == std::string::npos ? entry : entry.substr(colon + 1));
        if (name.empty() || secret.empty())
            throw std::runtime_error("an API key entry has an empty name or key (entry " +
                                     std::to_string(keys.keys_.size() + 1) + ")");
        if (!names.insert(name).second) throw std::runtime_error("the API key name '" + name + "' is used twice");
        keys.keys_.emplace_back(std::move(name), std::move(secret));
    }
    return keys;
}

ApiKeys ApiKeys::load(const std::string& env_name, const std::string& file) {
    std::vector<std::string> entries;
    if (!env_name.empty()) {
        const char* value = std::getenv(env_name.c_str());
        if (value == nullptr) throw std::runtime_error("the API key variable " + env_name + " is not set");
        std::string_view rest(value);
        while (!rest.empty()) {
            const auto comma = rest.find(',');
            const std::string entry = trimmed(rest.substr(0, comma));
            if (!entry.empty()) entries.push_back(entry);
            rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        }
    }
    if (!file.empty()) {
        std::ifstream in(file);
        if (!in) throw std::runtime_error("cannot read the API key file '" + file + "'");
        std::string line;
        while (std::getline(in, line)) {
            const std::string entry = trimmed(line);
            if (!entry.empty() && entry[0] != '#') entries.push_back(entry);
        }
    }
    return parse(entries);
}

std::optional<std::string> ApiKeys::find(std::string_view presented) const {
    std::optional<std::string> found;
    for (const auto& [name, secret] : keys_)
        if (same_secret(secret, presented)) found = name;  // no early exit: every key is compared
    return found;
}

RateLimiter::RateLimiter(double per_second, double burst)
    : per_second_(per_second), burst_(burst > 0 ? burst : std::max(1.0, per_second)) {}

double RateLimiter::acquire(const std::string& client, Clock::time_point now) {
    if (per_second_ <= 0) return 0;
    std::lock_guard lock(mutex_);
    if (buckets_.size() >= max_clients) {
        // Forget the clients whose buckets have refilled: they are as new ones.
        for (auto it = buckets_.begin(); it != buckets_.end();) {
            const double idle = std::chrono::duration<double>(now - it->second.updated).count();
            it = it->second.tokens + idle * per_second_ >= burst_ ? buckets_.erase(it) : std::next(it);
        }
    }
    auto [it, inserted] = buckets_.try_emplace(client, Bucket{burst_, now});
    Bucket& bucket = it->second;
    if (!inserted) {
        const double elapsed = std::chrono::duration<double>(now - bucket.updated).count();
        bucket.tokens = std::min(burst_, bucket.tokens + std::max(0.0, elapsed) * per_second_);
        bucket.updated = now;
    }
    if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return 0;
    }
    return (1 - bucket.tokens) / per_second_;
}

}  // namespace unmask_server

#include "access_control.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
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

RateLimiter::RateLimiter(double per_second, double burst, size_t max_clients)
    : per_second_(per_second), burst_(burst > 0 ? burst : std::max(1.0, per_second)), max_clients_(std::max<size_t>(1, max_clients)) {}

RateLimiter::Bucket& RateLimiter::bucket(const std::string& client, Clock::time_point now) {
    if (const auto found = buckets_.find(client); found != buckets_.end()) {
        recency_.splice(recency_.begin(), recency_, found->second);
        Bucket& b = *found->second;
        const double elapsed = std::chrono::duration<double>(now - b.updated).count();
        b.tokens = std::min(burst_, b.tokens + std::max(0.0, elapsed) * per_second_);
        b.updated = now;
        return b;
    }
    if (buckets_.size() >= max_clients_) {
        buckets_.erase(recency_.back().client);
        recency_.pop_back();
    }
    recency_.push_front({client, burst_, now});
    buckets_.emplace(client, recency_.begin());
    return recency_.front();
}

double RateLimiter::acquire(const std::string& client, Clock::time_point now) {
    if (per_second_ <= 0) return 0;
    std::lock_guard lock(mutex_);
    Bucket& b = bucket(client, now);
    if (b.tokens >= 1) {
        b.tokens -= 1;
        return 0;
    }
    return (1 - b.tokens) / per_second_;
}

double RateLimiter::due(const std::string& client, Clock::time_point now) {
    if (per_second_ <= 0) return 0;
    std::lock_guard lock(mutex_);
    // A client without a bucket has a full one: asking takes no place in the table.
    if (buckets_.find(client) == buckets_.end()) return 0;
    const Bucket& b = bucket(client, now);
    return b.tokens >= 1 ? 0 : (1 - b.tokens) / per_second_;
}

size_t RateLimiter::clients() const {
    std::lock_guard lock(mutex_);
    return buckets_.size();
}

}  // namespace unmask_server

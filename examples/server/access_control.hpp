// Who may call the API and how often: API keys (a bearer token each, with a name for the logs)
// and a token-bucket rate limit per key.
#pragma once

#include <chrono>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace unmask_server {

class ApiKeys {
public:
    // Entries are "NAME:KEY" or "KEY" (named key-1, key-2, ... in order): comma-separated in the
    // environment variable `env_name`, one per line in `file` (blank lines and # comments
    // skipped). Either may be "". Throws std::runtime_error for an unreadable file, an unset
    // variable, an empty key or a name used twice.
    static ApiKeys load(const std::string& env_name, const std::string& file);
    static ApiKeys parse(const std::vector<std::string>& entries);

    bool empty() const { return keys_.empty(); }
    size_t size() const { return keys_.size(); }
    // The name of the key presented (compared in constant time per key), or nothing.
    std::optional<std::string> find(std::string_view presented) const;

private:
    std::vector<std::pair<std::string, std::string>> keys_;  // name, secret
};

// A token bucket per client: `per_second` tokens a second up to `burst`; each request takes one.
// At most `max_clients` buckets are kept: a new client beyond them takes the place of the one
// seen least recently (whose bucket has most likely refilled), so the state stays bounded however
// many addresses a client has.
class RateLimiter {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr size_t default_max_clients = 10000;
    RateLimiter(double per_second, double burst, size_t max_clients = default_max_clients);  // per_second 0: unlimited

    // 0 when the request may go ahead (its token taken), else the seconds until a token is due.
    double acquire(const std::string& client, Clock::time_point now = Clock::now());
    // The same without taking a token (nor a place for a client it has not seen): 0 when one is there.
    double due(const std::string& client, Clock::time_point now = Clock::now());
    size_t clients() const;

private:
    struct Bucket {
        std::string client;
        double tokens;
        Clock::time_point updated;
    };
    using Recency = std::list<Bucket>;  // the most recently seen first
    Bucket& bucket(const std::string& client, Clock::time_point now);  // refilled to `now`

    double per_second_, burst_;
    size_t max_clients_;
    mutable std::mutex mutex_;
    Recency recency_;
    std::unordered_map<std::string, Recency::iterator> buckets_;
};

}  // namespace unmask_server

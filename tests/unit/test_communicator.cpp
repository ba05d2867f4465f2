// The host communicator (lib/backend/communicator.hpp): every collective's result on every rank
// against a sequential computation, sums in rank order (the same bits on every rank), variable
// all-to-all, and the ways a group fails: mismatched calls, an aborted rank and an absent one all
// end in an error on every rank, never a hang.
#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend/communicator.hpp"
#include "core/error.hpp"

using namespace unmask;

namespace {

// Runs body(rank's communicator) on one thread per rank; returns each rank's error ("" if none).
std::vector<std::string> on_every_rank(std::vector<std::unique_ptr<Communicator>>& group,
                                       const std::function<void(Communicator&)>& body) {
    std::vector<std::string> errors(group.size());
    std::vector<std::thread> threads;
    for (size_t r = 0; r < group.size(); ++r)
        threads.emplace_back([&, r] {
            try {
                body(*group[r]);
            } catch (const Error& e) {
                errors[r] = std::string(status_name(int32_t(e.status()))) + ": " + e.what();
            }
        });
    for (std::thread& t : threads) t.join();
    return errors;
}

// Rank r's values: different per rank and position, with magnitudes that make the order of a
// float sum matter.
std::vector<float> values(int rank, size_t count) {
    std::mt19937 rng(uint32_t(100 + rank));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> v(count);
    for (float& x : v) x = u(rng) * (rank % 2 == 0 ? 1e4f : 1e-3f);
    return v;
}

}  // namespace

TEST_CASE("host collectives give every rank the sequential result, reductions summed in rank order") {
    for (int ranks : {1, 2, 3, 4}) {
        CAPTURE(ranks);
        auto group = make_host_communicators(ranks);
        const size_t count = 1000;
        std::vector<float> sum(count);  // in rank order, as documented
        for (size_t i = 0; i < count; ++i) {
            float s = values(0, count)[i];
            for (int r = 1; r < ranks; ++r) s += values(r, count)[i];
            sum[i] = s;
        }
        const auto per_rank = static_cast<size_t>(ranks);
        std::vector<std::vector<float>> reduced(per_rank), gathered(per_rank), scattered(per_rank), broadcast(per_rank);
        const auto errors = on_every_rank(group, [&](Communicator& c) {
            const int r = c.rank();
            CHECK(c.size() == ranks);
            std::vector<float> data = values(r, count);
            c.all_reduce_sum(data.data(), count);
            reduced[size_t(r)] = data;
            float one = float(r + 1);  // fewer values than ranks: some ranks sum none
            c.all_reduce_sum(&one, 1);
            CHECK(one == float(ranks * (ranks + 1) / 2));
            std::vector<float> all(size_t(ranks) * count);
            c.all_gather(values(r, count).data(), count, all.data());
            gathered[size_t(r)] = all;
            // reduce_scatter of a size() x chunk input: chunk c of the sum lands on rank c.
            const size_t chunk = 7;
            std::vector<float> in(size_t(ranks) * chunk), out(chunk);
            for (size_t i = 0; i < in.size(); ++i) in[i] = values(r, in.size())[i];
            c.reduce_scatter_sum(in.data(), chunk, out.data());
            scattered[size_t(r)] = out;
            std::vector<float> shared = values(r, 5);
            c.broadcast(shared.data(), shared.size(), ranks - 1);
            broadcast[size_t(r)] = shared;
            c.barrier();
        });
        for (int r = 0; r < ranks; ++r) {
            CAPTURE(r);
            CHECK(errors[size_t(r)].empty());
            CHECK(reduced[size_t(r)] == sum);
            for (int s = 0; s < ranks; ++s)
                CHECK(std::vector<float>(gathered[size_t(r)].begin() + s * count,
                                         gathered[size_t(r)].begin() + (s + 1) * count) == values(s, count));
            for (size_t i = 0; i < 7; ++i) {
                float s = values(0, size_t(ranks) * 7)[size_t(r) * 7 + i];
                for (int q = 1; q < ranks; ++q) s += values(q, size_t(ranks) * 7)[size_t(r) * 7 + i];
                CHECK(scattered[size_t(r)][i] == s);
            }
            CHECK(broadcast[size_t(r)] == values(ranks - 1, 5));
        }
    }
}

TEST_CASE("all_to_all moves segments of any size, none included, between every pair of ranks") {
    const int ranks = 3;
    auto group = make_host_communicators(ranks);
    // Rank s sends (s + 2 * d) % 4 values to rank d, the value 100 s + 10 d + i.
    const auto sends = [](int s, int d) { return size_t((s + 2 * d) % 4); };
    std::vector<std::vector<float>> received(ranks);
    const auto errors = on_every_rank(group, [&](Communicator& c) {
        const int r = c.rank();
        std::vector<size_t> send_counts(ranks), receive_counts(ranks);
        std::vector<float> in;
        for (int d = 0; d < ranks; ++d) {
            send_counts[size_t(d)] = sends(r, d);
            receive_counts[size_t(d)] = sends(d, r);
            for (size_t i = 0; i < sends(r, d); ++i) in.push_back(float(100 * r + 10 * d + int(i)));
        }
        std::vector<float> out(std::accumulate(receive_counts.begin(), receive_counts.end(), size_t(0)));
        c.all_to_all(in.data(), send_counts.data(), out.data(), receive_counts.data());
        received[size_t(r)] = out;
    });
    for (int d = 0; d < ranks; ++d) {
        CHECK(errors[size_t(d)].empty());
        std::vector<float> expected;
        for (int s = 0; s < ranks; ++s)
            for (size_t i = 0; i < sends(s, d); ++i) expected.push_back(float(100 * s + 10 * d + int(i)));
        CHECK(received[size_t(d)] == expected);
    }
}

TEST_CASE("a failing group ends with an error on every rank, never a hang") {
    SUBCASE("mismatched collectives are INTERNAL on every rank") {
        auto group = make_host_communicators(3);
        const auto errors = on_every_rank(group, [](Communicator& c) {
            std::vector<float> data(8, 1.0f);
            if (c.rank() == 1) c.all_reduce_sum(data.data(), 4);
            else c.all_reduce_sum(data.data(), 8);
        });
        for (const std::string& e : errors) CHECK(e.find("INTERNAL: mismatched collectives: rank 1 called all_reduce_sum (count 4") == 0);
    }
    SUBCASE("an all_to_all whose counts disagree is INTERNAL on every rank") {
        auto group = make_host_communicators(2);
        const auto errors = on_every_rank(group, [](Communicator& c) {
            std::vector<size_t> send = {1, 1}, receive = {1, c.rank() == 0 ? size_t(2) : size_t(1)};
            std::vector<float> in(2), out(3);
            c.all_to_all(in.data(), send.data(), out.data(), receive.data());
        });
        for (const std::string& e : errors) CHECK(e == "INTERNAL: mismatched collectives: all_to_all: rank 1 sends 1 values to rank 0, which expects 2");
    }
    SUBCASE("an aborted rank is DEVICE, naming it, on the ranks waiting for it and in later calls") {
        auto group = make_host_communicators(3);
        const auto errors = on_every_rank(group, [](Communicator& c) {
            std::vector<float> data(4, 1.0f);
            c.all_reduce_sum(data.data(), data.size());  // the group works
            if (c.rank() == 2) {
                c.abort("out of memory on device 2");
                c.barrier();  // later calls fail too
            } else {
                c.all_reduce_sum(data.data(), data.size());
            }
        });
        for (const std::string& e : errors)
            CHECK(e == "DEVICE: the device group has failed: rank 2 stopped: out of memory on device 2");
    }
    SUBCASE("a rank that never comes is DEVICE after the timeout, naming it") {
        auto group = make_host_communicators(3, std::chrono::milliseconds(200));
        const auto started = std::chrono::steady_clock::now();
        const auto errors = on_every_rank(group, [](Communicator& c) {
            if (c.rank() != 1) c.barrier();
        });
        CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
        CHECK(errors[0] == "DEVICE: the device group has failed: rank(s) 1 did not join barrier within 200 ms");
        CHECK(errors[2] == errors[0]);
        CHECK(errors[1].empty());
    }
    SUBCASE("a broadcast from a rank outside the group is INTERNAL on every rank") {
        auto group = make_host_communicators(2);
        const auto errors = on_every_rank(group, [](Communicator& c) {
            float x = 0;
            c.broadcast(&x, 1, 2);
        });
        for (const std::string& e : errors) CHECK(e == "INTERNAL: mismatched collectives: broadcast from rank 2 in a group of 2");
    }
    CHECK_THROWS_AS(make_host_communicators(0), Error);
}

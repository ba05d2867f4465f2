// The profiling backend (lib/backend/profiled_backend.hpp): it must see every call of every
// forward (none recorded away), time each kind, and change no result.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/profiled_backend.hpp"
#include "fixtures.hpp"
#include "model/forward.hpp"
#include "model/model.hpp"

using namespace unmask;

TEST_CASE("a profiled backend sees every call of every forward, times it and changes no result") {
    for (const std::string name : {"llada", "llada-moe"}) {
        CAPTURE(name);
        LoadOptions options;
        options.precision = Precision::fp32;
        const auto model = load_model(test_data_path("reference/" + name), options);
        const ModelSpec& spec = model->spec();
        const auto plain = make_cpu_backend(1), inner = make_cpu_backend(1);
        ProfiledBackend profiled(*inner);
        const std::vector<int32_t> tokens = {5, 9, 14, 3, 22, 7, 41, 2};
        const auto length = static_cast<int64_t>(tokens.size());
        Forward plain_forward(*model, *plain, {length, length}), profiled_forward(*model, profiled, {length, length});
        const CandidateParams greedy;
        const std::vector<ForwardSequence> batch = {{tokens, {}, &greedy, {}, 0.0}};

        const int forwards = 3;  // the same shape each time: a recording backend would replay the last two
        for (int i = 0; i < forwards; ++i) {
            const ForwardOutput expected = plain_forward.run(batch, true), got = profiled_forward.run(batch, true);
            REQUIRE(got.logits.size() == expected.logits.size());
            CHECK(std::ranges::equal(got.logits, expected.logits));
        }

        // The calls the forward makes, from the model's layers: q, k and v of every layer at once,
        // gate and up of every dense MLP and shared expert at once, two grouped calls per routed layer.
        const auto count = [&](Role role) {
            return std::ranges::count_if(model->weights(), [&](const Weight& w) { return w.role == role; });
        };
        const int64_t dense = count(Role::mlp_gate), shared = count(Role::shared_gate), routed = count(Role::router);
        CHECK(routed == (name == "llada-moe" ? 2 : 0));
        const std::map<std::string, CallTime>& times = profiled.times();
        const auto calls = [&](const std::string& kind) { return times.contains(kind) ? times.at(kind).calls : 0; };
        CHECK(calls("embedding") == forwards);
        CHECK(calls("attention") == forwards * spec.layers);
        CHECK(calls("matmuls") == forwards * (spec.layers + dense + shared));
        CHECK(calls("route") == forwards * routed);
        CHECK(calls("grouped_matmuls") == forwards * 2 * routed);
        CHECK(calls("copy_to_host") == forwards);  // the logits, one chunk
        CHECK_FALSE(times.contains("candidates"));

        double sum = 0;
        for (const auto& [kind, time] : times) {
            CHECK(time.calls > 0);
            CHECK(time.seconds >= 0);
            sum += time.seconds;
        }
        CHECK(profiled.total_seconds() == doctest::Approx(sum));
        CHECK(profiled.total_seconds() > 0);
        profiled.reset();
        CHECK(profiled.times().empty());
    }
}

// The header-only C++ wrapper (include/unmask.hpp): failures as exceptions with the status and
// message, buffers sized for any output, stream callbacks that are any callable (one that throws
// cancels its request, never the process), and handles that release themselves.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fixtures.hpp"
#include "unmask.hpp"

namespace {

std::string bundled_model() { return UNMASK_SOURCE_MODELS_DIR "/" UNMASK_BUNDLED_MODEL_NAME; }

}  // namespace

TEST_CASE("the C++ wrapper turns failures into exceptions that carry the status and the message") {
    try {
        unmask::api::Model::load("/nonexistent/unmask-model");
        FAIL("loading a missing directory must throw");
    } catch (const unmask::api::Error& e) {
        CHECK(e.status() == UNMASK_ERR_IO);
        CHECK(std::string(e.what()).find("unmask_model_load: IO: ") == 0);
        CHECK(std::string(e.what()).find("/nonexistent/unmask-model") != std::string::npos);
    }
    unmask::api::PlanParams plan_params;
    plan_params.memory_margin = 2.0;
    CHECK_THROWS_AS(unmask::api::plan(bundled_model(), plan_params), unmask::api::Error);
}

TEST_CASE("the C++ wrapper generates, encodes and decodes through the bundled model") {
    const auto model = unmask::api::Model::load(bundled_model());
    const auto tokenizer = model.tokenizer();
    const std::string text(3000, 'a');  // longer than the first buffer guess
    CHECK(tokenizer.decode(tokenizer.encode(text)) == text);
    unmask::api::GenerateParams params;  // the library's defaults: 128 positions
    const auto result = model.generate(tokenizer.encode_chat("Set a timer for 3 minutes for the tea."), params);
    CHECK(result.tokens.size() == 128);
    CHECK(tokenizer.decode(result.tokens, true).find("\"set_timer\"") != std::string::npos);
    CHECK(unmask::api::plan(bundled_model()).fits == 1);

    // A conversation with an earlier tool call, through the model's chat template.
    CHECK(tokenizer.has_chat_format());
    const std::vector<unmask::api::ChatMessage> messages = {
        {"user", "Set a timer for 3 minutes."},
        unmask::api::ChatMessage::calls(R"([{"function": {"name": "set_timer", "arguments": "{\"minutes\": 3}"}}])"),
        {"user", "Add 2 and 3."}};
    const std::string prompt = tokenizer.apply_chat_template(messages);
    CHECK(prompt == R"(<|user|>Set a timer for 3 minutes.<|assistant|>{"name": "set_timer", "arguments": {"minutes": 3}})"
                    R"(<|endoftext|><|user|>Add 2 and 3.<|assistant|>)");
    CHECK(tokenizer.encode_messages(messages) == tokenizer.encode(prompt));
    CHECK_THROWS_AS(tokenizer.apply_chat_template({{"system", "be brief"}}), unmask::api::Error);
}

TEST_CASE("a C++ stream callback that throws cancels its own request, and the others finish") {
    const auto model = unmask::api::Model::load(bundled_model());
    const auto tokenizer = model.tokenizer();
    unmask::api::Engine engine(model);
    unmask::api::GenerateParams params;  // 128 positions in the model's blocks of 16
    int seen = 0;
    auto throwing = engine.submit(tokenizer.encode_chat("Convert 12 EUR to GBP."), params,
                                  [](const unmask_stream_event&) -> bool { throw std::runtime_error("no"); });
    auto counting = engine.submit(tokenizer.encode_chat("Convert 12 EUR to GBP."), params, [&](const unmask_stream_event& e) {
        seen += e.kind == UNMASK_STREAM_BLOCK ? 1 : 0;
        return true;
    });
    CHECK(throwing.wait());
    CHECK(counting.wait(60.0));
    CHECK(throwing.info().finish_reason == UNMASK_FINISH_CANCELLED);
    CHECK(counting.info().finish_reason == UNMASK_FINISH_EOS);
    CHECK(seen >= 1);
    CHECK(counting.text().find("\"convert_currency\"") != std::string::npos);
    CHECK(engine.stats().requests_submitted == 2);
    CHECK(engine.metrics().find("unmask_num_requests_running") != std::string::npos);
    // A request dropped while it may still run is cancelled and freed by its destructor.
    { auto dropped = engine.submit(tokenizer.encode_chat("hello"), params); }
    // Assigning over a running request with a callback frees that request before its callback
    // (ASan in CI sees the other order).
    int calls = 0;
    auto reused = engine.submit(tokenizer.encode_chat("Convert 12 EUR to GBP."), params, [&](const unmask_stream_event&) {
        ++calls;
        return true;
    });
    reused = engine.submit(tokenizer.encode_chat("Convert 3967 EUR to GBP."), params, [&](const unmask_stream_event&) {
        ++calls;
        return true;
    });
    CHECK(reused.wait(60.0));
    CHECK(reused.info().finish_reason == UNMASK_FINISH_EOS);
    CHECK(calls >= 1);
}

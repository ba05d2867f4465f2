// The pure parts of unmask-server: the request parser, the streamed answer text, API keys and
// the rate limiter. The HTTP behaviour is tested end to end by test_server.py.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "access_control.hpp"
#include "answer_text.hpp"
#include "openai_request.hpp"
#include "openai_response.hpp"
#include "unmask.hpp"

using namespace unmask_server;

namespace {

std::string param_of(const std::string& body, Endpoint endpoint = Endpoint::completions) {
    try {
        parse_completion_request(body, endpoint);
    } catch (const ApiError& e) {
        CHECK(e.status == 400);
        return e.param;
    }
    FAIL("no error for " << body);
    return {};
}

struct TokenizerDeleter {
    void operator()(unmask_tokenizer* t) const { unmask_tokenizer_free(t); }
};

std::unique_ptr<unmask_tokenizer, TokenizerDeleter> bundled_tokenizer() {
    unmask_tokenizer* t = nullptr;
    REQUIRE(unmask_tokenizer_load(UNMASK_SOURCE_DIR "/models/toolcall-llada-3m/tokenizer.json", &t) == UNMASK_OK);
    return std::unique_ptr<unmask_tokenizer, TokenizerDeleter>(t);
}

std::vector<int32_t> encode(const unmask_tokenizer* t, const std::string& text) {
    return unmask::api::Tokenizer(t).encode(text);
}

}  // namespace

TEST_CASE("OpenAI fields map to generation parameters, steps defaulting to the length") {
    const auto r = parse_completion_request(
        R"({"prompt": "hi", "max_tokens": 48, "temperature": 0.5, "top_p": 0.9, "seed": 7, "stop": ["\n", "}"],
            "stream": true, "stream_options": {"include_usage": true}, "n": 1, "user": "u",
            "block_length": 12, "policy": "entropy", "threshold": 0.9, "cache_mode": "dual", "early_stop": true,
            "timeout_seconds": 2.5, "cache_precision": "bf16"})",
        Endpoint::completions);
    CHECK(r.prompt == "hi");
    CHECK(r.params.gen_length == 48);
    CHECK(r.params.steps == 48);
    CHECK(r.params.temperature == 0.5);
    CHECK(r.params.top_p == 0.9);
    CHECK(r.params.seed == 7);
    CHECK(r.params.block_length == 12);
    CHECK(r.params.policy == UNMASK_POLICY_ENTROPY);
    CHECK(r.params.threshold == 0.9);
    CHECK(r.params.cache_mode == UNMASK_CACHE_DUAL);
    CHECK(r.params.cache_precision == UNMASK_PRECISION_BF16);
    CHECK(r.params.early_stop == 1);
    CHECK(r.params.timeout_seconds == 2.5);
    CHECK(r.stop == std::vector<std::string>{"\n", "}"});
    CHECK(r.stream);
    CHECK(r.include_usage);

    const auto chat = parse_completion_request(
        R"({"messages": [{"role": "system", "content": "be brief"},
                         {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
            "max_completion_tokens": 16, "steps": 8})",
        Endpoint::chat_completions);
    CHECK(chat.system == "be brief");
    CHECK(chat.user == "ab");
    CHECK(chat.params.gen_length == 16);
    CHECK(chat.params.steps == 8);
    CHECK(parse_completion_request(R"({"prompt": [1, 2, 3]})", Endpoint::completions).prompt_ids ==
          std::vector<int32_t>{1, 2, 3});
}

TEST_CASE("each malformed request names its field") {
    CHECK(param_of("{").empty());
    CHECK(param_of(R"({"prompt": "x", "max_tokens": 1.5})") == "max_tokens");
    CHECK(param_of(R"({"prompt": "x", "max_tokens": 18446744073709551615})") == "max_tokens");
    CHECK(param_of(R"({"prompt": "x", "seed": -1})") == "seed");
    CHECK(param_of(R"({"prompt": "x", "temperature": "hot"})") == "temperature");
    CHECK(param_of(R"({"prompt": "x", "stop": ["a", "b", "c", "d", "e"]})") == "stop");
    CHECK(param_of(R"({"prompt": "x", "echo": true})") == "echo");
    CHECK(param_of(R"({"prompt": "x", "logprobs": 5})") == "logprobs");
    CHECK(param_of(R"({"prompt": "x", "messages": []})") == "messages");  // not a field of completions
    CHECK(param_of(R"({"prompt": "x", "stream_options": {"x": 1}})") == "stream_options.x");
    CHECK(param_of(R"({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]})",
                   Endpoint::chat_completions) == "messages[1]");
    CHECK(param_of(R"({"messages": [{"role": "system", "content": "a"}]})", Endpoint::chat_completions) == "messages");
    CHECK(param_of(R"({"messages": [{"role": "user"}]})", Endpoint::chat_completions) == "messages[0]");
    CHECK(param_of(R"({"prompt": "x"})", Endpoint::chat_completions) == "prompt");
}

TEST_CASE("streamed text only grows, holds back a possible stop string, and ends at EOS or the stop") {
    const auto tokenizer = bundled_tokenizer();
    const int32_t mask = 944, eos = 941;
    const std::vector<int32_t> answer = encode(tokenizer.get(), R"({"name": "set_timer"} END rest)");
    std::vector<int32_t> canvas(answer.size() + 4, mask);

    AnswerText text(tokenizer.get(), mask, eos, {" END"});
    std::string streamed;
    for (size_t committed = 0; committed <= answer.size(); ++committed) {
        for (size_t i = 0; i < committed; ++i) canvas[i] = answer[i];
        const std::string delta = text.advance(canvas.data(), int64_t(canvas.size()), false);
        streamed += delta;
        CHECK(streamed == text.text());
        CHECK(streamed.find(" E") == std::string::npos);  // never part of the stop string
    }
    CHECK(text.stopped());
    CHECK(text.ended());
    CHECK(streamed == R"({"name": "set_timer"})");
    CHECK(text.advance(canvas.data(), int64_t(canvas.size()), true).empty());  // nothing after the end

    // EOS ends the answer; masks after it do not matter; the final call releases everything.
    AnswerText plain(tokenizer.get(), mask, eos, {});
    std::vector<int32_t> ended = answer;
    ended.push_back(eos);
    ended.push_back(mask);
    CHECK(plain.advance(ended.data(), int64_t(ended.size()), false) == R"({"name": "set_timer"} END rest)");
    CHECK(plain.ended());
    CHECK_FALSE(plain.stopped());
    CHECK(plain.committed_tokens() == int64_t(answer.size()));
}

TEST_CASE("an incomplete UTF-8 character is held back until its bytes are committed") {
    const auto tokenizer = bundled_tokenizer();
    const int32_t mask = 944, eos = 941;
    // "é" is two bytes, 0xC3 0xA9: two byte-level tokens.
    const std::vector<int32_t> ids = encode(tokenizer.get(), "a\xC3\xA9");
    REQUIRE(ids.size() == 3);  // the bundled tokenizer never merged these bytes
    std::vector<int32_t> canvas(ids.size() + 2, mask);
    AnswerText text(tokenizer.get(), mask, eos, {});
    std::string streamed;
    for (size_t committed = 0; committed <= ids.size(); ++committed) {
        for (size_t i = 0; i < committed; ++i) canvas[i] = ids[i];
        streamed += text.advance(canvas.data(), int64_t(canvas.size()), false);
        CHECK(streamed.find("\xEF\xBF\xBD") == std::string::npos);
    }
    streamed += text.advance(canvas.data(), int64_t(canvas.size()), true);
    CHECK(streamed == "a\xC3\xA9");
}

TEST_CASE("API keys: names, constant-time lookup, refused entries") {
    const ApiKeys keys = ApiKeys::parse({"agent:sk-1", "sk-2", " batch : sk-3 "});
    CHECK(keys.size() == 3);
    CHECK(keys.find("sk-1") == std::optional<std::string>("agent"));
    CHECK(keys.find("sk-2") == std::optional<std::string>("key-2"));
    CHECK(keys.find("sk-3") == std::optional<std::string>("batch"));
    CHECK_FALSE(keys.find("sk-").has_value());
    CHECK_FALSE(keys.find("").has_value());
    CHECK_THROWS_WITH(ApiKeys::parse({"a:x", "a:y"}), doctest::Contains("used twice"));
    CHECK_THROWS_WITH(ApiKeys::parse({"a:"}), doctest::Contains("empty"));
    CHECK_THROWS_WITH(ApiKeys::load("", "/nonexistent/keys"), doctest::Contains("cannot read"));
}

TEST_CASE("the rate limiter is a token bucket per client") {
    RateLimiter limiter(2.0, 3.0);
    const auto t0 = RateLimiter::Clock::time_point{};
    for (int i = 0; i < 3; ++i) CHECK(limiter.acquire("a", t0) == 0.0);  // the burst
    CHECK(limiter.acquire("a", t0) == doctest::Approx(0.5));              // one token due in 1/2 s
    CHECK(limiter.acquire("b", t0) == 0.0);                               // another client
    CHECK(limiter.acquire("a", t0 + std::chrono::milliseconds(500)) == 0.0);
    CHECK(limiter.acquire("a", t0 + std::chrono::milliseconds(500)) > 0.0);
    CHECK(limiter.acquire("a", t0 + std::chrono::seconds(100)) == 0.0);  // refilled, capped at the burst
    CHECK(limiter.acquire("a", t0 + std::chrono::seconds(100)) == 0.0);
    CHECK(limiter.acquire("a", t0 + std::chrono::seconds(100)) == 0.0);
    CHECK(limiter.acquire("a", t0 + std::chrono::seconds(100)) > 0.0);
    RateLimiter unlimited(0, 0);
    for (int i = 0; i < 1000; ++i) REQUIRE(unlimited.acquire("a", t0) == 0.0);
}

TEST_CASE("error and chunk bodies carry OpenAI's fields and survive invalid UTF-8") {
    ApiError error(429, "slow down", "", "rate_limit_exceeded");
    CHECK(error_body(error) ==
          R"({"error":{"code":"rate_limit_exceeded","message":"slow down","param":null,"type":"rate_limit_error"}})");
    CompletionOutcome o;
    o.id = "chatcmpl-1";
    o.model = "m";
    const std::string chunk = chunk_body(Endpoint::chat_completions, o, "\xC3", "", false);
    CHECK(chunk.find("\"content\":\"\xEF\xBF\xBD\"") != std::string::npos);
    CHECK(chunk_body(Endpoint::chat_completions, o, "", "", true).find(R"("delta":{"role":"assistant"})") !=
          std::string::npos);
    CHECK(server_sent_event("{}") == "data: {}\n\n");
}

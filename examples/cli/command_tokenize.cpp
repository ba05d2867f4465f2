// `unmask tokenize` and `unmask detokenize`: a tokenizer.json from the command line.
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bounded_json.hpp"
#include "commands.hpp"
#include "engine_session.hpp"

namespace unmask_cli {
namespace {

struct TokenizerDeleter {
    void operator()(unmask_tokenizer* t) const noexcept { unmask_tokenizer_free(t); }
};

std::unique_ptr<unmask_tokenizer, TokenizerDeleter> load_tokenizer(const ParsedArgs& args) {
    auto path = args.value("tokenizer");
    unmask_service_config config{};
    if (!path && read_config_option(args, config)) path = config.weights_path;  // the model's tokenizer
    if (!path) path = default_model_path();
    unmask_tokenizer* tokenizer = nullptr;
    check(unmask_tokenizer_load(path->c_str(), &tokenizer));
    return std::unique_ptr<unmask_tokenizer, TokenizerDeleter>(tokenizer);
}

int run_tokenize(const ParsedArgs& args) {
    const auto tokenizer = load_tokenizer(args);
    const std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    int64_t count = 0;
    check(unmask_tokenize(tokenizer.get(), text.data(), static_cast<int64_t>(text.size()), args.has("add-special") ? 1 : 0,
                          nullptr, 0, &count));
    std::vector<int32_t> ids(static_cast<size_t>(count));
    check(unmask_tokenize(tokenizer.get(), text.data(), static_cast<int64_t>(text.size()), args.has("add-special") ? 1 : 0,
                          ids.data(), count, &count));
    std::cout << nlohmann::json(ids).dump() << "\n";
    return 0;
}

int run_detokenize(const ParsedArgs& args) {
    const auto tokenizer = load_tokenizer(args);
    const std::string input(std::istreambuf_iterator<char>(std::cin), {});
    const auto invalid = [](const std::string& why) { return CommandError(UNMASK_ERR_INVALID_ARGUMENT, "INVALID_ARGUMENT: " + why); };
    std::optional<nlohmann::json> parsed;
    try {
        parsed = unmask_examples::parse_bounded_json(input);
    } catch (const unmask_examples::JsonTooDeep&) {
        throw invalid("standard input must be a JSON array of token ids, not nested arrays");
    }
    if (!parsed || !parsed->is_array()) throw invalid("standard input is not a JSON array of token ids");
    // Every id is the tokenizer's: an id it lacks is an error here, where the library's decoder
    // would skip it (as it must for a model's padding rows).
    int64_t vocab_size = 0;
    check(unmask_tokenizer_vocab_size(tokenizer.get(), &vocab_size));
    std::vector<int32_t> ids;
    for (const nlohmann::json& id : *parsed) {
        if (!id.is_number_integer())
            throw invalid("token ids are whole numbers, got " + id.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        const bool is_unsigned = id.is_number_unsigned();
        if (!is_unsigned && id.get<int64_t>() < 0) throw invalid("token id " + id.dump() + " is negative");
        if (is_unsigned ? id.get<uint64_t>() >= uint64_t(vocab_size) : id.get<int64_t>() >= vocab_size)
            throw invalid("token id " + id.dump() + " is not in the tokenizer's vocabulary (ids 0.." +
                          std::to_string(vocab_size - 1) + ")");
        ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    int64_t length = 0;
    const int32_t skip = args.has("skip-special") ? 1 : 0;
    check(unmask_detokenize(tokenizer.get(), ids.data(), static_cast<int64_t>(ids.size()), skip, nullptr, 0, &length));
    std::string text(static_cast<size_t>(length), '\0');
    check(unmask_detokenize(tokenizer.get(), ids.data(), static_cast<int64_t>(ids.size()), skip, text.data(), length, &length));
    std::cout << text;
    return 0;
}

}  // namespace

const Command tokenize_command{{"tokenize",
                                "Read text on standard input and print its token ids as a JSON array.",
                                "",
                                0,
                                0,
                                {{"tokenizer", "PATH", "a tokenizer.json, a directory holding one or a GGUF file (default: $UNMASK_MODEL's or the bundled model's)"},
                                 {"config", "FILE", "a service configuration: the tokenizer of its model"},
                                 {"add-special", "", "apply the tokenizer's template (e.g. BOS)"}}},
                               run_tokenize};

const Command detokenize_command{{"detokenize",
                                  "Read a JSON array of token ids on standard input and print the text.",
                                  "",
                                  0,
                                  0,
                                  {{"tokenizer", "PATH", "a tokenizer.json, a directory holding one or a GGUF file (default: $UNMASK_MODEL's or the bundled model's)"},
                                   {"config", "FILE", "a service configuration: the tokenizer of its model"},
                                   {"skip-special", "", "leave special tokens out"}}},
                                 run_detokenize};

}  // namespace unmask_cli

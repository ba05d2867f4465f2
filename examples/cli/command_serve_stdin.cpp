// `unmask serve-stdin`: drives the engine from any language without a network. One JSON request
// per line on stdin, {"id": ..., "prompt": TEXT or "prompt_ids": [...], plus any generation
// parameter by its C API name}; one JSON result per line on stdout with the same id, in
// completion order. A malformed line (not JSON, nested deeper than 64 levels, a bad field) gets an
// error result with its id (or line number) and the others go on.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bounded_json.hpp"
#include "commands.hpp"
#include "decoding_options.hpp"
#include "engine_session.hpp"

namespace unmask_cli {
namespace {

struct InFlight {
    nlohmann::json id;
    unmask_request* request;
};

// Writes whole lines, one writer at a time.
class Output {
public:
    void line(const nlohmann::json& value) {
        std::lock_guard lock(mutex_);
        std::cout << value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n" << std::flush;
    }

private:
    std::mutex mutex_;
};

nlohmann::json error_result(const nlohmann::json& id, unmask_status status, const std::string& message) {
    return {{"id", id}, {"error", message}, {"status", unmask_status_string(status)}};
}

nlohmann::json result_of(const InFlight& f, const unmask_tokenizer* tokenizer) {
    unmask_request_info info{};
    info.struct_size = sizeof info;
    check(unmask_request_info_get(f.request, &info));
    int64_t count = 0;
    check(unmask_request_tokens(f.request, nullptr, 0, &count));
    std::vector<int32_t> tokens(static_cast<size_t>(count));
    check(unmask_request_tokens(f.request, tokens.data(), count, &count));
    nlohmann::json out = {{"id", f.id},
                          {"tokens", tokens},
                          {"finish_reason", finish_name(info.finish_reason)},
                          {"steps", info.steps},
                          {"forwards", info.forwards},
                          {"timings",
                           {{"queue_seconds", info.queue_seconds},
                            {"compute_seconds", info.compute_seconds},
                            {"first_block_seconds", info.first_block_seconds},
                            {"end_to_end_seconds", info.end_to_end_seconds}}}};
    if (info.finish_reason == UNMASK_FINISH_ERROR) out["status"] = unmask_status_string(info.error_status);
    if (tokenizer != nullptr) {
        int64_t length = 0;
        check(unmask_request_text(f.request, nullptr, 0, &length));
        std::string text(static_cast<size_t>(length), '\0');
        check(unmask_request_text(f.request, text.data(), length, &length));
        out["text"] = text;
    }
    return out;
}

std::vector<int32_t> prompt_of(const nlohmann::json& request, const unmask_tokenizer* tokenizer) {
    const bool text = request.contains("prompt"), ids = request.contains("prompt_ids");
    if (text == ids) throw UsageError("give either \"prompt\" (text) or \"prompt_ids\" (token ids)");
    if (ids) {
        const auto& list = request.at("prompt_ids");
        if (!list.is_array()) throw UsageError("\"prompt_ids\" must be an array of token ids");
        std::vector<int32_t> out;
        for (const auto& id : list) {
            if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
                throw UsageError("\"prompt_ids\" must hold token ids, got " + id.dump());
            out.push_back(static_cast<int32_t>(id.get<int64_t>()));
        }
        return out;
    }
    if (!request.at("prompt").is_string()) throw UsageError("\"prompt\" must be a string");
    if (tokenizer == nullptr)
        throw CommandError(UNMASK_ERR_UNSUPPORTED, "the model has no tokenizer; give \"prompt_ids\"");
    const std::string prompt = request.at("prompt").get<std::string>();
    int64_t count = 0;
    check(unmask_tokenize(tokenizer, prompt.data(), static_cast<int64_t>(prompt.size()), 1, nullptr, 0, &count));
    std::vector<int32_t> out(static_cast<size_t>(count));
    check(unmask_tokenize(tokenizer, prompt.data(), static_cast<int64_t>(prompt.size()), 1, out.data(), count, &count));
    return out;
}

int run_serve_stdin(const ParsedArgs& args) {
    EngineSession session = load_session_model(args, 8);
    start_engine(session);
    Output output;
    std::mutex mutex;
    std::condition_variable changed;
    std::list<InFlight> in_flight;
    bool input_done = false;

    // The writer: reports each request as it finishes (polled every millisecond), formatting and
    // writing outside the lock so the reader keeps submitting.
    std::thread writer([&] {
        for (;;) {
            std::vector<InFlight> finished;
            bool done = false;
            {
                std::unique_lock lock(mutex);
                for (auto it = in_flight.begin(); it != in_flight.end();) {
                    if (unmask_request_wait(it->request, 0) == UNMASK_OK) {
                        finished.push_back(*it);
                        it = in_flight.erase(it);
                    } else {
                        ++it;
                    }
                }
                done = input_done && in_flight.empty();
                if (finished.empty() && !done) changed.wait_for(lock, std::chrono::milliseconds(1));
            }
            for (const InFlight& f : finished) {
                try {
                    output.line(result_of(f, session.tokenizer));
                } catch (const CommandError& e) {
                    output.line(error_result(f.id, e.status, e.what()));
                }
                unmask_request_free(f.request);
            }
            if (done) return;
        }
    });

    std::string line;
    int64_t number = 0;
    while (std::getline(std::cin, line)) {
        ++number;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        nlohmann::json id = number;  // until the line names its own
        try {
            std::optional<nlohmann::json> parsed;
            try {
                parsed = unmask_examples::parse_bounded_json(line);
            } catch (const unmask_examples::JsonTooDeep& e) {
                throw UsageError("line " + std::to_string(number) + " nests deeper than " +
                                 std::to_string(e.max_nesting) + " levels");
            }
            if (!parsed) throw UsageError("line " + std::to_string(number) + " is not JSON");
            const nlohmann::json& request = *parsed;
            if (!request.is_object()) throw UsageError("a request must be a JSON object");
            if (request.contains("id")) id = request.at("id");
            unmask_generate_params params;
            check(unmask_generate_params_init(&params));
            apply_json_params(request, {"id", "prompt", "prompt_ids"}, params);
            const std::vector<int32_t> prompt = prompt_of(request, session.tokenizer);
            unmask_request* submitted = nullptr;
            // Backpressure: wait for room in the queue rather than refuse.
            check(unmask_engine_submit(session.engine.get(), &params, prompt.data(), static_cast<int64_t>(prompt.size()),
                                       3600.0, &submitted));
            std::lock_guard lock(mutex);
            in_flight.push_back({id, submitted});
        } catch (const UsageError& e) {
            output.line(error_result(id, UNMASK_ERR_INVALID_ARGUMENT, std::string("INVALID_ARGUMENT: ") + e.what()));
        } catch (const CommandError& e) {
            output.line(error_result(id, e.status, e.what()));
        }
    }
    {
        std::lock_guard lock(mutex);
        input_done = true;
    }
    writer.join();
    return 0;
}

}  // namespace

const Command serve_stdin_command{
    {"serve-stdin",
     "Serve JSON requests from stdin, one per line: {\"id\": ..., \"prompt\": TEXT or \"prompt_ids\": [...], and\n"
     "any generation parameter by its C API name (gen_length, steps, policy, temperature, seed, ...)}.\n"
     "Writes one JSON result per line with the same id, in completion order; bad lines get an error result.",
     "",
     0,
     0,
     with_engine_options({})},
    run_serve_stdin};

}  // namespace unmask_cli

// An engine on the model named by -m DIR or --config FILE (flags override the file), with its
// log going to --log-file (rotated at log_rotation_size_mb) when asked. Shared by the commands
// that generate.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "args.hpp"
#include "log_file.hpp"
#include "model_options.hpp"
#include "unmask.h"

namespace unmask_cli {

using unmask_examples::LogFile;

struct EngineDeleter {
    void operator()(unmask_engine* engine) const noexcept { unmask_engine_free(engine); }
};
using EngineHandle = std::unique_ptr<unmask_engine, EngineDeleter>;

struct EngineSession {
    std::unique_ptr<LogFile> log;  // outlives the model and the engine that write to it
    ModelHandle model;
    EngineHandle engine;
    const unmask_tokenizer* tokenizer = nullptr;
    unmask_model_description info{};
    unmask_engine_params engine_params{};  // what start_engine uses
};

// `options` plus -m/--model, --config, --precision, the memory options, --threads,
// --max-concurrent, --max-queued, --timeout, --log-file and --log-rotation-mb.
std::vector<OptionSpec> with_engine_options(std::vector<OptionSpec> options);
// Loads the model and prepares the engine's parameters; start_engine then starts it.
EngineSession load_session_model(const ParsedArgs& args, int32_t default_concurrency);
void start_engine(EngineSession& session);

// The service configuration named by --config, if any.
bool read_config_option(const ParsedArgs& args, unmask_service_config& config);

}  // namespace unmask_cli

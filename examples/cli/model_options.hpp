// Loading the model named on the command line, shared by the subcommands.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "args.hpp"
#include "unmask.h"

namespace unmask_cli {

// auto | fp32 | bf16 | fp16 -> UNMASK_PRECISION_*; UsageError otherwise.
int32_t parse_precision(const std::string& text);
const char* precision_name(int32_t precision);
// cpu | cuda -> UNMASK_BACKEND_*; UsageError otherwise.
int32_t parse_backend(const std::string& text);

struct ModelDeleter {
    void operator()(unmask_model* model) const noexcept { unmask_model_free(model); }
};
using ModelHandle = std::unique_ptr<unmask_model, ModelDeleter>;

// `options` followed by --budget, --memory-fraction and --margin, which set a memory budget;
// apply_memory_options copies them into unmask_model_params or unmask_plan_params (same fields).
std::vector<OptionSpec> with_memory_options(std::vector<OptionSpec> options);
template <typename Params>
void apply_memory_options(const ParsedArgs& args, Params& params);

// The model used when none is named: $UNMASK_MODEL, else the bundled model installed beside the
// binary (DATADIR/unmask/models/... of its prefix), else the bundled model of the source tree it was built
// from. UsageError naming the places tried when none exists.
std::string default_model_path();

// Loads `path`, showing its progress on stderr when it is a terminal or `progress` asks;
// CommandError with the library's message on failure.
ModelHandle load_model(const std::string& path, unmask_model_params params, bool progress);

}  // namespace unmask_cli

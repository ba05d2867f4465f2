// What the opaque handles of unmask.h are: thin owners of core objects.
#pragma once

#include <memory>

#include "engine/engine.hpp"
#include "memory/memory_ledger.hpp"
#include "model/model.hpp"
#include "tokenizer/tokenizer.hpp"
#include "unmask.h"

struct unmask_tokenizer {
    std::unique_ptr<unmask::Tokenizer> tokenizer;
};

struct unmask_model {
    std::unique_ptr<unmask::MemoryLedger> memory;  // the device's budget; outlives the model's reservation
    unmask::BackendKind backend = unmask::BackendKind::cpu;
    std::unique_ptr<unmask::Model> model;
    unmask_tokenizer tokenizer;  // empty when the model directory has no tokenizer.json
};

// An engine and the model it serves: the caller's (not owned) or, from a configuration file, its own.
struct unmask_engine {
    std::shared_ptr<const unmask_model> model;
    std::unique_ptr<unmask::Engine> engine;
};

// The caller's handle on a request; it keeps the model alive for the answer's text.
struct unmask_request {
    std::shared_ptr<unmask::Request> request;
    std::shared_ptr<const unmask_model> model;
};

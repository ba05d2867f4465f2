// What the opaque handles of unmask.h are: thin owners of core objects.
#pragma once

#include <memory>
#include <mutex>

#include "engine/engine.hpp"
#include "runtime/loaded_model.hpp"
#include "tokenizer/tokenizer.hpp"
#include "unmask.h"

struct unmask_tokenizer {
    std::shared_ptr<const unmask::Tokenizer> tokenizer;
};

struct unmask_model {
    std::unique_ptr<unmask::LoadedModel> loaded;
    unmask_tokenizer tokenizer;  // the loaded model's; empty when the directory has no tokenizer.json

    const unmask::Model& model() const noexcept { return loaded->model(); }
};

// An engine and the model it serves: the caller's (not owned) or, from a configuration file, its own.
struct unmask_engine {
    std::shared_ptr<const unmask_model> model;
    std::unique_ptr<unmask::Engine> engine;
};

// Where a request's stream events go: the caller's callback until the handle is freed (then the
// engine, which may still run the request for a moment, finds it detached).
struct unmask_stream_target {
    std::mutex mutex;
    unmask_stream_callback callback = nullptr;
    void* user_data = nullptr;
    bool detached = false;
};

// The caller's handle on a request; it keeps an engine-owned model alive for the answer's text.
struct unmask_request {
    std::shared_ptr<unmask::Request> request;
    std::shared_ptr<const unmask_model> model;
    std::shared_ptr<unmask_stream_target> stream;  // null without a stream callback
};

// What the opaque handles of unmask.h are: thin owners of core objects.
#pragma once

#include <memory>
#include <mutex>

#include "backend/cuda/cuda_backend.hpp"
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
    std::shared_ptr<const unmask::CudaWeights> cuda_weights;  // the CUDA backend's copy (null on the CPU)
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

// What the opaque handles of unmask.h are: thin owners of core objects.
#pragma once

#include <memory>

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

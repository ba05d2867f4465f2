// The C++ wrapper (include/unmask.hpp) in use: load the bundled model, answer one request
// synchronously, then several through an engine with a lambda that watches each committed block,
// and show how a failure arrives (an exception with the status and the library's message).
//
//   usage: unmask-example-cpp [MODEL_DIR]   (default: the bundled model of this source tree)
#include <cstdio>
#include <string>
#include <vector>

#include "unmask.hpp"

#ifndef EXAMPLE_DEFAULT_MODEL
#define EXAMPLE_DEFAULT_MODEL "models/toolcall-llada-3m"
#endif

int main(int argc, char** argv) try {
    const std::string model_dir = argc > 1 ? argv[1] : EXAMPLE_DEFAULT_MODEL;
    const unmask::api::Model model = unmask::api::Model::load(model_dir);
    const unmask::api::Tokenizer tokenizer = model.tokenizer();
    std::printf("model: %s, %llu parameters\n", model.info().architecture,
                static_cast<unsigned long long>(model.info().parameters_total));

    // Synchronous: one prompt, the default (exact) decoding: gen_length and steps 128, the model's
    // own blocks (the bundled model's diffusion blocks of 16), ending after the block that holds EOS.
    unmask::api::GenerateParams params;
    const auto answer = model.generate(tokenizer.encode_chat("Book a table at Sakura for 4 at 19:30."), params);
    std::printf("generate: %s (%lld steps)\n", tokenizer.decode(answer.tokens, true).c_str(),
                static_cast<long long>(answer.steps));

    // Concurrent: an engine, threshold decoding with the dual cache, a callback per block.
    unmask::api::EngineParams engine_params;
    engine_params.max_concurrent_requests = 4;
    unmask::api::Engine engine(model, engine_params);
    params.threshold = 0.9;
    params.cache_mode = UNMASK_CACHE_DUAL;
    const std::vector<std::string> prompts = {"Set a timer for 12 minutes for the oven.",
                                              "Send bob@example.com a note about the budget."};
    std::vector<int> blocks(prompts.size(), 0);
    std::vector<unmask::api::Request> requests;
    for (size_t i = 0; i < prompts.size(); ++i)
        requests.push_back(engine.submit(tokenizer.encode_chat(prompts[i]), params, [&blocks, i](const unmask_stream_event& e) {
            if (e.kind == UNMASK_STREAM_BLOCK) ++blocks[i];
            return true;  // continue
        }));
    for (size_t i = 0; i < requests.size(); ++i) {
        requests[i].wait();
        std::printf("engine: %s -> %s (%d blocks streamed)\n", prompts[i].c_str(), requests[i].text().c_str(), blocks[i]);
    }
    std::printf("stats: %llu requests, %llu forwards\n", static_cast<unsigned long long>(engine.stats().requests_submitted),
                static_cast<unsigned long long>(engine.stats().forwards_total));

    // A failure: an exception that says which call, the status and what was wrong.
    try {
        params.block_length = 12;  // a block diffusion model decodes in its own blocks (16 here) only
        model.generate(tokenizer.encode_chat("hi"), params);
    } catch (const unmask::api::Error& e) {
        std::printf("error: %s (status %d)\n", e.what(), static_cast<int>(e.status()));
    }
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "unmask-example-cpp: %s\n", e.what());
    return 1;
}

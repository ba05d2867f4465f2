/* A complete C99 program over unmask.h: plan the memory, load the model, start an engine, submit
 * several chat requests at once, stream their committed blocks, print each answer and the
 * engine's stats. With the bundled model the answers are JSON tool calls.
 *
 *   usage: unmask-example-c [MODEL_DIR]   (default: the bundled model of this source tree)
 *
 * Exit status 0 when every request produced an answer, 1 otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unmask.h"

#ifndef EXAMPLE_DEFAULT_MODEL
#define EXAMPLE_DEFAULT_MODEL "models/toolcall-llada-3m"
#endif

#define REQUESTS 3
#define GEN_LENGTH 128 /* a JSON answer is up to ~117 characters, one token each */
#define MAX_POSITIONS 256 /* a prompt of up to 128 characters and the answer */

static const char *const requests_text[REQUESTS] = {
    "What's the weather in Lisbon on May 14?",
    "Set a timer for 25 minutes for the pasta.",
    "Convert 3967 EUR to GBP.",
};

/* Reports a failed call with the library's message; returns non-zero when it failed. */
static int failed(unmask_status status, const char *what) {
    if (status == UNMASK_OK) return 0;
    fprintf(stderr, "%s: %s: %s\n", what, unmask_status_string(status), unmask_last_error());
    return 1;
}

/* Called on the engine's thread after each committed block of a request. */
static int32_t on_block(const unmask_stream_event *event, void *user_data) {
    int *blocks = (int *)user_data;
    if (event->kind == UNMASK_STREAM_BLOCK) ++*blocks;
    return 0; /* continue */
}

int main(int argc, char **argv) {
    const char *model_dir = argc > 1 ? argv[1] : EXAMPLE_DEFAULT_MODEL;
    unmask_plan_params plan_params;
    unmask_memory_plan plan;
    unmask_model_params model_params;
    unmask_engine_params engine_params;
    unmask_generate_params params;
    unmask_engine_stats stats;
    unmask_model *model = NULL;
    unmask_engine *engine = NULL;
    const unmask_tokenizer *tokenizer = NULL;
    unmask_request *requests[REQUESTS] = {NULL};
    int blocks[REQUESTS] = {0};
    int answered = 0, i;

    /* 1. Plan: what REQUESTS concurrent requests of up to MAX_POSITIONS positions need, before loading. */
    if (failed(unmask_plan_params_init(&plan_params), "plan params")) return 1;
    plan_params.max_concurrent = REQUESTS;
    plan_params.max_sequence_length = MAX_POSITIONS;
    memset(&plan, 0, sizeof plan);
    plan.struct_size = sizeof plan;
    if (failed(unmask_plan(model_dir, &plan_params, &plan), "unmask_plan")) return 1;
    printf("plan: weights %llu bytes, %d x %llu bytes of sequence state, scratch %llu bytes: %s\n",
           (unsigned long long)plan.weights, (int)plan.max_concurrent, (unsigned long long)plan.sequence_state,
           (unsigned long long)plan.scratch, plan.fits ? "fits" : "does not fit");

    /* 2. Load, verifying SHA256SUMS when the directory has one. */
    if (failed(unmask_model_params_init(&model_params), "model params")) return 1;
    if (failed(unmask_model_load(model_dir, &model_params, &model), "unmask_model_load")) return 1;
    if (failed(unmask_model_tokenizer(model, &tokenizer), "unmask_model_tokenizer")) goto done;

    /* 3. An engine that runs the requests together, one forward per step for all of them. */
    if (failed(unmask_engine_params_init(&engine_params), "engine params")) goto done;
    engine_params.max_concurrent_requests = REQUESTS;
    if (failed(unmask_engine_create(model, &engine_params, &engine), "unmask_engine_create")) goto done;

    /* 4. Submit every request: chat-formatted prompts, the model's own blocks (block_length 0: the
     *    bundled model's diffusion blocks of 16) with threshold decoding and the dual K/V cache, a
     *    stream callback per committed block, a deadline of 30 s each. Generation ends after the
     *    block that holds EOS. */
    if (failed(unmask_generate_params_init(&params), "generate params")) goto done;
    params.gen_length = GEN_LENGTH;
    params.steps = GEN_LENGTH;
    params.block_length = 0;
    params.threshold = 0.9;
    params.cache_mode = UNMASK_CACHE_DUAL;
    params.stream_callback = on_block;
    for (i = 0; i < REQUESTS; ++i) {
        int32_t prompt[256];
        int64_t prompt_length = 0;
        if (failed(unmask_tokenize_chat(tokenizer, NULL, requests_text[i], prompt, 256, &prompt_length), "tokenize"))
            goto done;
        if (prompt_length > 256) { /* the ids did not all fit: *count is the whole prompt's */
            fprintf(stderr, "request %d: the prompt has %lld tokens, more than the buffer's 256\n", i,
                    (long long)prompt_length);
            goto done;
        }
        params.stream_user_data = &blocks[i];
        if (failed(unmask_engine_submit(engine, &params, prompt, prompt_length, 30.0, &requests[i]), "submit")) goto done;
    }

    /* 5. Wait for each answer and print it. */
    for (i = 0; i < REQUESTS; ++i) {
        unmask_request_info info;
        char text[1024];
        int64_t length = 0;
        if (failed(unmask_request_wait(requests[i], -1), "wait")) goto done;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        if (failed(unmask_request_info_get(requests[i], &info), "request info")) goto done;
        if (failed(unmask_request_text(requests[i], text, (int64_t)sizeof text - 1, &length), "request text")) goto done;
        if (length > (int64_t)sizeof text - 1) length = (int64_t)sizeof text - 1;
        text[length] = '\0';
        printf("request %d: %s\n  answer: %s\n  %lld steps, %lld forwards, %d blocks streamed, %.3f s\n", i,
               requests_text[i], text, (long long)info.steps, (long long)info.forwards, blocks[i],
               info.end_to_end_seconds);
        if (info.finish_reason != UNMASK_FINISH_ERROR && length > 0) ++answered;
    }

    /* 6. The engine's counters. */
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    if (failed(unmask_engine_stats_get(engine, &stats), "engine stats")) goto done;
    printf("engine: %llu submitted, %llu finished with EOS, %llu forwards, peak memory %llu bytes\n",
           (unsigned long long)stats.requests_submitted, (unsigned long long)stats.finished[UNMASK_FINISH_EOS],
           (unsigned long long)stats.forwards_total, (unsigned long long)stats.memory_peak_in_use);

done:
    for (i = 0; i < REQUESTS; ++i) unmask_request_free(requests[i]);
    unmask_engine_free(engine);
    unmask_model_free(model);
    return answered == REQUESTS ? 0 : 1;
}

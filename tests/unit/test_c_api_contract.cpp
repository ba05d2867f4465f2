// The rules every C API call follows (docs/c-abi.md): statuses, last error, params
// structs, NULL handling. These go through the public header only.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <thread>

#include "unmask.h"

TEST_CASE("the library reports the ABI version its header declares") {
    CHECK(unmask_abi_version() == UNMASK_ABI_VERSION);
    CHECK((unmask_abi_version() >> 16) == UNMASK_ABI_VERSION_MAJOR);
    const std::string version = unmask_version_string();
    CHECK(version.find("cpu") != std::string::npos);
}

TEST_CASE("every status code has its frozen name") {
    CHECK(std::string(unmask_status_string(UNMASK_OK)) == "OK");
    CHECK(std::string(unmask_status_string(UNMASK_ERR_INVALID_ARGUMENT)) == "INVALID_ARGUMENT");
    CHECK(std::string(unmask_status_string(UNMASK_ERR_UNSUPPORTED)) == "UNSUPPORTED");
    CHECK(std::string(unmask_status_string(UNMASK_ERR_MODEL_FORMAT)) == "MODEL_FORMAT");
    CHECK(std::string(unmask_status_string(UNMASK_ERR_IO)) == "IO");
    CHECK(std::string(unmask_status_string(UNMASK_ERR_OUT_OF_BUDGET)) == "OUT_OF_BUDGET");
    CHECK(std::string(unmask_status_string(UNMASK_ERR_QUEUE_FULL)) == "QUEUE_FULL");
    CHECK(std::string(unmask_status_string(UNMASK_ERR_TIMEOUT)) == "TIMEOUT");
    CHECK(std::string(unmask_status_string(UNMASK_ERR_CANCELLED)) == "CANCELLED");
    CHECK(std::string(unmask_status_string(UNMASK_ERR_TOO_LONG)) == "TOO_LONG");
    CHECK(std::string(unmask_status_string(UNMASK_ERR_SHUTTING_DOWN)) == "SHUTTING_DOWN");
    CHECK(std::string(unmask_status_string(UNMASK_ERR_DEVICE)) == "DEVICE");
    CHECK(std::string(unmask_status_string(UNMASK_ERR_INTERNAL)) == "INTERNAL");
    CHECK(std::string(unmask_status_string(13)) == "UNKNOWN");
    CHECK(std::string(unmask_status_string(-1)) == "UNKNOWN");
}

TEST_CASE("params init fills the defaults and rejects NULL") {
    unmask_model_params params;
    std::memset(&params, 0xAB, sizeof params);
    REQUIRE(unmask_model_params_init(&params) == UNMASK_OK);
    CHECK(params.struct_size == sizeof(unmask_model_params));
    CHECK(params.precision == UNMASK_PRECISION_AUTO);
    CHECK(params.checksum_mode == UNMASK_CHECKSUM_IF_PRESENT);
    CHECK(params.backend == UNMASK_BACKEND_CPU);
    const bool no_callbacks = params.log_callback == nullptr && params.progress_callback == nullptr;
    CHECK(no_callbacks);
    CHECK(params.log_level == UNMASK_LOG_INFO);
    CHECK(params.device == 0);

    CHECK((unmask_model_params_init)(nullptr) == UNMASK_ERR_INVALID_ARGUMENT);  // the function, not the macro
    CHECK(std::string(unmask_last_error()).find("params is NULL") != std::string::npos);
}

TEST_CASE("model load names the NULL argument") {
    unmask_model* model = reinterpret_cast<unmask_model*>(0x1);
    CHECK(unmask_model_load(nullptr, nullptr, &model) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(model == nullptr);
    CHECK(std::string(unmask_last_error()).find("path is NULL") != std::string::npos);

    CHECK(unmask_model_load("/nonexistent", nullptr, nullptr) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("out_model is NULL") != std::string::npos);
}

TEST_CASE("a wrong struct_size is INVALID_ARGUMENT naming the field") {
    unmask_model_params params;
    REQUIRE(unmask_model_params_init(&params) == UNMASK_OK);
    unmask_model* model = nullptr;

    params.struct_size = 4;
    CHECK(unmask_model_load("/nonexistent", &params, &model) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("params->struct_size is 4") != std::string::npos);

    params.struct_size = sizeof(unmask_model_params) + 8;
    CHECK(unmask_model_load("/nonexistent", &params, &model) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(model == nullptr);
}

TEST_CASE("out-of-range params values are INVALID_ARGUMENT naming the field and value") {
    unmask_model* model = nullptr;
    struct Case {
        const char* field;
        void (*set)(unmask_model_params&);
    };
    const Case cases[] = {
        {"params->precision has the unknown value 9", [](unmask_model_params& p) { p.precision = 9; }},
        {"params->checksum_mode has the unknown value -1", [](unmask_model_params& p) { p.checksum_mode = -1; }},
        {"params->backend has the unknown value 7", [](unmask_model_params& p) { p.backend = 7; }},
        {"params->log_level has the unknown value 4", [](unmask_model_params& p) { p.log_level = 4; }},
        {"params->metadata_only has the unknown value 2", [](unmask_model_params& p) { p.metadata_only = 2; }},
        {"params->device must be a device index in 0..1023, got -1", [](unmask_model_params& p) { p.device = -1; }},
    };
    for (const Case& c : cases) {
        CAPTURE(c.field);
        unmask_model_params params;
        REQUIRE(unmask_model_params_init(&params) == UNMASK_OK);
        c.set(params);
        CHECK(unmask_model_load("/nonexistent", &params, &model) == UNMASK_ERR_INVALID_ARGUMENT);
        CHECK(std::string(unmask_last_error()).find(c.field) != std::string::npos);
    }
}

TEST_CASE("loading a missing directory is an IO error naming the path") {
    unmask_model* model = nullptr;
    CHECK(unmask_model_load("/nonexistent/model-dir", nullptr, &model) == UNMASK_ERR_IO);
    CHECK(model == nullptr);
    CHECK(std::string(unmask_last_error()).find("/nonexistent/model-dir") != std::string::npos);
}

TEST_CASE("the last error is per thread") {
    unmask_model* model = nullptr;
    REQUIRE(unmask_model_load("/nonexistent/main-thread", nullptr, &model) == UNMASK_ERR_IO);
    std::string other_thread_error;
    std::thread worker([&] {
        other_thread_error = unmask_last_error();  // nothing failed on this thread yet
        unmask_model_load("/nonexistent/worker-thread", nullptr, &model);
    });
    worker.join();
    CHECK(other_thread_error.empty());
    CHECK(std::string(unmask_last_error()).find("main-thread") != std::string::npos);
}

TEST_CASE("model info rejects NULL and a wrong struct_size") {
    unmask_model_description info{};
    info.struct_size = sizeof info;
    CHECK(unmask_model_info(nullptr, &info) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("model is NULL") != std::string::npos);
}

TEST_CASE("freeing a NULL model is a no-op") { unmask_model_free(nullptr); }

TEST_CASE("a model for a GPU that is not there is UNSUPPORTED before any weight is read") {
    unmask_model_params params;
    REQUIRE(unmask_model_params_init(&params) == UNMASK_OK);
    params.backend = UNMASK_BACKEND_CUDA;
    params.device = 1000;  // no machine has it; a CPU-only build refuses any GPU
    unmask_model* model = nullptr;
    // The directory does not exist either: the device is checked first, so no weight is touched.
    CHECK(unmask_model_load("/nonexistent/model-dir", &params, &model) == UNMASK_ERR_UNSUPPORTED);
    CHECK(model == nullptr);
    const std::string message = unmask_last_error();
    CHECK((message.find("no CUDA backend") != std::string::npos || message.find("CUDA device 1000") != std::string::npos));
}

TEST_CASE("the CPU backend always has one device and CUDA never fails to count") {
    int32_t count = -1;
    REQUIRE(unmask_backend_device_count(UNMASK_BACKEND_CPU, &count) == UNMASK_OK);
    CHECK(count == 1);
    count = -1;
    REQUIRE(unmask_backend_device_count(UNMASK_BACKEND_CUDA, &count) == UNMASK_OK);
    CHECK(count >= 0);
    CHECK(unmask_backend_device_count(5, &count) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(unmask_backend_device_count(UNMASK_BACKEND_CPU, nullptr) == UNMASK_ERR_INVALID_ARGUMENT);
}

namespace {

// Fills a buffer larger than the struct with a marker, initialises it as a `size`-byte struct
// through `init`, and returns whether every byte past `written` kept the marker.
template <typename Params, typename Init>
bool writes_only(Init init, size_t written) {
    alignas(Params) unsigned char buffer[sizeof(Params) + 32];
    std::memset(buffer, 0x5a, sizeof buffer);
    auto* params = reinterpret_cast<Params*>(buffer);
    if (init(params) != UNMASK_OK || params->struct_size != written) return false;
    for (size_t i = written; i < sizeof buffer; ++i)
        if (buffer[i] != 0x5a) return false;
    return true;
}

}  // namespace

TEST_CASE("a parameter initialiser writes only the struct its caller was built with") {
    // The sized form (what unmask_*_params_init expands to since ABI 1.4) writes the size given:
    // here a program built against ABI 1.0, whose unmask_model_params had 56 bytes.
    CHECK(writes_only<unmask_model_params>([](auto* p) { return unmask_model_params_init_sized(p, 56); }, 56));
    CHECK(writes_only<unmask_model_params>([](auto* p) { return unmask_model_params_init(p); },
                                           sizeof(unmask_model_params)));
    // The functions of the same names, which programs built before ABI 1.4 and FFI bindings call,
    // write the structs as ABI 1.3 defined them.
    CHECK(writes_only<unmask_model_params>([](auto* p) { return (unmask_model_params_init)(p); }, 80));
    CHECK(writes_only<unmask_plan_params>([](auto* p) { return (unmask_plan_params_init)(p); }, 72));
    CHECK(writes_only<unmask_generate_params>([](auto* p) { return (unmask_generate_params_init)(p); }, 216));
    CHECK(writes_only<unmask_engine_params>([](auto* p) { return (unmask_engine_params_init)(p); }, 80));
    unmask_model_params params;
    CHECK(unmask_model_params_init_sized(&params, 12) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(std::string(unmask_last_error()).find("size is 12") != std::string::npos);
    CHECK(unmask_model_params_init_sized(&params, sizeof params + 8) == UNMASK_ERR_INVALID_ARGUMENT);
    CHECK(unmask_engine_params_init_sized(nullptr, sizeof(unmask_engine_params)) == UNMASK_ERR_INVALID_ARGUMENT);
}

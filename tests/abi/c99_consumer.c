/* A C99 program that uses the public API for real. It is compiled with
 * -std=c99 -pedantic -Wall -Wextra -Werror, which proves unmask.h is plain C99, and run as a test. */
#include <stdio.h>
#include <string.h>

#include "unmask.h"

/* Compile-time checks in C99: a negative array size fails the build. */
typedef char assert_status_is_32_bits[sizeof(unmask_status) == 4 ? 1 : -1];
typedef char assert_params_start_with_size[offsetof(unmask_model_params, struct_size) == 0 ? 1 : -1];

static int failures = 0;

static void expect(int condition, const char *what) {
    if (!condition) {
        fprintf(stderr, "FAILED: %s\n", what);
        ++failures;
    }
}

static void count_logs(int32_t level, const char *message, void *user_data) {
    (void)level;
    (void)message;
    ++*(int *)user_data;
}

int main(int argc, char **argv) {
    unmask_model_params params;
    unmask_model *model = NULL;
    unmask_status status;
    int32_t devices = -1;
    int log_lines = 0;
    const char *missing = argc > 1 ? argv[1] : "/nonexistent/unmask-c99-consumer";

    expect((unmask_abi_version() >> 16) == UNMASK_ABI_VERSION_MAJOR, "library ABI major equals the header's");
    expect((long)(unmask_abi_version() & 0xffffu) >= (long)UNMASK_ABI_VERSION_MINOR, "library ABI minor is at least the header's");
    expect(strlen(unmask_version_string()) > 0, "version string is not empty");
    expect(strcmp(unmask_status_string(UNMASK_ERR_IO), "IO") == 0, "status string of IO");
    expect(strcmp(unmask_last_error(), "") == 0, "no error before any failing call");

    expect(unmask_model_params_init(&params) == UNMASK_OK, "params init succeeds");
    expect(params.struct_size == sizeof params, "params init sets struct_size");
    params.precision = UNMASK_PRECISION_BF16;
    params.log_callback = count_logs;
    params.log_user_data = &log_lines;

    status = unmask_model_load(missing, &params, &model);
    expect(status == UNMASK_ERR_IO, "loading a missing directory is UNMASK_ERR_IO");
    expect(model == NULL, "the out handle is NULL after a failure");
    expect(strstr(unmask_last_error(), missing) != NULL, "the last error names the missing directory");
    printf("expected failure: %s: %s\n", unmask_status_string(status), unmask_last_error());

    params.struct_size = 3;
    expect(unmask_model_load(missing, &params, &model) == UNMASK_ERR_INVALID_ARGUMENT, "bad struct_size");
    expect(strstr(unmask_last_error(), "struct_size") != NULL, "the last error names struct_size");

    expect(unmask_backend_device_count(UNMASK_BACKEND_CPU, &devices) == UNMASK_OK && devices == 1,
           "one CPU device");
    unmask_model_free(NULL);

    if (failures == 0) printf("c99 consumer: all checks passed\n");
    return failures == 0 ? 0 : 1;
}

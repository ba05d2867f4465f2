// REQUIRE_LAUNCHED(call): the launch succeeded, or the test stops with the host runtime's reason.
#pragma once

#include <doctest/doctest.h>

#include "cuda_on_host.hpp"

#define REQUIRE_LAUNCHED(call)                               \
    do {                                                     \
        const cudaError_t status_ = (call);                  \
        INFO("fault: ", cuda_on_host::last_fault());         \
        REQUIRE(status_ == cudaSuccess);                     \
    } while (false)

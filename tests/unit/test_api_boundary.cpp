// The machinery behind every exported function (capi/boundary.hpp): exceptions become statuses,
// and params structs of older, smaller sizes are read with defaults for the fields they lack.
#include <doctest/doctest.h>

#include <new>
#include <stdexcept>
#include <string>

#include "boundary.hpp"

using namespace unmask;
using namespace unmask::capi;

TEST_CASE("guarded turns each kind of exception into its status and message") {
    CHECK(guarded("f", [] {}) == UNMASK_OK);

    CHECK(guarded("load", [] { fail(Status::model_format, "tensor '{}' is short", "wte"); }) ==
          UNMASK_ERR_MODEL_FORMAT);
    CHECK(std::string(unmask_last_error()) == "load: tensor 'wte' is short");

    CHECK(guarded("alloc", [] { throw std::bad_alloc(); }) == UNMASK_ERR_OUT_OF_BUDGET);
    CHECK(std::string(unmask_last_error()) == "alloc: out of host memory");

    CHECK(guarded("bug", [] { throw std::logic_error("broken invariant"); }) == UNMASK_ERR_INTERNAL);
    CHECK(std::string(unmask_last_error()) == "bug: internal error: broken invariant");

    CHECK(guarded("odd", [] { throw 42; }) == UNMASK_ERR_INTERNAL);
}

namespace {
// A params struct in its second version: v1 ended after `a`.
struct ParamsV2 {
    uint32_t struct_size;
    int32_t a;
    int32_t b_added_in_v2;
};
constexpr size_t v1_size = offsetof(ParamsV2, b_added_in_v2);
}  // namespace

TEST_CASE("params of an older, smaller version keep the defaults of the fields they lack") {
    const ParamsV2 defaults{sizeof(ParamsV2), 1, 2};
    ParamsV2 from_old_caller{static_cast<uint32_t>(v1_size), 10, 999};  // b is garbage beyond struct_size
    const ParamsV2 read = read_params(&from_old_caller, "params", defaults, v1_size);
    CHECK(read.a == 10);
    CHECK(read.b_added_in_v2 == 2);

    const ParamsV2 from_null = read_params<ParamsV2>(nullptr, "params", defaults, v1_size);
    CHECK(from_null.a == 1);

    ParamsV2 too_small{2, 0, 0};
    CHECK_THROWS_AS(read_params(&too_small, "params", defaults, v1_size), Error);
}

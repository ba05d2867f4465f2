// Where the model fixtures written by tests/fixtures/make_model_fixtures.py live (CTest runs
// that script first and passes the directory in UNMASK_FIXTURES).
#pragma once

#include <cstdlib>
#include <string>

#include <doctest/doctest.h>

inline std::string fixture_path(const std::string& relative) {
    const char* root = std::getenv("UNMASK_FIXTURES");
    REQUIRE_MESSAGE(root != nullptr, "UNMASK_FIXTURES is not set: run the tests through ctest");
    return std::string(root) + "/" + relative;
}

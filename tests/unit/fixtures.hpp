// Where the generated test data lives: CTest runs tests/fixtures/make_model_fixtures.py (into
// fixtures/) and tests/reference/make_reference_fixtures.py (into reference/) first and passes
// their parent directory in UNMASK_TEST_DATA.
#pragma once

#include <cstdlib>
#include <string>

#include <doctest/doctest.h>

inline std::string test_data_path(const std::string& relative) {
    const char* root = std::getenv("UNMASK_TEST_DATA");
    REQUIRE_MESSAGE(root != nullptr, "UNMASK_TEST_DATA is not set: run the tests through ctest");
    return std::string(root) + "/" + relative;
}

inline std::string fixture_path(const std::string& relative) { return test_data_path("fixtures/" + relative); }

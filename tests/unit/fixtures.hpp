// Where the generated test data lives: CTest runs tests/fixtures/make_model_fixtures.py (into
// fixtures/) and tests/reference/make_reference_fixtures.py (into reference/) first and passes
// their parent directory in UNMASK_TEST_DATA.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include <unistd.h>

#include <doctest/doctest.h>

inline std::string test_data_path(const std::string& relative) {
    const char* root = std::getenv("UNMASK_TEST_DATA");
    REQUIRE_MESSAGE(root != nullptr, "UNMASK_TEST_DATA is not set: run the tests through ctest");
    return std::string(root) + "/" + relative;
}

inline std::string fixture_path(const std::string& relative) { return test_data_path("fixtures/" + relative); }

// A directory of its own under the system's temporary directory (the name and the process id
// make it unique), removed with everything in it when the object goes, a failed assertion included.
class ScratchDirectory {
public:
    explicit ScratchDirectory(const std::string& name)
        : path_(std::filesystem::temp_directory_path() / ("unmask-" + name + "-" + std::to_string(::getpid()))) {
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~ScratchDirectory() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    ScratchDirectory(const ScratchDirectory&) = delete;
    ScratchDirectory& operator=(const ScratchDirectory&) = delete;

    const std::filesystem::path& path() const noexcept { return path_; }

private:
    std::filesystem::path path_;
};

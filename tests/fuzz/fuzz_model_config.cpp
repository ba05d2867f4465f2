// libFuzzer target: arbitrary bytes as config.json, through the strict JSON parser, the
// architecture bindings and the expected-tensor list. Must parse or throw unmask::Error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.hpp"
#include "format/config_reader.hpp"
#include "format/strict_json.hpp"
#include "model/architecture.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const std::string_view text(reinterpret_cast<const char*>(data), size);
        const auto root = unmask::parse_json_rejecting_duplicates(text, "config.json");
        const unmask::ModelSpec spec = unmask::read_model_spec(unmask::ConfigReader(root, "config.json"));
        const auto tensors = unmask::expected_tensors(spec);
        if (tensors.empty()) __builtin_trap();  // every architecture has an embedding at least
    } catch (const unmask::Error&) {
    }
    return 0;
}

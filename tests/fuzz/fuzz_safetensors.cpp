// libFuzzer target: arbitrary bytes as a whole safetensors file. Any input must either parse or
// throw unmask::Error; nothing may crash, hang or leak.
#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "format/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const auto header = unmask::parse_safetensors_file(data, size, "fuzz");
        // Touch what a loader would: every tensor's bytes lie inside the input.
        for (const auto& tensor : header.tensors) {
            if (header.data_offset + tensor.end > size) __builtin_trap();
        }
    } catch (const unmask::Error&) {
    }
    return 0;
}

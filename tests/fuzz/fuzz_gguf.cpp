// libFuzzer target: arbitrary bytes as a whole GGUF file. Any input must either parse or throw
// unmask::Error; nothing may crash, hang or leak. Every typed read of every key runs, as a
// loader's would, then the model's spec and the tokenizer are read from the metadata.
#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "format/gguf.hpp"
#include "model/gguf_model.hpp"
#include "tokenizer/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const auto header = unmask::parse_gguf_file(data, size, "fuzz");
        for (const auto& tensor : header.tensors)
            if (header.data_offset + tensor.end > size) __builtin_trap();
        for (const auto& entry : header.metadata) {
            auto attempt = [](auto&& read) {
                try {
                    read();
                } catch (const unmask::Error&) {
                }
            };
            attempt([&] { header.integer(entry.key); });
            attempt([&] { header.number(entry.key); });
            attempt([&] { header.boolean(entry.key); });
            attempt([&] { header.string(entry.key); });
            attempt([&] { header.strings(entry.key); });
            attempt([&] { header.integers(entry.key); });
            attempt([&] { header.numbers(entry.key); });
        }
        try {
            unmask::read_gguf_model_spec(header);
        } catch (const unmask::Error&) {
        }
        unmask::Tokenizer::from_gguf(header);
    } catch (const unmask::Error&) {
    }
    return 0;
}

// SHA-256 (FIPS 180-4), streaming. Used to verify model files against a SHA256SUMS manifest.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace unmask {

class Sha256 {
public:
    Sha256();
    void update(const uint8_t* data, size_t size) noexcept;
    // Finishes and returns the digest as 64 lowercase hex digits. The object is then spent.
    std::string hex_digest();

private:
    void compress(const uint8_t* block) noexcept;
    std::array<uint32_t, 8> state_;
    std::array<uint8_t, 64> buffer_{};
    size_t buffered_ = 0;
    uint64_t total_bytes_ = 0;
};

}  // namespace unmask

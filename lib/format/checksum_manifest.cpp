#include "format/checksum_manifest.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <system_error>

#include "core/error.hpp"
#include "core/mapped_file.hpp"
#include "core/sha256.hpp"
#include "format/tensor_catalog.hpp"

namespace unmask {

std::map<std::string, std::string> parse_checksum_manifest(std::string_view text, std::string_view label) {
    std::map<std::string, std::string> manifest;
    size_t line_number = 0;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        start = end + 1;
        ++line_number;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) continue;
        const bool hex_ok = line.size() > 66 && std::all_of(line.begin(), line.begin() + 64, [](char c) {
            return std::isxdigit(static_cast<unsigned char>(c)) != 0;
        });
        if (!hex_ok || line[64] != ' ' || (line[65] != ' ' && line[65] != '*'))
            fail(Status::model_format, "{}: line {} is not '<sha256 hex>  <file name>'", label, line_number);
        std::string digest(line.substr(0, 64));
        for (char& c : digest) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::string name(line.substr(66));
        require_plain_file_name(name, label);
        if (!manifest.emplace(name, digest).second)
            fail(Status::model_format, "{}: '{}' is listed twice", label, name);
    }
    return manifest;
}

void verify_checksums(const std::filesystem::path& directory, const std::map<std::string, std::string>& manifest,
                      const ProgressFn& progress, uint64_t progress_base, uint64_t progress_total) {
    constexpr size_t chunk = 8u << 20;  // progress and cancellation granularity
    uint64_t done = progress_base;
    for (const auto& [name, expected] : manifest) {
        const auto path = directory / name;
        std::error_code ec;
        if (!std::filesystem::exists(path, ec))
            fail(Status::io, "'{}' is listed in {} but does not exist", name, checksum_manifest_name);
        const MappedFile file(path);
        Sha256 hash;
        for (size_t offset = 0; offset < file.size(); offset += chunk) {
            const size_t size = std::min(chunk, file.size() - offset);
            hash.update(file.data() + offset, size);
            done += size;
            if (progress && !progress(done, progress_total))
                fail(Status::cancelled, "cancelled while verifying '{}'", name);
        }
        const std::string actual = hash.hex_digest();
        if (actual != expected)
            fail(Status::model_format, "checksum mismatch for '{}': {} expects {}, the file hashes to {}", name,
                 checksum_manifest_name, expected, actual);
    }
}

}  // namespace unmask

// A checksum manifest in the format `sha256sum` writes ("<64 hex>  <name>", or " *<name>" for
// binary mode), usually the file SHA256SUMS in a model directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "core/progress.hpp"

namespace unmask {

inline constexpr const char* checksum_manifest_name = "SHA256SUMS";

// name -> lowercase hex digest. Throws MODEL_FORMAT for a malformed line (naming its number).
std::map<std::string, std::string> parse_checksum_manifest(std::string_view text, std::string_view label);

// Streams every listed file through SHA-256, reporting progress in bytes on top of
// `progress_base` (of `progress_total`). Throws MODEL_FORMAT naming the first file whose digest
// differs, IO for a missing file, CANCELLED when the progress callback asks to stop.
void verify_checksums(const std::filesystem::path& directory, const std::map<std::string, std::string>& manifest,
                      const ProgressFn& progress, uint64_t progress_base, uint64_t progress_total);

}  // namespace unmask

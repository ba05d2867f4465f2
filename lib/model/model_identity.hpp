// What tells one version of a model's files from another, for an operator watching a rollout
// (unmask_model_info's fingerprint, the server's /v1/models and /metrics): with a checksum
// manifest, "sha256sums:" and the SHA-256 of its entries for the files loaded (which loading
// verified, so it stands for their whole contents); without one, "headers:" and the SHA-256 of
// config.json and each weight file's name, size and header (tensor names, types, shapes and
// offsets, not the weights themselves, so that it costs no read of the data).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace unmask {

struct IdentifyingFile {
    std::string name;
    uint64_t size = 0;
    std::span<const uint8_t> header;  // the bytes that describe its tensors (all of config.json)
};

std::string model_fingerprint(const std::map<std::string, std::string>& verified_manifest,
                              const std::vector<IdentifyingFile>& files);

}  // namespace unmask

#include "model/model_identity.hpp"

#include <algorithm>

#include "core/sha256.hpp"

namespace unmask {

std::string model_fingerprint(const std::map<std::string, std::string>& verified_manifest,
                              const std::vector<IdentifyingFile>& files) {
    Sha256 hash;
    const auto add = [&](const std::string& text) {
        hash.update(reinterpret_cast<const uint8_t*>(text.data()), text.size() + 1);  // with its NUL: no ambiguity
    };
    if (!verified_manifest.empty()) {
        for (const auto& [name, digest] : verified_manifest) {  // sorted by name
            add(name);
            add(digest);
        }
        return "sha256sums:" + hash.hex_digest();
    }
    std::vector<const IdentifyingFile*> sorted;
    for (const IdentifyingFile& file : files) sorted.push_back(&file);
    std::ranges::sort(sorted, {}, &IdentifyingFile::name);
    for (const IdentifyingFile* file : sorted) {
        add(file->name);
        add(std::to_string(file->size));
        add(std::to_string(file->header.size()));
        hash.update(file->header.data(), file->header.size());
    }
    return "headers:" + hash.hex_digest();
}

}  // namespace unmask

// A read-only memory map of a whole file. Weights are used straight from the map where their
// dtype and alignment allow it, so loading does not double resident memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace unmask {

class MappedFile {
public:
    // Maps `path`; throws Error(IO) naming the file when it cannot be opened or mapped.
    explicit MappedFile(const std::filesystem::path& path);
    ~MappedFile();
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const noexcept { return data_; }
    size_t size() const noexcept { return size_; }

private:
    void release() noexcept;
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

// The pages wholly inside [begin, begin + size) of a read-only file map leave resident memory (a
// tensor converted into a buffer of its own is not read from the map again); a later touch reads
// them from the file again.
void drop_mapped_pages(const uint8_t* begin, size_t size) noexcept;

}  // namespace unmask

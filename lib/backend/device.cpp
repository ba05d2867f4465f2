#include "backend/device.hpp"

#include <unistd.h>

#include "core/error.hpp"

#ifdef UNMASK_WITH_CUDA
#include "backend/cuda/cuda_runtime_info.hpp"
#endif

namespace unmask {
namespace {

uint64_t system_memory_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) fail(Status::device, "the system does not report its memory size");
    return uint64_t(pages) * uint64_t(page_size);
}

}  // namespace

bool has_device(BackendKind kind, int device) {
    if (kind == BackendKind::cpu) return true;
#ifdef UNMASK_WITH_CUDA
    return device >= 0 && device < cuda::device_count();
#else
    (void)device;
    return false;
#endif
}

void require_device(BackendKind kind, int device) {
    if (has_device(kind, device)) return;
#ifdef UNMASK_WITH_CUDA
    fail(Status::unsupported, "CUDA device {} is not there ({} visible); load the model for the CPU", device,
         cuda::device_count());
#else
    fail(Status::unsupported, "this build of unmask has no CUDA backend; load the model for the CPU");
#endif
}

uint64_t device_memory_bytes(BackendKind kind, int device) {
    if (kind == BackendKind::cpu) return system_memory_bytes();
#ifdef UNMASK_WITH_CUDA
    if (has_device(kind, device)) return cuda::device_memory(device).total_bytes;
#endif
    fail(Status::unsupported, "there is no CUDA device {} to size a memory fraction by; give a byte budget "
                              "(or, when planning, the device's memory)", device);
}

}  // namespace unmask

#include "backend/cuda/device_loss.hpp"

#include <atomic>
#include <map>
#include <mutex>

namespace unmask::cuda {
namespace {

std::mutex& lost_mutex() {
    static std::mutex mutex;
    return mutex;
}
std::map<int, std::string>& lost_devices() {  // device -> the error that lost it
    static auto* devices = new std::map<int, std::string>();  // never freed: backends may outlive statics
    return *devices;
}
std::atomic<bool> any_lost{false};  // every backend call asks: no lock until a device is lost

}  // namespace

// The errors the CUDA runtime documents as leaving "the process in an inconsistent state":
// "any further CUDA work will return the same error", so the process must be restarted.
bool corrupts_context(cudaError_t error) noexcept {
    switch (error) {
        case cudaErrorECCUncorrectable:
        case cudaErrorNvlinkUncorrectable:
        case cudaErrorIllegalAddress:
        case cudaErrorLaunchTimeout:
        case cudaErrorAssert:
        case cudaErrorHardwareStackError:
        case cudaErrorIllegalInstruction:
        case cudaErrorMisalignedAddress:
        case cudaErrorInvalidAddressSpace:
        case cudaErrorInvalidPc:
        case cudaErrorLaunchFailure: return true;
        default: return false;
    }
}

void mark_device_lost(int device, const std::string& reason) {
    std::lock_guard lock(lost_mutex());
    lost_devices().try_emplace(device, reason);
    any_lost.store(true, std::memory_order_release);
}

std::optional<std::string> device_lost(int device) {
    if (!any_lost.load(std::memory_order_acquire)) return std::nullopt;
    std::lock_guard lock(lost_mutex());
    const auto it = lost_devices().find(device);
    if (it == lost_devices().end()) return std::nullopt;
    return it->second;
}

}  // namespace unmask::cuda

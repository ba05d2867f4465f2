#include "core/error.hpp"

namespace unmask {

const char* status_name(int32_t status) noexcept {
    switch (static_cast<Status>(status)) {
        case Status::ok: return "OK";
        case Status::invalid_argument: return "INVALID_ARGUMENT";
        case Status::unsupported: return "UNSUPPORTED";
        case Status::model_format: return "MODEL_FORMAT";
        case Status::io: return "IO";
        case Status::out_of_budget: return "OUT_OF_BUDGET";
        case Status::queue_full: return "QUEUE_FULL";
        case Status::timeout: return "TIMEOUT";
        case Status::cancelled: return "CANCELLED";
        case Status::too_long: return "TOO_LONG";
        case Status::shutting_down: return "SHUTTING_DOWN";
        case Status::device: return "DEVICE";
        case Status::internal: return "INTERNAL";
    }
    return "UNKNOWN";
}

}  // namespace unmask

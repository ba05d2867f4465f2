// unmask_backend_*: what devices this build and machine offer.
#include "boundary.hpp"
#include "build_info.hpp"

#ifdef UNMASK_WITH_CUDA
#include "backend/cuda/cuda_runtime_info.hpp"
#endif

using namespace unmask;
using namespace unmask::capi;

extern "C" unmask_status unmask_backend_device_count(int32_t backend, int32_t* count) {
    return guarded(__func__, [&] {
        require_not_null(count, "count");
        require_one_of(backend, {UNMASK_BACKEND_CPU, UNMASK_BACKEND_CUDA}, "backend");
        if (backend == UNMASK_BACKEND_CPU) {
            *count = 1;
            return;
        }
#ifdef UNMASK_WITH_CUDA
        *count = cuda::device_count();
#else
        *count = 0;
#endif
    });
}

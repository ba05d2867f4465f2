// A service configuration's model and engine keys applied to the parameters of unmask_model_load
// and unmask_engine_create, as unmask_engine_create_from_config applies them, for hosts that load
// the model and start the engine themselves (the command's --config, unmask-server).
#pragma once

#include "unmask.h"

namespace unmask_examples {

// With several GPUs `model.device_ids` points into `c`, which must then outlive the load; a host
// that overrides the backend or the devices clears it.
inline void apply_service_config(const unmask_service_config& c, unmask_model_params& model,
                                 unmask_engine_params& engine) {
    model.precision = c.precision;
    model.quantize_embeddings = c.quantize_embeddings;
    model.memory_fraction = c.memory_fraction;
    model.log_level = c.log_level;
    if (c.gpu_device_count > 0) {
        model.backend = UNMASK_BACKEND_CUDA;
        model.device = c.gpu_devices[0];
        model.devices = c.gpu_device_count;
        model.device_ids = c.gpu_device_count > 1 ? c.gpu_devices : nullptr;
    } else {
        model.devices = c.cpu_devices;
    }
    engine.max_concurrent_requests = c.max_concurrent_requests;
    engine.max_queued_requests = c.max_queued_requests;
    engine.request_timeout_seconds = c.request_timeout_seconds;
    engine.max_sequence_length = c.max_sequence_length;
    engine.min_steps = c.min_diffusion_steps;
    engine.max_steps = c.max_diffusion_steps;
    engine.log_level = c.log_level;
}

}  // namespace unmask_examples

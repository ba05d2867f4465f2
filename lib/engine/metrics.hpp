// The engine's stats in the Prometheus text exposition format, named after vLLM's metrics
// (`unmask_` in place of `vllm:`: Prometheus reserves colons for recording rules) where one exists.
#pragma once

#include <string>

#include "engine/engine.hpp"

namespace unmask {

std::string prometheus_text(const EngineStats& stats);

}  // namespace unmask

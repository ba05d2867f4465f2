// Stands in for the CUDA toolkit's <cuda_bf16.h> on host threads (cuda_on_host.hpp).
#pragma once

#include "cuda_on_host.hpp"

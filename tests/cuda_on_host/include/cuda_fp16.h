// Stands in for the CUDA toolkit's <cuda_fp16.h> on host threads (cuda_on_host.hpp).
#pragma once

#include "cuda_on_host.hpp"

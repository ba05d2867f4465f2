#include "build_info.hpp"
#include "unmask.h"

extern "C" uint32_t unmask_abi_version(void) { return UNMASK_ABI_VERSION; }

extern "C" const char* unmask_version_string(void) { return unmask::build::version_string; }

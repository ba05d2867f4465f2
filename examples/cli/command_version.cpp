#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.hpp"

namespace unmask_cli {
namespace {

int run_version(const ParsedArgs& args) {
    const uint32_t abi = unmask_abi_version();
    int32_t cuda_devices = 0;
    check(unmask_backend_device_count(UNMASK_BACKEND_CUDA, &cuda_devices));
    if (args.has("json")) {
        nlohmann::json out = {{"version", unmask_version_string()},
                              {"abi_major", abi >> 16},
                              {"abi_minor", abi & 0xffff},
                              {"header_abi_major", UNMASK_ABI_VERSION_MAJOR},
                              {"header_abi_minor", UNMASK_ABI_VERSION_MINOR},
                              {"cuda_devices", cuda_devices}};
        std::cout << out.dump() << "\n";
    } else {
        std::cout << "unmask " << unmask_version_string() << "\n"
                  << "ABI " << (abi >> 16) << "." << (abi & 0xffff) << "\n"
                  << "CUDA devices: " << cuda_devices << "\n";
    }
    return 0;
}

}  // namespace

const Command version_command{
    {"version", "Print the library version, its ABI and the devices it can use.", "", 0, 0, {}},
    run_version};

}  // namespace unmask_cli

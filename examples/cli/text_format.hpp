// Numbers as the `unmask` command reads and prints them.
#pragma once

#include <cstdint>
#include <string>

namespace unmask_cli {

// 1234567 -> "1,234,567"
std::string with_thousands(uint64_t value);
// 1610612736 -> "1.50 GiB"
std::string binary_size(uint64_t bytes);
// "80000000000", "80GB" (decimal) or "24GiB" (binary), also K/M/T; UsageError naming `option`
// for anything else, including zero and negative sizes.
uint64_t parse_bytes(const std::string& text, const std::string& option);

}  // namespace unmask_cli

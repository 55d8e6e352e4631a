#pragma once
// A library loaded at run time and its functions looked up by name (POSIX: dlopen, RTLD_NOW |
// RTLD_LOCAL; Windows: LoadLibrary). How the GPU watch reaches NVML without a link-time dependency
// on the driver (libnvidia-ml.so.1 / nvml.dll).
#include <string>

namespace ddp::platform {

// The loaded library, or nullptr with `why_not` saying what failed.
void* open_library(const std::string& name, std::string& why_not);
void* library_symbol(void* library, const char* name);  // nullptr when it has none by that name
void close_library(void* library);

}  // namespace ddp::platform

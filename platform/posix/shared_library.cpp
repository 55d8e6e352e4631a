#include "platform/shared_library.hpp"

#include <dlfcn.h>

namespace ddp::platform {

void* open_library(const std::string& name, std::string& why_not) {
  void* lib = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = ::dlerror();
    why_not = err ? err : "unknown error";
  }
  return lib;
}

void* library_symbol(void* library, const char* name) { return ::dlsym(library, name); }

void close_library(void* library) { ::dlclose(library); }

}  // namespace ddp::platform

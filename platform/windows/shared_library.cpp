#include "platform/shared_library.hpp"

#include <windows.h>

#include "platform/windows/wide.hpp"

namespace ddp::platform {

void* open_library(const std::string& name, std::string& why_not) {
  HMODULE lib = LoadLibraryW(win::to_wide(name).c_str());
  if (!lib) why_not = win::error_text();
  return reinterpret_cast<void*>(lib);
}

void* library_symbol(void* library, const char* name) {
  return reinterpret_cast<void*>(GetProcAddress(static_cast<HMODULE>(library), name));
}

void close_library(void* library) { FreeLibrary(static_cast<HMODULE>(library)); }

}  // namespace ddp::platform

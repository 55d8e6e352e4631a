#pragma once
// The OS's handle of an open file or pipe end: a descriptor on POSIX, a HANDLE on Windows. Every
// interface of this layer that hands one over names this type; this is the layer's one #ifdef
// outside posix/ and windows/ (with pipe.hpp's stream type), a type name and nothing else.
namespace ddp::platform {

#ifdef _WIN32
using NativeHandle = void*;  // HANDLE
inline NativeHandle const kNoHandle = nullptr;
#else
using NativeHandle = int;
inline constexpr NativeHandle kNoHandle = -1;
#endif

// Closes `h` (kNoHandle: nothing).
void close_handle(NativeHandle h);

}  // namespace ddp::platform

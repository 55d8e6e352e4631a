# The libraries of a Windows build. Debian ships Boost (Asio, Beast), spdlog, fmt, CLI11,
# nlohmann-json and doctest as headers for the build host only; used header-only they compile for
# mingw-w64 unchanged. The host's /usr/include cannot go on the include path (glibc's headers would
# shadow mingw's), so a directory of links names only these libraries' folders.
set(DDP_HOST_INCLUDE_DIR /usr/include CACHE PATH "Where the build host's library headers are")
set(_links ${CMAKE_BINARY_DIR}/host-headers)
file(MAKE_DIRECTORY ${_links})
foreach(_lib boost spdlog fmt CLI nlohmann doctest)
  if(NOT EXISTS ${DDP_HOST_INCLUDE_DIR}/${_lib})
    message(FATAL_ERROR "${DDP_HOST_INCLUDE_DIR}/${_lib} is missing: run ./packaging/install-deps.sh")
  endif()
  file(CREATE_LINK ${DDP_HOST_INCLUDE_DIR}/${_lib} ${_links}/${_lib} SYMBOLIC)
endforeach()

add_library(ddp_host_headers INTERFACE)
target_include_directories(ddp_host_headers SYSTEM INTERFACE ${_links})
# spdlog and fmt header-only (Debian's spdlog is configured for an external fmt).
target_compile_definitions(ddp_host_headers INTERFACE SPDLOG_HEADER_ONLY FMT_HEADER_ONLY)

# The target names the Linux build gets from find_package, so every CMakeLists links the same way.
foreach(_target Boost::boost spdlog::spdlog fmt::fmt CLI11::CLI11 nlohmann_json::nlohmann_json doctest::doctest)
  add_library(${_target} INTERFACE IMPORTED)
  set_target_properties(${_target} PROPERTIES INTERFACE_LINK_LIBRARIES ddp_host_headers)
endforeach()
# Asio's Windows half: Winsock and its extensions.
set_property(TARGET Boost::boost APPEND PROPERTY INTERFACE_LINK_LIBRARIES ws2_32 mswsock)

# Windows 10 APIs; windows.h without its min/max macros and rarely used parts, everywhere alike.
add_compile_definitions(_WIN32_WINNT=0x0A00 WINVER=0x0A00 WIN32_LEAN_AND_MEAN NOMINMAX)
# One self-contained .exe: libstdc++, libgcc and winpthread linked in.
add_link_options(-static)
# GCC 12's -Wrestrict misfires inside libstdc++'s std::string at -O2 and above (GCC bug 105329).
add_compile_options(-Wno-restrict)
# pid_t as an int, as on Linux (the header says why).
add_compile_options(-include ${CMAKE_CURRENT_LIST_DIR}/windows-pid.h)

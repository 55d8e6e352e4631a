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

# The compiled libraries: yaml-cpp, SQLite and RE2 of Debian 12's source packages, built for mingw-w64
# by packaging/windows-deps.sh into a cache outside the tree, one directory per package and version
# (packaging/windows-deps.versions). Same target names as the Linux build: yaml-cpp, SQLite::SQLite3,
# re2::re2. The cache is outside CMAKE_FIND_ROOT_PATH, so each is found at its own path.
if(DEFINED ENV{DDP_MINGW_DEPS_DIR})
  set(_deps_default $ENV{DDP_MINGW_DEPS_DIR})
else()
  set(_deps_default /var/cache/ddp-launch/mingw-deps)
endif()
set(DDP_MINGW_DEPS_DIR ${_deps_default} CACHE PATH "packaging/windows-deps.sh's cache of yaml-cpp, SQLite, RE2 for mingw-w64")
set(_versions_file ${CMAKE_CURRENT_LIST_DIR}/../packaging/windows-deps.versions)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_versions_file})
file(STRINGS ${_versions_file} _versions REGEX "^[A-Z0-9_]+=")
foreach(_pkg yaml-cpp sqlite3 re2)
  string(TOUPPER ${_pkg} _var)
  string(REPLACE "-" "_" _var ${_var})
  set(_version "")
  foreach(_line IN LISTS _versions)
    if(_line MATCHES "^${_var}_VERSION=(.+)$")
      set(_version ${CMAKE_MATCH_1})
    endif()
  endforeach()
  set(_prefix_${_var} ${DDP_MINGW_DEPS_DIR}/${_pkg}-${_version})
  if(_version STREQUAL "" OR NOT EXISTS ${_prefix_${_var}}/.complete)
    message(FATAL_ERROR "${_pkg} ${_version} for mingw-w64 is not built in ${DDP_MINGW_DEPS_DIR}: run "
      "./packaging/windows-deps.sh (./packaging/build-windows.sh runs it; DDP_MINGW_DEPS_DIR moves the cache)")
  endif()
endforeach()
find_package(yaml-cpp 0.7 CONFIG REQUIRED PATHS ${_prefix_YAML_CPP} NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
find_package(re2 CONFIG REQUIRED PATHS ${_prefix_RE2} NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
# FindSQLite3 (as on Linux) takes the paths it would search for.
set(SQLite3_INCLUDE_DIR ${_prefix_SQLITE3}/include CACHE PATH "" FORCE)
set(SQLite3_LIBRARY ${_prefix_SQLITE3}/lib/libsqlite3.a CACHE FILEPATH "" FORCE)
find_package(SQLite3 3.40 REQUIRED)

# Windows 10 APIs; windows.h without its min/max macros and rarely used parts, everywhere alike.
add_compile_definitions(_WIN32_WINNT=0x0A00 WINVER=0x0A00 WIN32_LEAN_AND_MEAN NOMINMAX)
# One self-contained .exe: libstdc++, libgcc and winpthread linked in.
add_link_options(-static)
# GCC 12's -Wrestrict misfires inside libstdc++'s std::string at -O2 and above (GCC bug 105329).
add_compile_options(-Wno-restrict)
# pid_t as an int, as on Linux (the header says why).
add_compile_options(-include ${CMAKE_CURRENT_LIST_DIR}/windows-pid.h)

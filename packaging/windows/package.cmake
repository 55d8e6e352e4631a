# What `cmake --install` puts where in the Windows build, and the ZIP CPack makes of it
# (./packaging/build-windows-installer.sh, which also makes the NSIS installer and the winget and
# Scoop manifests from the same files). Included by the top-level CMakeLists for WIN32.
# The layout is flat: ddp-launch.exe at the top of the ZIP and of the install directory, the
# directory the installer puts on PATH and the one winget's and Scoop's portable installs expose.
install(TARGETS ddp-launch RUNTIME DESTINATION .)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/docs/windows.md
        DESTINATION .)

# The version the packaging scripts read: project(VERSION), nothing else.
file(WRITE ${CMAKE_BINARY_DIR}/packaging/version.txt "${PROJECT_VERSION}\n")

set(CPACK_GENERATOR ZIP)
set(CPACK_PACKAGE_NAME ddp-launch)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_FILE_NAME ddp-launch-${PROJECT_VERSION}-win64)
set(CPACK_INCLUDE_TOPLEVEL_DIRECTORY OFF)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "launcher and job daemon for PyTorch DistributedDataParallel training")
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_CHECKSUM SHA256)
set(CPACK_OUTPUT_FILE_PREFIX ${CMAKE_BINARY_DIR})
include(CPack)

# What `cmake --install` puts where, and the Debian package CPack makes of it
# (./packaging/build-deb.sh; the `release` preset). Included by the top-level CMakeLists.
include(GNUInstallDirs)

set(DDP_DEB_MAINTAINER "ddp-launch authors <ddp-launch-authors@example.org>"
    CACHE STRING "The .deb's Maintainer (and the changelog's signer)")

# The unit files name the installed binary; configured from the install layout, so ExecStart is
# where `cmake --install` (and the package: the release preset's prefix is /usr) puts ddp-launch.
set(DDP_BINDIR ${CMAKE_INSTALL_FULL_BINDIR})
set(DDP_DOCDIR ${CMAKE_INSTALL_FULL_DOCDIR})
set(DDP_PKG_DIR ${CMAKE_BINARY_DIR}/packaging)
configure_file(${CMAKE_CURRENT_LIST_DIR}/systemd/ddp-launch.service.in ${DDP_PKG_DIR}/ddp-launch.service @ONLY)
configure_file(${CMAKE_CURRENT_LIST_DIR}/systemd/ddp-launch@.service.in ${DDP_PKG_DIR}/ddp-launch@.service @ONLY)

# The changelog's newest entry must be this version: a release bumps both together.
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/debian/changelog DDP_CHANGELOG_TOP LIMIT_COUNT 1)
if(NOT DDP_CHANGELOG_TOP MATCHES "^ddp-launch \\(${PROJECT_VERSION}\\) ")
  message(FATAL_ERROR "packaging/debian/changelog starts with '${DDP_CHANGELOG_TOP}', but the project is version "
                      "${PROJECT_VERSION}: add a changelog entry for ${PROJECT_VERSION} (or fix project(VERSION))")
endif()

# debian/copyright (machine-readable) with the licence text of LICENSE, one copy of it in the repo.
file(STRINGS ${PROJECT_SOURCE_DIR}/LICENSE DDP_LICENSE_LINES)
set(DDP_COPYRIGHT "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
                  "Upstream-Name: ddp-launch\n\nFiles: *\nCopyright: 2026 the ddp-launch authors\n"
                  "License: BSD-3-Clause\n")
set(DDP_LICENSE_BODY FALSE)
foreach(line IN LISTS DDP_LICENSE_LINES)
  if(line MATCHES "^Redistribution")  # the text after the title and the copyright line
    set(DDP_LICENSE_BODY TRUE)
  endif()
  if(DDP_LICENSE_BODY)
    if(line STREQUAL "")
      string(APPEND DDP_COPYRIGHT " .\n")
    else()
      string(APPEND DDP_COPYRIGHT " ${line}\n")
    endif()
  endif()
endforeach()
file(WRITE ${DDP_PKG_DIR}/copyright ${DDP_COPYRIGHT})

# Man pages (help2man, one per command, from its --help) and the bash completion (the binary's
# own `completion bash`): made from the built binary, so they say what it accepts.
find_program(DDP_HELP2MAN help2man)
if(DDP_HELP2MAN)
  add_custom_command(OUTPUT ${DDP_PKG_DIR}/docs.stamp
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gen-docs.sh $<TARGET_FILE:ddp-launch> ${DDP_PKG_DIR}
            ${CMAKE_CURRENT_LIST_DIR}/debian/changelog
    COMMAND ${CMAKE_COMMAND} -E touch ${DDP_PKG_DIR}/docs.stamp
    DEPENDS ddp-launch ${CMAKE_CURRENT_LIST_DIR}/gen-docs.sh ${CMAKE_CURRENT_LIST_DIR}/debian/changelog
            ${CMAKE_CURRENT_LIST_DIR}/man-extra.h2m
    COMMENT "Man pages (help2man) and bash completion from ddp-launch itself"
    VERBATIM)
  add_custom_target(ddp-launch-docs ALL DEPENDS ${DDP_PKG_DIR}/docs.stamp)
else()
  message(STATUS "help2man not found: no man pages, no .deb (packaging/install-deps.sh installs it)")
  add_custom_target(ddp-launch-docs COMMAND ${CMAKE_COMMAND} -E echo
    "help2man is missing: run packaging/install-deps.sh" COMMAND false)
endif()

install(TARGETS ddp-launch RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# A stripped install (CPack's) also drops the compiler's .comment section, as Debian's dh_strip does.
install(CODE "if(CMAKE_INSTALL_DO_STRIP)
  execute_process(COMMAND ${CMAKE_OBJCOPY} --remove-section=.comment
                  \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/ddp-launch\" COMMAND_ERROR_IS_FATAL ANY)
endif()")
install(DIRECTORY ${DDP_PKG_DIR}/man1 DESTINATION ${CMAKE_INSTALL_MANDIR})
install(FILES ${DDP_PKG_DIR}/bash-completion/ddp-launch DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES ${DDP_PKG_DIR}/ddp-launch.service DESTINATION lib/systemd/user)
install(FILES ${DDP_PKG_DIR}/ddp-launch@.service DESTINATION lib/systemd/system)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${DDP_PKG_DIR}/copyright ${DDP_PKG_DIR}/changelog.gz
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ddp-launch)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_PACKAGE_CONTACT ${DDP_DEB_MAINTAINER})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${DDP_DEB_MAINTAINER})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "launcher and job daemon for PyTorch DistributedDataParallel training")
set(CPACK_PACKAGE_DESCRIPTION
    "ddp-launch is a drop-in for torchrun: it hosts its own PyTorch-compatible\n"
    "rendezvous store, starts one worker per rank with torchrun's environment,\n"
    "stops the group at the first failure, names the root-cause rank, restarts\n"
    "within a budget and never leaves orphaned workers. Its job daemon queues\n"
    "YAML jobs, hands out CPU slots and GPUs, and keeps jobs across its own\n"
    "restarts. Includes a systemd user unit and a unit template for service\n"
    "accounts.")
string(REPLACE ";" "" CPACK_PACKAGE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # ddp-launch_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)   # Depends from dpkg-shlibdeps, as a Debian build would
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# What some commands use when present (run's Python workers, hang stacks, report --out x.png,
# sbatch), none needed to install or to start the daemon.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-torch, gdb, librsvg2-bin, slurm-client, xdg-utils")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_LIST_DIR}/debian/postinst ${CMAKE_CURRENT_LIST_DIR}/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_CHECKSUM SHA256)
include(CPack)

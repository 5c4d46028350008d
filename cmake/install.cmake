# SPDX-License-Identifier: MIT
# What `cmake --install` puts where, for every folder's targets: included
# once, at the end of the top-level CMakeLists.txt, after all targets exist.
#
#   bin/tdstat
#   lib/libc_db.so.1 (+ links), lib/libtdstat_ps.*, lib/libtdshim.so
#   include/tdstat/*.h
#   lib/pkgconfig/tdstat-agent.pc, tdstat-ps.pc
#   lib/cmake/tdstat/: find_package(tdstat) -> tdstat::c_db, tdstat::tdstat_ps,
#                      tdstat::tdstat_abi, tdstat::tdstat (the command)
#   share/man/man{1,3,7}: from man/CMakeLists.txt
include(CMakePackageConfigHelpers)

set(TDSTAT_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/tdstat"
  CACHE STRING "Where the CMake package files of tdstat are installed")
set(TDSTAT_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
  CACHE STRING "Where the pkg-config files of tdstat are installed")

# The agent and the provider, linked by users: exported with a namespace.
install(TARGETS c_db tdstat_ps tdstat_abi tdstat
  EXPORT tdstatTargets
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

# The shim is preloaded, never linked: installed, not exported.
install(TARGETS tdshim
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  RUNTIME DESTINATION "${CMAKE_INSTALL_LIBDIR}")

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/tdstat"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
  FILES_MATCHING PATTERN "*.h")

install(EXPORT tdstatTargets
  NAMESPACE tdstat::
  DESTINATION "${TDSTAT_INSTALL_CMAKEDIR}")

configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/tdstatConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/cmake/tdstatConfig.cmake"
  INSTALL_DESTINATION "${TDSTAT_INSTALL_CMAKEDIR}"
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/cmake/tdstatConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMajorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/cmake/tdstatConfig.cmake"
  "${PROJECT_BINARY_DIR}/cmake/tdstatConfigVersion.cmake"
  DESTINATION "${TDSTAT_INSTALL_CMAKEDIR}")

# pkg-config files relative to their own place (${pcfiledir}), so an
# installed prefix can be moved or unpacked anywhere.
function(tdstat_pkgconfig_path out directory)
  if(IS_ABSOLUTE "${directory}")
    set(${out} "${directory}" PARENT_SCOPE)
  else()
    set(${out} "\${prefix}/${directory}" PARENT_SCOPE)
  endif()
endfunction()
if(IS_ABSOLUTE "${TDSTAT_INSTALL_PKGCONFIGDIR}")
  set(tdstat_pc_dir "${TDSTAT_INSTALL_PKGCONFIGDIR}")
else()
  set(tdstat_pc_dir "${CMAKE_INSTALL_PREFIX}/${TDSTAT_INSTALL_PKGCONFIGDIR}")
endif()
file(RELATIVE_PATH tdstat_pc_up "${tdstat_pc_dir}" "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" tdstat_pc_up "${tdstat_pc_up}")
if(tdstat_pc_up STREQUAL "")
  set(TDSTAT_PC_PREFIX "\${pcfiledir}")
else()
  set(TDSTAT_PC_PREFIX "\${pcfiledir}/${tdstat_pc_up}")
endif()
tdstat_pkgconfig_path(TDSTAT_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
tdstat_pkgconfig_path(TDSTAT_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
foreach(pc tdstat-agent tdstat-ps)
  configure_file("${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in"
    "${PROJECT_BINARY_DIR}/cmake/${pc}.pc" @ONLY)
  install(FILES "${PROJECT_BINARY_DIR}/cmake/${pc}.pc"
    DESTINATION "${TDSTAT_INSTALL_PKGCONFIGDIR}")
endforeach()

# SPDX-License-Identifier: Apache-2.0
# `cmake --install BUILD --prefix P`: zerodp as a library others build on
# (docs/library.md). Installs
#   P/include/zerodp/<layer>/*.h    the public layers' headers, included as <zerodp/zero/engine.h>
#   P/include/zerodp/zerodp.h       the umbrella header
#   P/lib/libzerodp_<layer>.a       their libraries
#   P/lib/cmake/zerodp/             the package: find_package(zerodp) gives zerodp::<layer>
#   P/bin/zerodp                    the program (and P/share/zerodp/gpt2 when scripts/setup fetched it)
# The layers above the library (train, bench, report, cli) are the program's
# and stay internal: not installed, no promise. In the build tree the same
# names exist as aliases (zerodp::zero = zerodp_zero).
include(CMakePackageConfigHelpers)

set(ZERODP_PUBLIC_LAYERS core text comm kernels model optim zero plan ckpt weights engine_ckpt)
set(ZERODP_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/zerodp)
set(zerodp_public_targets "")
# Only the public headers are installed: a header whose first lines say
# it is internal (the per-SIMD-level loops, a backend's shared state, a
# model's own parts) stays out, unless an installed header includes it
# (then it must come along; docs/library.md lists those).
set(zerodp_headers "")
foreach(layer IN LISTS ZERODP_PUBLIC_LAYERS)
  file(GLOB layer_headers RELATIVE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/src/${layer}/*.h)
  list(APPEND zerodp_headers ${layer_headers})
endforeach()
set(zerodp_internal_headers "")
foreach(header IN LISTS zerodp_headers)
  file(STRINGS ${PROJECT_SOURCE_DIR}/src/${header} head LIMIT_COUNT 5)
  if(head MATCHES "[Ii]nternal")
    list(APPEND zerodp_internal_headers ${header})
  endif()
endforeach()
set(zerodp_uninstalled_headers "")
foreach(internal IN LISTS zerodp_internal_headers)
  set(included FALSE)
  foreach(header IN LISTS zerodp_headers)
    if(NOT header IN_LIST zerodp_internal_headers)
      file(READ ${PROJECT_SOURCE_DIR}/src/${header} text)
      string(FIND "${text}" "#include \"${internal}\"" at)
      if(NOT at EQUAL -1)
        set(included TRUE)
      endif()
    endif()
  endforeach()
  if(NOT included)
    list(APPEND zerodp_uninstalled_headers ${internal})
  endif()
endforeach()
foreach(layer IN LISTS ZERODP_PUBLIC_LAYERS)
  if(TARGET zerodp_${layer})
    set_target_properties(zerodp_${layer} PROPERTIES EXPORT_NAME ${layer})
    add_library(zerodp::${layer} ALIAS zerodp_${layer})
    list(APPEND zerodp_public_targets zerodp_${layer})
    set(excluded "")
    foreach(header IN LISTS zerodp_uninstalled_headers)
      if(header MATCHES "^${layer}/")
        get_filename_component(name ${header} NAME)
        list(APPEND excluded PATTERN ${name} EXCLUDE)
      endif()
    endforeach()
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/${layer}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/zerodp/${layer}
            FILES_MATCHING PATTERN "*.h" ${excluded})
  endif()
endforeach()

# Headers include each other relative to src/ ("core/error.h"), so the
# installed targets' include directories are P/include/zerodp (for those
# includes) and P/include, where a user's code writes
# <zerodp/zero/engine.h> or the umbrella <zerodp/zerodp.h>.
install(FILES ${PROJECT_SOURCE_DIR}/src/zerodp.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/zerodp)
install(TARGETS ${zerodp_public_targets} EXPORT zerodpTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/zerodp ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT zerodpTargets NAMESPACE zerodp:: FILE zerodpTargets.cmake DESTINATION ${ZERODP_INSTALL_CMAKEDIR})

# The program, and GPT-2's tokenizer files where it looks for them in an
# installed layout (text/tokenizer_lookup.h: EXE_DIR/../share/zerodp/gpt2).
install(TARGETS zerodp RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_BINARY_DIR}/share/zerodp/ DESTINATION ${CMAKE_INSTALL_DATADIR}/zerodp OPTIONAL)

# The config finds what the exported targets name: static libraries carry
# their private dependencies too ($<LINK_ONLY:...>): OpenBLAS through
# pkg-config as src/kernels finds it, MPI when this build has the backend.
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/zerodpConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/zerodpConfig.cmake
                              INSTALL_DESTINATION ${ZERODP_INSTALL_CMAKEDIR})
# 0.x: a minor version may change the API (docs/library.md), so a request
# for 0.1 accepts 0.1.z only.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/zerodpConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/zerodpConfig.cmake ${PROJECT_BINARY_DIR}/zerodpConfigVersion.cmake
        DESTINATION ${ZERODP_INSTALL_CMAKEDIR})

# Embeds every kernel source (kernels/**/*.cuh) into the library as text, so the JIT compiles from the sources
# the library was built with, wherever it is installed, and the cache key can hash exactly those bytes.
function(moegemm_embed_kernels)
  cmake_parse_arguments(ARG "" "SOURCE_DIR;OUTPUT" "" ${ARGN})
  file(GLOB_RECURSE _kernel_files CONFIGURE_DEPENDS RELATIVE ${ARG_SOURCE_DIR} ${ARG_SOURCE_DIR}/*.cuh)
  list(SORT _kernel_files)
  set(_abs_files "")
  foreach(_f IN LISTS _kernel_files)
    list(APPEND _abs_files ${ARG_SOURCE_DIR}/${_f})
  endforeach()
  add_custom_command(
    OUTPUT ${ARG_OUTPUT}
    COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${ARG_SOURCE_DIR} -DOUTPUT=${ARG_OUTPUT}
            "-DFILES=${_kernel_files}" -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/EmbedKernelsScript.cmake
    DEPENDS ${_abs_files} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/EmbedKernelsScript.cmake
    COMMENT "Embedding kernel sources"
    VERBATIM)
endfunction()

# How artifacts reach the runtime (docs/running.md, "How artifacts link").
#
# An artifact is compiled with `c++ $(cat artifact-flags.txt) step.cpp -o
# step.so` and does not link the runtime: its calls into it (gemmF32, check,
# ...) stay undefined until dlopen resolves them against the executable that
# loads it. That executable must therefore contain the whole runtime archive
# (not only the objects its own code references) and export its symbols
# (-rdynamic). One copy of the runtime per process, no libdsc_runtime.so to
# find at run time, no rpath in artifacts.

# Makes `target` (an executable) a host for artifacts. With CUDA (only when
# the runtime is built with it: TARGET dsc_runtime_cuda), a host of CUDA
# artifacts too: it also links dsc_runtime_cuda whole, so that artifacts
# resolve dsc::rt::cuda::gemmF32 against it as they resolve the CPU gemm,
# and dsc_run_cuda (CudaRun.cpp, the CUDA target, which registers itself at
# start-up and so must be linked whole too), with the run path set to the
# CUDA libraries (Cuda.cmake).
function(dsc_runtime_artifact_host target)
  cmake_parse_arguments(ARG "CUDA" "" "" ${ARGN})
  set_target_properties(${target} PROPERTIES ENABLE_EXPORTS ON)
  if(NOT ARG_CUDA)
    target_link_libraries(${target} PRIVATE
      "$<LINK_LIBRARY:WHOLE_ARCHIVE,dsc_runtime>" ${CMAKE_DL_LIBS})
    return()
  endif()
  if(NOT TARGET dsc_run_cuda)
    add_library(dsc_run_cuda STATIC ${DSC_RUN_CUDA_SOURCES})
    target_link_libraries(dsc_run_cuda PUBLIC dsc_runtime_cuda)
    target_compile_options(dsc_run_cuda PRIVATE -Wall -Wextra)
    set_target_properties(dsc_run_cuda PROPERTIES POSITION_INDEPENDENT_CODE ON)
  endif()
  # dsc_run_cuda brings dsc_runtime_cuda, which brings dsc_runtime: each is
  # linked once, whole (an archive named whole twice would define every
  # symbol twice).
  target_link_libraries(${target} PRIVATE
    "$<LINK_LIBRARY:WHOLE_ARCHIVE,dsc_run_cuda>" ${CMAKE_DL_LIBS})
  set_target_properties(${target} PROPERTIES
    LINK_LIBRARY_OVERRIDE_dsc_runtime_cuda WHOLE_ARCHIVE
    LINK_LIBRARY_OVERRIDE_dsc_runtime WHOLE_ARCHIVE)
  dsc_runtime_cuda_executable(${target})
endfunction()

# The flags an artifact is compiled and linked with, on one line, for
# dsc-compile and the tests: <runtime build dir>/artifact-flags.txt
# (build/runtime/artifact-flags.txt in the top-level build).
get_filename_component(DSC_RUNTIME_INCLUDE_DIR
  "${CMAKE_CURRENT_LIST_DIR}/../../include" ABSOLUTE)
# -fno-trapping-math: no artifact reads the floating-point exception flags,
# and without it GCC will not if-convert a select between two computed
# values (a comparison may trap), so such loops (the library's tanh in
# GELU) stay scalar. It changes no result.
set(DSC_ARTIFACT_FLAGS
  "-std=c++17 -O2 -fno-trapping-math -shared -fPIC -I${DSC_RUNTIME_INCLUDE_DIR}")
set(DSC_ARTIFACT_FLAGS_FILE ${PROJECT_BINARY_DIR}/artifact-flags.txt)
file(CONFIGURE OUTPUT ${DSC_ARTIFACT_FLAGS_FILE} CONTENT "${DSC_ARTIFACT_FLAGS}\n")

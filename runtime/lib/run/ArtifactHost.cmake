# How artifacts reach the runtime (docs/running.md, "How artifacts link").
#
# An artifact is compiled with `c++ $(cat artifact-flags.txt) step.cpp -o
# step.so` and does not link the runtime: its calls into it (gemmF32, check,
# ...) stay undefined until dlopen resolves them against the executable that
# loads it. That executable must therefore contain the whole runtime archive
# (not only the objects its own code references) and export its symbols
# (-rdynamic). One copy of the runtime per process, no libdsc_runtime.so to
# find at run time, no rpath in artifacts.

# Makes `target` (an executable) a host for artifacts.
function(dsc_runtime_artifact_host target)
  target_link_libraries(${target} PRIVATE
    "$<LINK_LIBRARY:WHOLE_ARCHIVE,dsc_runtime>" ${CMAKE_DL_LIBS})
  set_target_properties(${target} PROPERTIES ENABLE_EXPORTS ON)
endfunction()

# The flags an artifact is compiled and linked with, on one line, for
# dsc-compile and the tests: <runtime build dir>/artifact-flags.txt
# (build/runtime/artifact-flags.txt in the top-level build).
get_filename_component(DSC_RUNTIME_INCLUDE_DIR
  "${CMAKE_CURRENT_LIST_DIR}/../../include" ABSOLUTE)
set(DSC_ARTIFACT_FLAGS "-std=c++17 -O2 -shared -fPIC -I${DSC_RUNTIME_INCLUDE_DIR}")
set(DSC_ARTIFACT_FLAGS_FILE ${PROJECT_BINARY_DIR}/artifact-flags.txt)
file(CONFIGURE OUTPUT ${DSC_ARTIFACT_FLAGS_FILE} CONTENT "${DSC_ARTIFACT_FLAGS}\n")

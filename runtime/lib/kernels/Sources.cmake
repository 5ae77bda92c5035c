# The kernel library (dsc/kernels/): one file per family, the CPU target's
# instantiations; the CUDA kernels are header-only (dsc/kernels/cuda/).
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Copy.cpp)
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Gemm.cpp)
# Row kernels and the fused classifier, at -O3; -fno-trapping-math lets the
# compiler vectorize their loops' comparisons (no result changes: nothing
# traps on floating-point flags).
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Row.cpp ${CMAKE_CURRENT_LIST_DIR}/Classifier.cpp)
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/Row.cpp ${CMAKE_CURRENT_LIST_DIR}/Classifier.cpp
  PROPERTIES COMPILE_OPTIONS "-O3;-fno-trapping-math")

# The kernel library (runtime/include/dsc/kernels/): one .cpp of explicit
# instantiations per family, compiled into dsc_runtime with OpenMP (the
# runtime links OpenMP::OpenMP_CXX). One line per family.
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Optimizer.cpp)

# The kernel library (dsc/kernels/): one file per family, the CPU target's
# instantiations; the CUDA kernels are header-only (dsc/kernels/cuda/).
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Copy.cpp)
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Gemm.cpp)
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Attention.cpp)

# The kernel library (runtime/include/dsc/kernels/): one source per family
# with its explicit instantiations; each family appends one line. They are
# OpenMP loops, compiled -O3 (runtime/CMakeLists.txt).
set(DSC_KERNEL_SOURCES "")
list(APPEND DSC_KERNEL_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Reduce.cpp)
list(APPEND DSC_KERNEL_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Embedding.cpp)
list(APPEND DSC_KERNEL_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Permute.cpp)
list(APPEND DSC_KERNEL_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Routing.cpp)

# The kernel library (dsc/kernels/, one file per family). Its sources are
# compiled with OpenMP and -O3 (runtime/CMakeLists.txt), so each family
# lists them in DSC_KERNEL_SOURCES: one line per family.
list(APPEND DSC_KERNEL_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Row.cpp)
list(APPEND DSC_KERNEL_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Classifier.cpp)

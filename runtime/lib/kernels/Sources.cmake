# The kernel library (runtime/include/dsc/kernels): each family appends its
# instantiations here, one line per family.
set(DSC_KERNEL_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Attention.cpp)

# -O3, and OpenMP when the runtime's compiler uses GCC's runtime (libgomp),
# the one artifacts are built with (`c++ -fopenmp`): a second OpenMP runtime
# in dsc-run (clang's libomp) would keep its own spinning threads beside
# libgomp's. Without it the kernels run on one thread, with the same
# results (their work items do not depend on the thread count).
set(DSC_KERNEL_OPENMP OFF)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  find_package(OpenMP COMPONENTS CXX QUIET)
  set(DSC_KERNEL_OPENMP ${OpenMP_CXX_FOUND})
endif()
if(DSC_KERNEL_OPENMP)
  set_source_files_properties(${DSC_KERNEL_SOURCES} PROPERTIES
    COMPILE_OPTIONS "-O3;${OpenMP_CXX_FLAGS}")
else()
  set_source_files_properties(${DSC_KERNEL_SOURCES} PROPERTIES
    COMPILE_OPTIONS "-O3;-Wno-unknown-pragmas;-Wno-source-uses-openmp")
endif()
list(APPEND DSC_RUNTIME_SOURCES ${DSC_KERNEL_SOURCES})

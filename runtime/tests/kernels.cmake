# GoogleTests of the kernel library (runtime/tests/kernels/): one block per
# family. They set OpenMP thread counts, so they link OpenMP themselves.
find_package(OpenMP REQUIRED COMPONENTS CXX)
function(dsc_kernel_test name)
  dsc_runtime_test(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE OpenMP::OpenMP_CXX)
endfunction()

dsc_kernel_test(ReduceKernelTest kernels/ReduceTest.cpp)
dsc_kernel_test(EmbeddingKernelTest kernels/EmbeddingTest.cpp)
dsc_kernel_test(PermuteKernelTest kernels/PermuteTest.cpp)
dsc_kernel_test(RoutingKernelTest kernels/RoutingTest.cpp)

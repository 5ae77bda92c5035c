# The kernel library (dsc/kernels/): one suite per family against plain
# references.
dsc_runtime_test(KernelCopyGemmTest kernels/CopyGemmTest.cpp)

# CUDA suites check each CUDA kernel against the CPU one; built when nvcc is
# found (runtime/CMakeLists.txt enables CUDA), they skip without a GPU.
function(dsc_kernels_cuda_test name)
  if(NOT TARGET dsc_runtime_cuda OR NOT CMAKE_CUDA_COMPILER)
    return()
  endif()
  add_executable(${name} ${ARGN})
  set_target_properties(${name} PROPERTIES CUDA_STANDARD 17)
  dsc_runtime_cuda_executable(${name})
  target_link_libraries(${name} PRIVATE GTest::gtest GTest::gtest_main)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
endfunction()

# Row kernels and the fused classifier.
dsc_runtime_test(KernelsRowTest kernels/RowTest.cpp)
dsc_runtime_test(KernelsClassifierTest kernels/ClassifierTest.cpp)
dsc_kernels_cuda_test(KernelsRowCudaTest kernels/RowCudaTest.cu)

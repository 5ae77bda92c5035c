# The kernel library (dsc/kernels/): one suite per family against plain
# references.
dsc_runtime_test(KernelCopyGemmTest kernels/CopyGemmTest.cpp)

# Reductions, embedding, permutes, indexing and routing: each against a
# naive reference in double.
dsc_runtime_test(ReduceKernelTest kernels/ReduceTest.cpp)
dsc_runtime_test(EmbeddingKernelTest kernels/EmbeddingTest.cpp)
dsc_runtime_test(PermuteKernelTest kernels/PermuteTest.cpp)
dsc_runtime_test(RoutingKernelTest kernels/RoutingTest.cpp)

# CUDA kernels against the CPU library (kernels/*CudaTest.cu): built where
# the toolkit is, for sm_90 only (compile time); they skip without a GPU.
if(TARGET dsc_runtime_cuda AND CUDAToolkit_NVCC_EXECUTABLE)
  if(NOT CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
  endif()
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  function(dsc_kernel_cuda_test name)
    add_executable(${name} ${ARGN})
    set_target_properties(${name} PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
    target_link_libraries(${name} PRIVATE dsc_runtime CUDA::cudart GTest::gtest
                          GTest::gtest_main)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
  endfunction()
  dsc_kernel_cuda_test(ReduceKernelCudaTest kernels/ReduceCudaTest.cu)
  dsc_kernel_cuda_test(EmbeddingKernelCudaTest kernels/EmbeddingCudaTest.cu)
  dsc_kernel_cuda_test(RoutingKernelCudaTest kernels/RoutingCudaTest.cu)
  # The CUDA kernels' bandwidth (bench/cuda/): here, where CUDA is enabled.
  add_executable(bench-reduce-layout-cuda
    ${PROJECT_SOURCE_DIR}/../bench/cuda/reduce_layout_bench.cu)
  set_target_properties(bench-reduce-layout-cuda PROPERTIES CUDA_STANDARD 17)
  target_include_directories(bench-reduce-layout-cuda PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(bench-reduce-layout-cuda PRIVATE CUDA::cudart)
endif()

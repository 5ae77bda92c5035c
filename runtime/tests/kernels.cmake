# GoogleTest suites of the kernel library (runtime/include/dsc/kernels/),
# one block per family. The CUDA suites (*CudaTest.cu) are built with the
# CUDA language for sm_90 only (compile time) when the CUDA backend is built
# and nvcc is usable; they skip their checks where there is no GPU.
if(TARGET dsc_runtime_cuda AND NOT DEFINED DSC_KERNELS_CUDA)
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND CUDAToolkit_NVCC_EXECUTABLE)
    set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_ARCHITECTURES 90)
    set(CMAKE_CUDA_STANDARD 17)
    enable_language(CUDA)
    set(DSC_KERNELS_CUDA ON)
  else()
    set(DSC_KERNELS_CUDA OFF)
    message(STATUS "dsc runtime: no usable nvcc; kernel library CUDA tests not built")
  endif()
endif()
# A CUDA suite of the kernel library: `name` built from `sources` (.cu).
function(dsc_kernels_cuda_test name)
  if(NOT DSC_KERNELS_CUDA)
    return()
  endif()
  add_executable(${name} ${ARGN})
  dsc_runtime_cuda_executable(${name})
  target_link_libraries(${name} PRIVATE GTest::gtest GTest::gtest_main)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
endfunction()

# Optimizer family: multi-tensor Adam/AdamW/SGD, sum of squares, non-finite check.
dsc_runtime_test(KernelsOptimizerTest kernels/OptimizerTest.cpp)
dsc_kernels_cuda_test(KernelsOptimizerCudaTest kernels/OptimizerCudaTest.cu)

# GEMM family: strided-batched GEMM and cuBLASLt-style epilogues.
dsc_runtime_test(KernelsBatchedGemmTest kernels/BatchedGemmTest.cpp)
dsc_kernels_cuda_test(KernelsBatchedGemmCudaTest kernels/BatchedGemmCudaTest.cu)

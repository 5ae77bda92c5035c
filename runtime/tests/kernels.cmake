# The kernel library (dsc/kernels/): one suite per family against plain
# references.
dsc_runtime_test(KernelCopyGemmTest kernels/CopyGemmTest.cpp)

# Attention: the CPU kernels against a naive double reference.
dsc_runtime_test(AttentionKernelTest kernels/AttentionTest.cpp)

# Attention on CUDA against the CPU kernels (skipped without a device). The
# .cu is compiled by nvcc for sm_90 only (H100/H200) into an object that the
# host compiler links with the runtime; built when the CUDA backend is.
if(TARGET dsc_runtime_cuda AND CUDAToolkit_NVCC_EXECUTABLE)
  set(attention_cuda_object
      ${CMAKE_CURRENT_BINARY_DIR}/AttentionCudaTest.cu.o)
  add_custom_command(OUTPUT ${attention_cuda_object}
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -O2 -std=c++17
      -gencode=arch=compute_90,code=sm_90 -Xcompiler -fPIC
      -I${PROJECT_SOURCE_DIR}/include -c
      ${CMAKE_CURRENT_SOURCE_DIR}/kernels/AttentionCudaTest.cu
      -o ${attention_cuda_object}
    DEPENDS kernels/AttentionCudaTest.cu
      ${PROJECT_SOURCE_DIR}/include/dsc/kernels/cuda/Attention.cuh
      ${PROJECT_SOURCE_DIR}/include/dsc/kernels/Attention.h
    COMMENT "Compiling AttentionCudaTest.cu with nvcc (sm_90)"
    VERBATIM)
  add_executable(AttentionKernelCudaTest ${attention_cuda_object})
  set_source_files_properties(${attention_cuda_object} PROPERTIES
    EXTERNAL_OBJECT TRUE GENERATED TRUE)
  set_target_properties(AttentionKernelCudaTest PROPERTIES LINKER_LANGUAGE CXX)
  dsc_runtime_cuda_executable(AttentionKernelCudaTest)
  target_link_libraries(AttentionKernelCudaTest PRIVATE dsc_runtime
    GTest::gtest GTest::gtest_main)
  gtest_discover_tests(AttentionKernelCudaTest DISCOVERY_TIMEOUT 60)
endif()

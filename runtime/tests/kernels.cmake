# GoogleTest suites of the kernel library (runtime/include/dsc/kernels/),
# one block per family. The CUDA suites (*CudaTest.cu) are built where
# runtime/CMakeLists.txt enabled the CUDA language (DSC_KERNELS_CUDA); they
# skip their checks where there is no GPU.
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

# Copy and GEMM calls of generated code: copy, linear, a broadcast batch.
dsc_runtime_test(KernelCopyGemmTest kernels/CopyGemmTest.cpp)

# Reductions, embedding, permutes, slices/concats/broadcasts/causal masks,
# indexing and routing: each against a
# naive reference in double.
dsc_runtime_test(ReduceKernelTest kernels/ReduceTest.cpp)
dsc_runtime_test(EmbeddingKernelTest kernels/EmbeddingTest.cpp)
dsc_runtime_test(PermuteKernelTest kernels/PermuteTest.cpp)
dsc_runtime_test(LayoutKernelTest kernels/LayoutTest.cpp)
dsc_runtime_test(RoutingKernelTest kernels/RoutingTest.cpp)

# Their CUDA kernels against the CPU ones.
dsc_kernels_cuda_test(ReduceKernelCudaTest kernels/ReduceCudaTest.cu)
dsc_kernels_cuda_test(EmbeddingKernelCudaTest kernels/EmbeddingCudaTest.cu)
dsc_kernels_cuda_test(RoutingKernelCudaTest kernels/RoutingCudaTest.cu)
dsc_kernels_cuda_test(LayoutKernelCudaTest kernels/LayoutCudaTest.cu)
# Row kernels and the fused classifier.
dsc_runtime_test(KernelsRowTest kernels/RowTest.cpp)
dsc_runtime_test(KernelsClassifierTest kernels/ClassifierTest.cpp)
# The f64 rows (RowF64.h) against long double loops.
dsc_runtime_test(KernelsRowF64Test kernels/RowF64Test.cpp)

# The vectorisable float tanh of generated loops (Tanh.h) against tanhl.
dsc_runtime_test(KernelsTanhTest kernels/TanhTest.cpp)
dsc_kernels_cuda_test(KernelsRowCudaTest kernels/RowCudaTest.cu)

# Attention: the CPU kernels against a naive double reference; the CUDA
# kernels against the CPU ones.
dsc_runtime_test(AttentionKernelTest kernels/AttentionTest.cpp)
dsc_kernels_cuda_test(AttentionKernelCudaTest kernels/AttentionCudaTest.cu)

# Mixture-of-experts routing: slots, dispatch, combine, route dot against
# their definitions; the CUDA kernels against the CPU ones, bit for bit.
dsc_runtime_test(MoeKernelTest kernels/MoeTest.cpp)
dsc_kernels_cuda_test(MoeKernelCudaTest kernels/MoeCudaTest.cu)

# Random ops: Philox4x32-10's known answers, dropout against its definition;
# the CUDA kernel against the CPU one, bit for bit.
dsc_runtime_test(RandomKernelTest kernels/RandomTest.cpp)
dsc_kernels_cuda_test(RandomKernelCudaTest kernels/RandomCudaTest.cu)

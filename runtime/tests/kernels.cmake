# GoogleTest suites of the kernel library (runtime/include/dsc/kernels), one
# block per family.

# Attention: the CPU kernels against a naive double reference.
dsc_runtime_test(AttentionKernelTest kernels/AttentionTest.cpp)

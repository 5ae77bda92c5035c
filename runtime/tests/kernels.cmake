# The kernel library (dsc/kernels/): one suite per family against plain
# references.
dsc_runtime_test(KernelCopyGemmTest kernels/CopyGemmTest.cpp)

dsc_runtime_test(CpuGemmTest CpuGemmTest.cpp)

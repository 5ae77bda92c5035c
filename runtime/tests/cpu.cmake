dsc_runtime_test(CpuGemmTest CpuGemmTest.cpp)
dsc_runtime_test(Float16Test Float16Test.cpp)

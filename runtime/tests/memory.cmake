# Tests of the memory component: dsc_runtime_test(Name File.cpp ...) and add_test().
dsc_runtime_test(MemoryPoolTest MemoryPoolTest.cpp)

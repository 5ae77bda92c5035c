# Tests of the stream component (Stream.h, CudaStream.h; docs/streams.md).
# No test may hang: the bodies run under finishesWithin()
# (StreamTestSupport.h), and ctest's TIMEOUT is the last resort.

add_executable(RuntimeStreamTest StreamCpuTest.cpp)
target_link_libraries(RuntimeStreamTest PRIVATE dsc_runtime GTest::gmock
  GTest::gtest GTest::gtest_main)
target_compile_options(RuntimeStreamTest PRIVATE -Wall -Wextra)
gtest_discover_tests(RuntimeStreamTest DISCOVERY_TIMEOUT 60
  PROPERTIES TIMEOUT 120)

# The CUDA backend: the no-GPU error runs everywhere, the rest skips
# without a GPU.
if(TARGET dsc_runtime_cuda)
  add_executable(RuntimeStreamCudaTest StreamCudaTest.cpp)
  dsc_runtime_cuda_executable(RuntimeStreamCudaTest)
  target_link_libraries(RuntimeStreamCudaTest PRIVATE GTest::gmock
    GTest::gtest GTest::gtest_main)
  target_compile_options(RuntimeStreamCudaTest PRIVATE -Wall -Wextra)
  gtest_discover_tests(RuntimeStreamCudaTest DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT 120)
endif()

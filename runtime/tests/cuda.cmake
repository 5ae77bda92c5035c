# Tests of the CUDA backend (dsc_runtime_cuda; docs/cuda.md). They build
# and pass without a GPU (the GPU checks skip, the no-GPU checks run) and
# run the GPU checks where there is one.
if(NOT TARGET dsc_runtime_cuda)
  return()
endif()

# One process: devices, pools, gemm.
add_executable(RuntimeCudaTest CudaDeviceTest.cpp CudaMemoryPoolTest.cpp
  CudaGemmTest.cpp)
dsc_runtime_cuda_executable(RuntimeCudaTest)
target_link_libraries(RuntimeCudaTest PRIVATE GTest::gmock GTest::gtest
  GTest::gtest_main)
gtest_discover_tests(RuntimeCudaTest DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)

# The NCCL communicator, under mpirun (its main() initializes MPI). Linked
# with the whole archive, as an artifact host is, so that it needs every
# CUDA library of the backend; it checks where it finds them.
if(DSC_HAVE_NCCL)
  add_executable(RuntimeCudaNcclTest CudaNcclTest.cpp)
  dsc_runtime_cuda_executable(RuntimeCudaNcclTest WHOLE_ARCHIVE)
  target_link_libraries(RuntimeCudaNcclTest PRIVATE GTest::gtest)
  list(JOIN DSC_CUDA_RPATH ":" DSC_CUDA_RPATH_STRING)
  target_compile_definitions(RuntimeCudaNcclTest PRIVATE
    DSC_CUDA_LIBRARY_DIRS="${DSC_CUDA_RPATH_STRING}")
  add_test(NAME RuntimeCudaNcclTest.np1
           COMMAND ${DSC_MPIRUN} -np 1 $<TARGET_FILE:RuntimeCudaNcclTest>)
  set_tests_properties(RuntimeCudaNcclTest.np1 PROPERTIES TIMEOUT 120)
endif()

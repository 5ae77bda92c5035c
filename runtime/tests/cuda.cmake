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
  dsc_own_mpi_session_dir(RuntimeCudaNcclTest.np1)
endif()

# dsc-run on CUDA artifacts, under mpirun (RunCudaToolTest.cpp): without a
# GPU it must fail at start-up with one line; with GPUs, compute the losses.
# Its artifacts are built with nvcc as dsc-compile builds artifacts
# (-shared, the runtime's headers, the runtime's symbols left undefined),
# for H100/H200 (sm_90) and as PTX for any GPU from sm_75.
if(NOT CUDAToolkit_NVCC_EXECUTABLE OR NOT DSC_HAVE_NCCL)
  message(STATUS "dsc runtime: no nvcc or no NCCL; RunCudaToolTest not built")
  return()
endif()
set(DSC_TEST_CUDA_ARTIFACTS "")
function(dsc_test_cuda_artifact name source)
  set(output ${DSC_TEST_ARTIFACT_DIR}/${name}.so)
  set(defines "")
  foreach(define ${ARGN})
    list(APPEND defines -D${define})
  endforeach()
  file(GLOB headers ${PROJECT_SOURCE_DIR}/include/dsc/runtime/*.h)
  add_custom_command(OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${DSC_TEST_ARTIFACT_DIR}
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -O2 -std=c++17
      -gencode=arch=compute_90,code=sm_90
      -gencode=arch=compute_75,code=compute_75
      -Xcompiler -fPIC -shared -I${PROJECT_SOURCE_DIR}/include ${defines}
      ${CMAKE_CURRENT_SOURCE_DIR}/${source} -o ${output}
    DEPENDS ${source} ${headers}
    COMMENT "Building CUDA test artifact ${name}.so with nvcc"
    VERBATIM)
  add_custom_target(dsc_test_artifact_${name} DEPENDS ${output})
  set(DSC_TEST_CUDA_ARTIFACTS ${DSC_TEST_CUDA_ARTIFACTS}
    dsc_test_artifact_${name} PARENT_SCOPE)
endfunction()
dsc_test_cuda_artifact(tiny_cuda_w1 Inputs/TinyCudaArtifact.cu)
dsc_test_cuda_artifact(tiny_cuda_w2 Inputs/TinyCudaArtifact.cu
  TINY_WORLD_SIZE=2 TINY_MICRO_BATCH=2)

add_executable(RunCudaToolTest RunCudaToolTest.cpp)
dsc_runtime_cuda_executable(RunCudaToolTest)
target_link_libraries(RunCudaToolTest PRIVATE GTest::gmock GTest::gtest
  GTest::gtest_main)
target_compile_definitions(RunCudaToolTest PRIVATE
  DSC_RUN_BINARY="$<TARGET_FILE:dsc-run>"
  DSC_MPIRUN="${DSC_MPIRUN_LIST}"
  DSC_TEST_ARTIFACT_DIR="${DSC_TEST_ARTIFACT_DIR}"
  DSC_TEST_INPUTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}/Inputs"
  DSC_COMPILE_BINARY="${CMAKE_BINARY_DIR}/bin/dsc-compile")
add_dependencies(RunCudaToolTest dsc-run ${DSC_TEST_ARTIFACTS}
  ${DSC_TEST_CUDA_ARTIFACTS})
gtest_discover_tests(RunCudaToolTest DISCOVERY_TIMEOUT 60
  PROPERTIES TIMEOUT 300)

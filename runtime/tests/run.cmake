# Tests of the run component (dsc-run). RunTest runs its pieces in process;
# RunToolTest runs the dsc-run binary under mpirun with 1 and 2 ranks. Each
# ctest case has a TIMEOUT, and every process RunToolTest starts runs under
# timeout(1), so that no test can hang.

# Test artifacts: shared libraries built as dsc-compile builds artifacts
# (a module that leaves its runtime calls undefined), from Inputs/ with the
# knobs of TinyArtifact.cpp, into build/runtime/tests/artifacts/NAME.so.
set(DSC_TEST_ARTIFACT_DIR ${CMAKE_CURRENT_BINARY_DIR}/artifacts)
set(DSC_TEST_ARTIFACTS "")
function(dsc_test_artifact name source)
  set(target dsc_test_artifact_${name})
  add_library(${target} MODULE ${source})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_compile_definitions(${target} PRIVATE ${ARGN})
  set_target_properties(${target} PROPERTIES PREFIX "" SUFFIX ".so"
    OUTPUT_NAME ${name} LIBRARY_OUTPUT_DIRECTORY ${DSC_TEST_ARTIFACT_DIR})
  set(DSC_TEST_ARTIFACTS ${DSC_TEST_ARTIFACTS} ${target} PARENT_SCOPE)
endfunction()
dsc_test_artifact(tiny_w1 Inputs/TinyArtifact.cpp)
dsc_test_artifact(tiny_w2 Inputs/TinyArtifact.cpp TINY_WORLD_SIZE=2 TINY_MICRO_BATCH=2)
dsc_test_artifact(tiny_abi99 Inputs/TinyArtifact.cpp TINY_ABI_VERSION=99)
dsc_test_artifact(tiny_labels Inputs/TinyArtifact.cpp TINY_SECOND_INPUT="labels")
dsc_test_artifact(tiny_stall Inputs/TinyArtifact.cpp
  TINY_WORLD_SIZE=2 TINY_MICRO_BATCH=2 TINY_STALL_RANK=1)
dsc_test_artifact(tiny_missing_symbol Inputs/TinyArtifact.cpp TINY_CALL_MISSING)
dsc_test_artifact(tiny_ep2_w4 Inputs/TinyArtifact.cpp
  TINY_WORLD_SIZE=4 TINY_MICRO_BATCH=1 TINY_EXPERT_PARALLEL_SIZE=2)
dsc_test_artifact(tiny_ep3_w2 Inputs/TinyArtifact.cpp
  TINY_WORLD_SIZE=2 TINY_MICRO_BATCH=2 TINY_EXPERT_PARALLEL_SIZE=3)
dsc_test_artifact(not_an_artifact Inputs/NotAnArtifact.cpp)

# In process: dlopen()s the artifacts, so it exports the runtime as dsc-run.
add_executable(RunTest RunTest.cpp)
dsc_runtime_artifact_host(RunTest)
target_link_libraries(RunTest PRIVATE GTest::gmock GTest::gtest GTest::gtest_main)
target_compile_definitions(RunTest PRIVATE
  DSC_TEST_ARTIFACT_DIR="${DSC_TEST_ARTIFACT_DIR}")
add_dependencies(RunTest ${DSC_TEST_ARTIFACTS})
gtest_discover_tests(RunTest DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60)

# The binary under mpirun.
list(JOIN DSC_MPIRUN "|" DSC_MPIRUN_LIST)
add_executable(RunToolTest RunToolTest.cpp)
target_link_libraries(RunToolTest PRIVATE dsc_runtime GTest::gmock GTest::gtest
  GTest::gtest_main)
target_compile_definitions(RunToolTest PRIVATE
  DSC_RUN_BINARY="$<TARGET_FILE:dsc-run>"
  DSC_MPIRUN="${DSC_MPIRUN_LIST}"
  DSC_TEST_ARTIFACT_DIR="${DSC_TEST_ARTIFACT_DIR}"
  DSC_TEST_INPUTS_DIR="${CMAKE_CURRENT_SOURCE_DIR}/Inputs"
  DSC_ARTIFACT_FLAGS_FILE="${DSC_ARTIFACT_FLAGS_FILE}")
add_dependencies(RunToolTest dsc-run ${DSC_TEST_ARTIFACTS})
gtest_discover_tests(RunToolTest DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 180)

# dsc-run's targets (RunTarget) in process. An artifact host without the
# CUDA target, as a dsc-run built without CUDA support is: it must refuse
# cuda_target_stub, a CUDA artifact built without the toolkit.
dsc_test_artifact(cuda_target_stub Inputs/CudaTargetStub.cpp)
add_executable(RunTargetTest RunTargetTest.cpp)
dsc_runtime_artifact_host(RunTargetTest)
target_link_libraries(RunTargetTest PRIVATE GTest::gmock GTest::gtest
  GTest::gtest_main)
target_compile_definitions(RunTargetTest PRIVATE
  DSC_TEST_ARTIFACT_DIR="${DSC_TEST_ARTIFACT_DIR}")
add_dependencies(RunTargetTest ${DSC_TEST_ARTIFACTS})
gtest_discover_tests(RunTargetTest DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60)

# A dsc-run built without the CUDA backend refuses CUDA artifacts
# (cuda.cmake tests the dsc-run built with it).
if(NOT TARGET dsc_runtime_cuda)
  add_executable(RunNoCudaToolTest RunNoCudaToolTest.cpp)
  target_link_libraries(RunNoCudaToolTest PRIVATE dsc_runtime GTest::gmock
    GTest::gtest GTest::gtest_main)
  target_compile_definitions(RunNoCudaToolTest PRIVATE
    DSC_RUN_BINARY="$<TARGET_FILE:dsc-run>"
    DSC_MPIRUN="${DSC_MPIRUN_LIST}"
    DSC_TEST_ARTIFACT_DIR="${DSC_TEST_ARTIFACT_DIR}")
  add_dependencies(RunNoCudaToolTest dsc-run dsc_test_artifact_cuda_target_stub)
  gtest_discover_tests(RunNoCudaToolTest DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT 120)
endif()

# What the ranks compare before the first step (JobAgreement.h); dsc-run's
# refusal of ranks that disagree is in test/bad-input/ranks-*.test.
add_executable(JobAgreementTest JobAgreementTest.cpp)
target_link_libraries(JobAgreementTest PRIVATE dsc_runtime GTest::gmock
  GTest::gtest GTest::gtest_main)
gtest_discover_tests(JobAgreementTest DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60)

# The fill rules of states added by rewrites (upcycled experts, drawn gates).
add_executable(StateInitTest StateInitTest.cpp)
target_link_libraries(StateInitTest PRIVATE dsc_runtime GTest::gmock
  GTest::gtest GTest::gtest_main)
gtest_discover_tests(StateInitTest DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60)

# The warning about a rank held to fewer cores than its share.
add_executable(CpuBindingTest CpuBindingTest.cpp)
target_link_libraries(CpuBindingTest PRIVATE dsc_runtime GTest::gmock
                      GTest::gtest GTest::gtest_main)
gtest_discover_tests(CpuBindingTest DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60)

# DeepSpeed's curriculum and random-LTD schedules, and the variant buckets.
dsc_runtime_test(DataScheduleTest DataScheduleTest.cpp)

# Tests of checkpoints (dsc-run --save / --resume). CheckpointTest plays
# every rank of a save in process; CheckpointToolTest runs dsc-run under
# mpirun (MPMD for a save that fails on one rank). Included after run.cmake,
# whose test artifacts and mpirun command line it uses. Each ctest case has
# a TIMEOUT, and every process CheckpointToolTest starts runs under
# timeout(1), so that no test can hang.
add_executable(CheckpointTest CheckpointTest.cpp)
target_link_libraries(CheckpointTest PRIVATE dsc_runtime
  nlohmann_json::nlohmann_json GTest::gmock GTest::gtest GTest::gtest_main)
gtest_discover_tests(CheckpointTest DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60)

add_executable(CheckpointToolTest CheckpointToolTest.cpp)
target_link_libraries(CheckpointToolTest PRIVATE dsc_runtime
  nlohmann_json::nlohmann_json GTest::gmock GTest::gtest GTest::gtest_main)
target_compile_definitions(CheckpointToolTest PRIVATE
  DSC_RUN_BINARY="$<TARGET_FILE:dsc-run>"
  DSC_MPIRUN="${DSC_MPIRUN_LIST}"
  DSC_TEST_ARTIFACT_DIR="${DSC_TEST_ARTIFACT_DIR}")
add_dependencies(CheckpointToolTest dsc-run ${DSC_TEST_ARTIFACTS})
gtest_discover_tests(CheckpointToolTest DISCOVERY_TIMEOUT 60
  PROPERTIES TIMEOUT 180)

add_executable(CheckpointExportTest CheckpointExportTest.cpp)
target_link_libraries(CheckpointExportTest PRIVATE dsc_runtime
  nlohmann_json::nlohmann_json GTest::gmock GTest::gtest GTest::gtest_main)
gtest_discover_tests(CheckpointExportTest DISCOVERY_TIMEOUT 60
  PROPERTIES TIMEOUT 60)

add_executable(CheckpointCrashTest CheckpointCrashTest.cpp)
target_link_libraries(CheckpointCrashTest PRIVATE dsc_runtime
  GTest::gtest GTest::gtest_main)
gtest_discover_tests(CheckpointCrashTest DISCOVERY_TIMEOUT 60
  PROPERTIES TIMEOUT 120)

add_executable(BlockSubsetTest BlockSubsetTest.cpp)
target_link_libraries(BlockSubsetTest PRIVATE dsc_runtime
  GTest::gmock GTest::gtest GTest::gtest_main)
gtest_discover_tests(BlockSubsetTest DISCOVERY_TIMEOUT 60
  PROPERTIES TIMEOUT 60)

add_executable(CheckpointPipelineTest CheckpointPipelineTest.cpp)
target_link_libraries(CheckpointPipelineTest PRIVATE dsc_runtime
  nlohmann_json::nlohmann_json GTest::gmock GTest::gtest GTest::gtest_main)
gtest_discover_tests(CheckpointPipelineTest DISCOVERY_TIMEOUT 60
  PROPERTIES TIMEOUT 60)

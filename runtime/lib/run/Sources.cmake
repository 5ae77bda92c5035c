# Sources of the run component: dsc-run's logic (the tool's main is in
# tools/dsc-run/). ArtifactHost.cmake defines how an executable that loads
# artifacts links the runtime. The CUDA target's sources
# (DSC_RUN_CUDA_SOURCES) need dsc_runtime_cuda: ArtifactHost.cmake builds
# them into dsc_run_cuda for the hosts of CUDA artifacts.
list(APPEND DSC_RUNTIME_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/ArtifactLibrary.cpp
  ${CMAKE_CURRENT_LIST_DIR}/RunOptions.cpp
  ${CMAKE_CURRENT_LIST_DIR}/RunPlan.cpp
  ${CMAKE_CURRENT_LIST_DIR}/RunData.cpp
  ${CMAKE_CURRENT_LIST_DIR}/StateSource.cpp
  ${CMAKE_CURRENT_LIST_DIR}/StateInit.cpp
  ${CMAKE_CURRENT_LIST_DIR}/RunStepContext.cpp
  ${CMAKE_CURRENT_LIST_DIR}/RunTarget.cpp
  ${CMAKE_CURRENT_LIST_DIR}/RunMetrics.cpp
  ${CMAKE_CURRENT_LIST_DIR}/DataSchedule.cpp
  ${CMAKE_CURRENT_LIST_DIR}/RunDumpOutputs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/RunDumpStates.cpp
  ${CMAKE_CURRENT_LIST_DIR}/RunLtdIndices.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Checksum.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CpuBinding.cpp
  ${CMAKE_CURRENT_LIST_DIR}/JobAgreement.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CheckpointSave.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CheckpointLoad.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CheckpointExport.cpp
  ${CMAKE_CURRENT_LIST_DIR}/BlockSubset.cpp
  ${CMAKE_CURRENT_LIST_DIR}/RunMain.cpp)
set(DSC_RUN_CUDA_SOURCES ${CMAKE_CURRENT_LIST_DIR}/CudaRun.cpp)
include(${CMAKE_CURRENT_LIST_DIR}/ArtifactHost.cmake)

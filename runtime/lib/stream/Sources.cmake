# Sources of the stream component (Stream.h): the interface and its CPU
# backend. The CUDA backend, CudaStream.cpp, is listed by cuda/Cuda.cmake
# (it goes into dsc_runtime_cuda).
set(DSC_RUNTIME_STREAM_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/Stream.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CpuQueue.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CpuStream.cpp)
set_source_files_properties(${DSC_RUNTIME_STREAM_SOURCES} PROPERTIES
  COMPILE_OPTIONS "-Wall;-Wextra")
list(APPEND DSC_RUNTIME_SOURCES ${DSC_RUNTIME_STREAM_SOURCES})

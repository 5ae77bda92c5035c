# The CUDA backend: dsc_runtime_cuda, a static library beside dsc_runtime
# (which it links), over the CUDA runtime, cuBLASLt and, when found, NCCL.
# Plain C++ calling the CUDA APIs: no device code, so no CUDA language.
# Included by runtime/CMakeLists.txt when DSC_ENABLE_CUDA is on.

find_library(DSC_NCCL_LIBRARY nccl
  HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_ROOT}/lib64 /usr/local/cuda/lib64)
find_path(DSC_NCCL_INCLUDE_DIR nccl.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_ROOT}/include /usr/local/cuda/include)

set(DSC_RUNTIME_CUDA_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/Device.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Gemm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../stream/CudaStream.cpp
  ${CMAKE_CURRENT_LIST_DIR}/MemoryPool.cpp)
if(DSC_NCCL_LIBRARY AND DSC_NCCL_INCLUDE_DIR)
  set(DSC_HAVE_NCCL ON)
  list(APPEND DSC_RUNTIME_CUDA_SOURCES ${CMAKE_CURRENT_LIST_DIR}/NcclComm.cpp)
else()
  set(DSC_HAVE_NCCL OFF)
  message(STATUS "dsc runtime: NCCL not found; dsc_runtime_cuda has no NcclCommunicator")
endif()

add_library(dsc_runtime_cuda STATIC ${DSC_RUNTIME_CUDA_SOURCES})
target_link_libraries(dsc_runtime_cuda PUBLIC dsc_runtime CUDA::cudart CUDA::cublasLt)
if(DSC_HAVE_NCCL)
  target_include_directories(dsc_runtime_cuda SYSTEM PUBLIC ${DSC_NCCL_INCLUDE_DIR})
  target_link_libraries(dsc_runtime_cuda PUBLIC ${DSC_NCCL_LIBRARY})
  target_compile_definitions(dsc_runtime_cuda PUBLIC DSC_HAVE_NCCL=1)
endif()
target_compile_options(dsc_runtime_cuda PRIVATE -Wall -Wextra)
set_target_properties(dsc_runtime_cuda PROPERTIES POSITION_INDEPENDENT_CODE ON)

# Where the CUDA libraries are, for the run paths of executables that link
# dsc_runtime_cuda: they run without LD_LIBRARY_PATH.
set(DSC_CUDA_RPATH ${CUDAToolkit_LIBRARY_DIR})
if(DSC_HAVE_NCCL)
  get_filename_component(_dsc_nccl_dir ${DSC_NCCL_LIBRARY} DIRECTORY)
  list(APPEND DSC_CUDA_RPATH ${_dsc_nccl_dir})
endif()
# Their run path replaces CMake's own, which would name libomp's directory.
if(DSC_OPENMP_LIBRARY_DIR)
  list(APPEND DSC_CUDA_RPATH ${DSC_OPENMP_LIBRARY_DIR})
endif()
list(REMOVE_DUPLICATES DSC_CUDA_RPATH)

# Links `target` (an executable) with dsc_runtime_cuda and sets its run path
# to the CUDA libraries. With WHOLE_ARCHIVE, links every object of the
# archive, as an artifact host must (run/ArtifactHost.cmake).
function(dsc_runtime_cuda_executable target)
  cmake_parse_arguments(ARG "WHOLE_ARCHIVE" "" "" ${ARGN})
  if(ARG_WHOLE_ARCHIVE)
    target_link_libraries(${target} PRIVATE
      "$<LINK_LIBRARY:WHOLE_ARCHIVE,dsc_runtime_cuda>")
  else()
    target_link_libraries(${target} PRIVATE dsc_runtime_cuda)
  endif()
  set_target_properties(${target} PROPERTIES
    BUILD_RPATH "${DSC_CUDA_RPATH}" INSTALL_RPATH "${DSC_CUDA_RPATH}")
endfunction()

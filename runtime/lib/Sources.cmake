# Each component lists its sources in its own file, so that components can
# be worked on independently.
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Error.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Artifact.cpp ${CMAKE_CURRENT_LIST_DIR}/Xxh64.cpp)
include(${CMAKE_CURRENT_LIST_DIR}/memory/Sources.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/io/Sources.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/comm/Sources.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/cpu/Sources.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/stream/Sources.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/run/Sources.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/kernels/Sources.cmake)

# Sources of the memory component (append with list(APPEND DSC_RUNTIME_SOURCES ...)).
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/MemoryPool.cpp)

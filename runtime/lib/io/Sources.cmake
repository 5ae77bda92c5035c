# Sources of the io component (append with list(APPEND DSC_RUNTIME_SOURCES ...)).
list(APPEND DSC_RUNTIME_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/PosixFile.cpp
  ${CMAKE_CURRENT_LIST_DIR}/DType.cpp
  ${CMAKE_CURRENT_LIST_DIR}/TensorShape.cpp
  ${CMAKE_CURRENT_LIST_DIR}/SafeTensorsReader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/SafeTensorsWriter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/OutputFile.cpp
  ${CMAKE_CURRENT_LIST_DIR}/BatchLayout.cpp
  ${CMAKE_CURRENT_LIST_DIR}/TokenData.cpp
  ${CMAKE_CURRENT_LIST_DIR}/SampleData.cpp
  ${CMAKE_CURRENT_LIST_DIR}/NvmeFile.cpp
  ${CMAKE_CURRENT_LIST_DIR}/NvmeStore.cpp
  ${CMAKE_CURRENT_LIST_DIR}/NvmeIoThread.cpp)

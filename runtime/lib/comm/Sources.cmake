# Sources of the comm component (append with list(APPEND DSC_RUNTIME_SOURCES ...)).
list(APPEND DSC_RUNTIME_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/CommGroups.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CommStats.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CommTypes.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Communicator.cpp
  ${CMAKE_CURRENT_LIST_DIR}/EnvLookup.cpp
  ${CMAKE_CURRENT_LIST_DIR}/MpiFloat16Ops.cpp
  ${CMAKE_CURRENT_LIST_DIR}/MpiCommunicator.cpp
  ${CMAKE_CURRENT_LIST_DIR}/RankInfo.cpp
  ${CMAKE_CURRENT_LIST_DIR}/StartupWatchdog.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Watchdog.cpp)

# One line per component; keep alphabetical.
list(APPEND DSC_RUNTIME_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/Error.cpp
)

# Sources of the memory component (append with list(APPEND DSC_RUNTIME_SOURCES ...)).

# Sources of the comm component (append with list(APPEND DSC_RUNTIME_SOURCES ...)).

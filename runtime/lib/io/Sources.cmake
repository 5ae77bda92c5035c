# Sources of the io component (append with list(APPEND DSC_RUNTIME_SOURCES ...)).

# The kernel library (runtime/include/dsc/kernels/): one .cpp of explicit
# instantiations per family, compiled into dsc_runtime with OpenMP (the
# runtime links OpenMP::OpenMP_CXX); the CUDA kernels are header-only
# (dsc/kernels/cuda/). One line per family.
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Copy.cpp)
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Gemm.cpp)
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Reduce.cpp)
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Embedding.cpp)
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Permute.cpp)
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Layout.cpp)
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Routing.cpp)
# Optimizer: -fno-math-errno lets sqrt vectorise (it changes no value);
# -ffp-contract=off keeps every product and sum rounded, as the pass's.
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Optimizer.cpp)
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/Optimizer.cpp PROPERTIES COMPILE_OPTIONS "-fno-math-errno;-ffp-contract=off")
# Row kernels and the fused classifier, at -O3; -fno-trapping-math lets the
# compiler vectorize their loops' comparisons (no result changes: nothing
# traps on floating-point flags); -ffp-contract=off keeps every product and
# sum rounded on machines with FMA too.
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Row.cpp ${CMAKE_CURRENT_LIST_DIR}/Classifier.cpp)
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/Row.cpp ${CMAKE_CURRENT_LIST_DIR}/Classifier.cpp
  PROPERTIES COMPILE_OPTIONS "-O3;-fno-trapping-math;-ffp-contract=off")
# f64 rows: plain double loops (no flags: their value is the exact formula).
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/RowF64.cpp)
# Attention at -O3; -fno-trapping-math lets its exponentials' selects
# vectorise.
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Attention.cpp)
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/Attention.cpp
  PROPERTIES COMPILE_OPTIONS "-O3;-fno-trapping-math")
# Mixture-of-experts routing: -ffp-contract=off keeps every product and sum
# rounded, so the sums are those of the CUDA kernels bitwise.
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Moe.cpp)
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/Moe.cpp
  PROPERTIES COMPILE_OPTIONS "-O3;-fno-trapping-math;-ffp-contract=off")
# Random ops: -ffp-contract=off keeps the dropout's product rounded as the
# CUDA kernel's (__fmul_rn).
list(APPEND DSC_RUNTIME_SOURCES ${CMAKE_CURRENT_LIST_DIR}/Random.cpp)
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/Random.cpp
  PROPERTIES COMPILE_OPTIONS "-O3;-ffp-contract=off")

//===- Kernels.cuh - the CUDA kernel library, every family ------*- C++ -*-===//
//
// What generated CUDA code includes: each family's header (see
// docs/kernels.md).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_KERNELS_CUH
#define DSC_KERNELS_CUDA_KERNELS_CUH

#include "dsc/kernels/cuda/Attention.cuh"
#include "dsc/kernels/cuda/Classifier.cuh"
#include "dsc/kernels/cuda/Copy.cuh"
#include "dsc/kernels/cuda/Embedding.cuh"
#include "dsc/kernels/cuda/Gemm.cuh"
#include "dsc/kernels/cuda/Layout.cuh"
#include "dsc/kernels/cuda/Moe.cuh"
#include "dsc/kernels/cuda/Optimizer.cuh"
#include "dsc/kernels/cuda/Permute.cuh"
#include "dsc/kernels/cuda/Random.cuh"
#include "dsc/kernels/cuda/Reduce.cuh"
#include "dsc/kernels/cuda/Routing.cuh"
#include "dsc/kernels/cuda/Row.cuh"
#include "dsc/kernels/cuda/RowF64.cuh"

#endif // DSC_KERNELS_CUDA_KERNELS_CUH

//===- Kernels.h - the CPU kernel library, every family ---------*- C++ -*-===//
//
// What generated CPU code includes: each family's header (see docs/kernels.md).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_KERNELS_H
#define DSC_KERNELS_KERNELS_H

#include "dsc/kernels/Attention.h"
#include "dsc/kernels/Classifier.h"
#include "dsc/kernels/Copy.h"
#include "dsc/kernels/Embedding.h"
#include "dsc/kernels/Gemm.h"
#include "dsc/kernels/Layout.h"
#include "dsc/kernels/Moe.h"
#include "dsc/kernels/Optimizer.h"
#include "dsc/kernels/Permute.h"
#include "dsc/kernels/Queue.h"
#include "dsc/kernels/Random.h"
#include "dsc/kernels/Reduce.h"
#include "dsc/kernels/Routing.h"
#include "dsc/kernels/Row.h"
#include "dsc/kernels/RowF64.h"

#endif // DSC_KERNELS_KERNELS_H

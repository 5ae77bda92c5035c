// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s --check-prefix=CPP

// Forms of non-elementwise ops the library has no kernel for become
// library kernels after a rewrite in the lowering (--dsc-decompose-for-library):
// no non-elementwise op is left to generated loops.

// CHECK-LABEL: func.func @step()
func.func @forward(%x: tensor<4x6x5xf32>, %i32: tensor<4x6x5xi32>, %c32: tensor<6xi32>,
                   %flags: tensor<4x6x5xi1>, %src: tensor<4x6x5xi1>,
                   %d: tensor<3x7xf64>, %g: tensor<7xf64>, %t: tensor<3xi64>,
                   %s: tensor<3xf64>)
    -> (tensor<4x1x5xf32>, tensor<4x6x5xf32>, tensor<6x8xi32>, tensor<4x6x5xi1>,
        tensor<3x7xf64>, tensor<3xf64>, tensor<3x7xf64>) {
  // Dims [0, 2] with keep_dims: permuted last, the trailing dims reduced,
  // and a reshape to 1x6x1.
  // CHECK: dscrt.kernel "permute" on
  // CHECK: dsc.permute %{{.*}}, [1, 0, 2] : tensor<4x6x5xf32>
  // CHECK: dscrt.kernel "reduce" on
  // CHECK: dsc.reduce_max %{{.*}}, dims = [1, 2] : tensor<6x4x5xf32>
  %m = dsc.reduce_max %x, dims = [0, 2] keep_dims : tensor<4x6x5xf32>
  %mb = dsc.broadcast %m : tensor<1x6x1xf32> -> tensor<4x6x5xf32>
  %r = dsc.reduce_sum %mb, dims = [1] keep_dims : tensor<4x6x5xf32>
  // An i32 gather index: converted, then the library's gather.
  // CHECK: dsc.convert %{{.*}} : tensor<4x6x5xi32> to tensor<4x6x5xi64>
  // CHECK: dscrt.kernel "gather" on
  %gx = dsc.gather %x, %i32, dim = 2 : tensor<4x6x5xf32>, tensor<4x6x5xi32>
  // An i32 one-hot index.
  // CHECK: dsc.convert %{{.*}} : tensor<6xi32> to tensor<6xi64>
  // CHECK: dscrt.kernel "one_hot" on
  // CHECK: dsc.one_hot %{{.*}} : tensor<6xi64> -> tensor<6x8xi32>
  %oh = dsc.one_hot %c32 : tensor<6xi32> -> tensor<6x8xi32>
  // i1 scatter-add: the sum of booleans in i64, then `!= 0` (their or).
  // CHECK: dsc.convert %{{.*}} : tensor<4x6x5xi1> to tensor<4x6x5xi64>
  // CHECK: dscrt.kernel "scatter_add" on
  // CHECK: dsc.scatter_add %{{.*}}, %{{.*}}, %{{.*}}, dim = 0 : tensor<4x6x5xi64>, tensor<4x6x5xi64>, tensor<4x6x5xi64>
  // CHECK: dsc.convert %{{.*}} : tensor<4x6x5xi64> to tensor<4x6x5xi1>
  %sa = dsc.scatter_add %flags, %i32, %src, dim = 0 : tensor<4x6x5xi1>, tensor<4x6x5xi32>, tensor<4x6x5xi1>
  // f64 rows and losses: the library's double kernels.
  // CHECK: dscrt.kernel "row" on
  // CHECK: dsc.layer_norm
  %ln = dsc.layer_norm %d weight(%g : tensor<7xf64>) {epsilon = 1.0e-05 : f64} : tensor<3x7xf64>
  // CHECK: dscrt.kernel "classifier" on
  // CHECK: dsc.cross_entropy
  %ce = dsc.cross_entropy %d, %t reduction = none : tensor<3x7xf64>, tensor<3xi64>
  // An f64 loss gradient, which the fused classifier does not take:
  // softmax (an f64 row kernel) minus one-hot, times the scale zeroed on
  // ignored rows.
  // CHECK: dscrt.kernel "row" on
  // CHECK: dsc.softmax %{{.*}}, dim = 1 : tensor<3x7xf64>
  // CHECK: dscrt.kernel "one_hot" on
  // CHECK: dsc.one_hot %{{.*}} : tensor<3xi64> -> tensor<3x7xf64>
  // CHECK-NOT: dsc.cross_entropy_grad
  // CHECK: dsc.compare ne
  // CHECK: dsc.sub
  // CHECK-NOT: dsc.cross_entropy_grad
  %dce = dsc.cross_entropy_grad %d, %t, %s : tensor<3x7xf64>, tensor<3xi64>, tensor<3xf64>
  return %r, %gx, %oh, %sa, %ln, %ce, %dce : tensor<4x1x5xf32>, tensor<4x6x5xf32>,
      tensor<6x8xi32>, tensor<4x6x5xi1>, tensor<3x7xf64>, tensor<3xf64>, tensor<3x7xf64>
}

// keep_dims' size-1 dims: a reshape of the reduced [6] to [1, 6, 1] (a copy
// of the same bytes, or none).
// CPP: dsc_kernels::reduceMax(stream, DSC_LIB(in0), DSC_LIB(out0), 6, 20, 1);
// CPP: dsc_kernels::gather(
// CPP: dsc_kernels::oneHot(
// CPP: dsc_kernels::scatterAdd(
// CPP: dsc_kernels::layerNormForward(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(static_cast<const double *>(nullptr)), DSC_LIB(out0), static_cast<float *>(nullptr), static_cast<float *>(nullptr), 3, 7, 1.00000000000000008e-05);
// CPP: dsc_kernels::crossEntropyForward(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(out0), 3, 7, -100 DSC_INDEX_FAULT);

// dsc.all_reduce ... maximum lowers to dscrt.all_reduce ... maximum and is
// emitted as the runtime's allReduceMax; the sums beside it stay
// allReduceSum. (A vocabulary-parallel loss's largest logit.)
// RUN: dsc-opt %s --dsc-data-parallel=world-size=2 --dsc-lower-to-runtime | FileCheck %s --check-prefix=RT
// RUN: dsc-opt %s --dsc-data-parallel=world-size=2 --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s

// RT: dscrt.all_reduce %{{.*}} on %{{.*}} maximum {sequence = 0 : i64} : memref<4xf32>
// RT: dscrt.all_reduce %{{.*}} on %{{.*}} {sequence = 1 : i64} : memref<f32>
// CHECK: ctx->allReduceMax(v{{[0-9]+}}, 4, ElementType::F32, 0, s{{[0-9]+}}, dsc::rt::CommGroup::World);
// CHECK: ctx->allReduceSum(v{{[0-9]+}}, 1, ElementType::F32, 1, s{{[0-9]+}}, dsc::rt::CommGroup::World);
// CHECK-NOT: allReduceMax
module {
  func.func @forward(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
    %m = dsc.all_reduce %x maximum : tensor<4xf32>
    %loss = dsc.reduce_sum %m, dims = [0] : tensor<4xf32>
    return %loss : tensor<f32>
  }
}

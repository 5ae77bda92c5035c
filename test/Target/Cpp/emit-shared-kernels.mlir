// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp --dscrt-split-bytes=1 | FileCheck %s --check-prefix=SPLIT
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp --dscrt-share-kernels=false | FileCheck %s --check-prefix=OWN

// Launches whose kernels are the same code (the same body on the same
// shapes, as every layer of a model has) share one function: the generated
// code grows with the kinds of kernels, not with the launches. The
// optimizer family's kernels keep a table and scratch per call site
// (function-local statics) and are never shared.

// CHECK-LABEL: static void kernel0(dsc_stream_t stream, const float *__restrict in0, const float *__restrict in1, float *__restrict out0) {
// CHECK-LABEL: static void kernel1(
// CHECK-NEXT: softmax
// CHECK-LABEL: static void kernel2(dsc_stream_t stream, const float *__restrict in0, const float *__restrict in1, float *__restrict out0) {
// CHECK-LABEL: static void kernel3(
// CHECK: multiTensorSumSquares
// CHECK-LABEL: static void kernel4(
// CHECK: multiTensorSumSquares
// CHECK-NOT: static void kernel5(
// CHECK-LABEL: dsc_artifact_step
// CHECK: kernel0_task, {dsc_ptr([[A:v[0-9]+]]), dsc_ptr([[B:v[0-9]+]]), dsc_ptr([[X:v[0-9]+]])}, 0}, "kernel0 (dsc.add)"
// CHECK-NEXT: auto
// CHECK-NEXT: kernel1_task, {dsc_ptr([[X]]), dsc_ptr([[P:v[0-9]+]])}, 0}, "kernel1 (dsc.softmax)"
// CHECK-NEXT: auto
// CHECK-NEXT: kernel0_task, {dsc_ptr([[P]]), dsc_ptr([[B]]), dsc_ptr({{v[0-9]+}})}, 0}, "kernel0 (dsc.add)"
// CHECK-NEXT: auto
// CHECK-NEXT: kernel2_task, {{.*}} "kernel2 (dsc.add)"
// CHECK: kernel3_task, {{.*}} "kernel3 (dsc.sum_squares)"
// CHECK: kernel4_task, {{.*}} "kernel4 (dsc.sum_squares)"

// CUDA-COUNT-5: static void kernel{{[0-9]}}(
// CUDA-NOT: static void kernel{{[0-9]}}(
// CUDA-LABEL: dsc_artifact_step
// CUDA: kernel0(s0_h,
// CUDA: kernel1(s0_h,
// CUDA: kernel0(s0_h,
// CUDA: kernel2(s0_h,

// Split: each function is in one unit, with one entry.
// SPLIT-COUNT-5: DSC_PART void kernel{{[0-9]}}_part(
// SPLIT-NOT: DSC_PART void kernel{{[0-9]}}_part(
// SPLIT-LABEL: //--- kernels1.cpp
// SPLIT: DSC_PART void kernel0_part(
// SPLIT-NOT: DSC_PART void kernel0_part(

// --dscrt-share-kernels=false: a function per launch.
// OWN-COUNT-6: static void kernel{{[0-9]}}(
// OWN-NOT: static void kernel{{[0-9]}}(
// OWN-LABEL: dsc_artifact_step
// OWN: "kernel0 (dsc.add)"
// OWN: "kernel1 (dsc.softmax)"
// OWN: "kernel2 (dsc.add)"

func.func @forward(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<8x4xf32>, %d: tensor<8x4xf32>)
    -> (tensor<4x8xf32>, tensor<8x4xf32>, tensor<f32>, tensor<f32>) {
  // Two "layers": add + tanh, a softmax (a library call, which ends the
  // fused chain), add + tanh again on the same shapes.
  %s1 = dsc.add %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
  %t1 = dsc.tanh %s1 : tensor<4x8xf32>
  %p1 = dsc.softmax %t1, dim = 1 : tensor<4x8xf32>
  %s2 = dsc.add %p1, %b : tensor<4x8xf32>, tensor<4x8xf32>
  %t2 = dsc.tanh %s2 : tensor<4x8xf32>
  // The same chain on other shapes: another function.
  %s3 = dsc.add %c, %d : tensor<8x4xf32>, tensor<8x4xf32>
  %t3 = dsc.tanh %s3 : tensor<8x4xf32>
  %one = dsc.constant dense<1.0> : tensor<f32>
  %n1 = dsc.sum_squares(%a, %b : tensor<4x8xf32>, tensor<4x8xf32>) scale(%one : tensor<f32>) : tensor<f32>
  %n2 = dsc.sum_squares(%a, %b : tensor<4x8xf32>, tensor<4x8xf32>) scale(%one : tensor<f32>) : tensor<f32>
  return %t2, %t3, %n1, %n2 : tensor<4x8xf32>, tensor<8x4xf32>, tensor<f32>, tensor<f32>
}

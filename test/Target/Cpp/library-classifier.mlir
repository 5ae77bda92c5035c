// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// Per-token cross-entropy is one call into the classifier
// (dsc/kernels/Classifier.h). Bad targets: the CPU kernel throws, the CUDA
// kernel records them in the preamble's index check (DSC_INDEX_FAULT).
// CHECK: #include "dsc/runtime/GeneratedCode.h"
// CUDA: #include "dsc/runtime/GeneratedCode.cuh"

func.func @forward(%logits: tensor<2x4x50xf32>, %t: tensor<2x4xi64>, %hl: tensor<3x10xbf16>,
                   %ht: tensor<3xi64>, %t32: tensor<2x4xi32>)
    -> (tensor<2x4xf32>, tensor<3xbf16>, tensor<f32>, tensor<2x4xf32>) {
  // 8 rows of 50 classes, ignore_index 0.
  // CHECK-LABEL: static void kernel0(dsc_stream_t stream, const float *__restrict in0, const int64_t *__restrict in1, float *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::crossEntropyForward(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(out0), 8, 50, 0 DSC_INDEX_FAULT);
  // CHECK-NEXT: }
  // CUDA-LABEL: static void kernel0(
  // CUDA-NEXT: dsc_kernels::crossEntropyForward(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(out0), 8, 50, 0 DSC_INDEX_FAULT);
  %a = dsc.cross_entropy %logits, %t ignore_index = 0 reduction = none : tensor<2x4x50xf32>, tensor<2x4xi64>
  // bf16 logits, the default ignore_index (a negative literal).
  // CHECK-LABEL: static void kernel1(dsc_stream_t stream, const dsc_bf16 *__restrict in0, const int64_t *__restrict in1, dsc_bf16 *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::crossEntropyForward(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(out0), 3, 10, -100 DSC_INDEX_FAULT);
  %b = dsc.cross_entropy %hl, %ht reduction = none : tensor<3x10xbf16>, tensor<3xi64>
  // A mean is expanded into per-token losses (the classifier) and a sum.
  // CHECK-LABEL: static void kernel2(
  // CHECK-NEXT: dsc_kernels::crossEntropyForward(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(out0), 8, 50, -100 DSC_INDEX_FAULT);
  %c = dsc.cross_entropy %logits, %t : tensor<2x4x50xf32>, tensor<2x4xi64>
  // i32 targets: converted to int64 (a generated loop), then the classifier:
  // the same call as the mean's, so the same function (kernel2), launched
  // on other buffers. The mean's two sums share one function too.
  // CHECK: static void kernel6(dsc_stream_t stream, const int32_t *__restrict in0, int64_t *__restrict out0) {
  // CHECK-NOT: static void kernel7(
  // CHECK: enqueue(dsc_task_t{kernel2_task, {dsc_ptr([[LOGITS:v[0-9]+]]), dsc_ptr([[T:v[0-9]+]]), {{.*}} "kernel2 (dsc.cross_entropy)");
  // CHECK: enqueue(dsc_task_t{kernel3_task, {{.*}} "kernel3 (dsc.reduce_sum)");
  // CHECK: enqueue(dsc_task_t{kernel3_task, {{.*}} "kernel3 (dsc.reduce_sum)");
  // CHECK: enqueue(dsc_task_t{kernel6_task, {{.*}}, dsc_ptr([[T32:v[0-9]+]])}, 0}, "kernel6 (dsc.convert)");
  // CHECK-NEXT: auto
  // CHECK-NEXT: enqueue(dsc_task_t{kernel2_task, {dsc_ptr([[LOGITS]]), dsc_ptr([[T32]]), {{.*}} "kernel2 (dsc.cross_entropy)");
  %d = dsc.cross_entropy %logits, %t32 reduction = none : tensor<2x4x50xf32>, tensor<2x4xi32>
  return %a, %b, %c, %d : tensor<2x4xf32>, tensor<3xbf16>, tensor<f32>, tensor<2x4xf32>
}


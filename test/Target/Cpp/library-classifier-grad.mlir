// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// The gradient, dsc.cross_entropy_grad, is the fused classifier without
// the loss: one pass over each row writes (softmax - onehot) * scale[r]
// (scale stride 1: one element per row), never the probabilities.
func.func @forward(%logits: tensor<2x4x50xf32>, %t: tensor<2x4xi64>, %s: tensor<2x4xf32>,
                    %hl: tensor<3x10xbf16>, %ht: tensor<3xi64>, %hs: tensor<3xbf16>)
    -> (tensor<2x4x50xf32>, tensor<3x10xbf16>) {
  // CHECK-LABEL: static void kernel0(dsc_stream_t stream, const float *__restrict in0, const int64_t *__restrict in1, const float *__restrict in2, float *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::fusedClassifier(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(in2), DSC_LIB(out0), DSC_LIB(static_cast<float *>(nullptr)), 1, 8, 50, 0 DSC_INDEX_FAULT);
  // CHECK-NEXT: }
  // CUDA-LABEL: static void kernel0(
  // CUDA-NEXT: dsc_kernels::fusedClassifier(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(in2), DSC_LIB(out0), DSC_LIB(static_cast<float *>(nullptr)), 1, 8, 50, 0 DSC_INDEX_FAULT);
  %a = dsc.cross_entropy_grad %logits, %t, %s ignore_index = 0 : tensor<2x4x50xf32>, tensor<2x4xi64>, tensor<2x4xf32>
  // CHECK-LABEL: static void kernel1(dsc_stream_t stream, const dsc_bf16 *__restrict in0, const int64_t *__restrict in1, const dsc_bf16 *__restrict in2, dsc_bf16 *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::fusedClassifier(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(in2), DSC_LIB(out0), DSC_LIB(static_cast<dsc_bf16 *>(nullptr)), 1, 3, 10, -100 DSC_INDEX_FAULT);
  %b = dsc.cross_entropy_grad %hl, %ht, %hs : tensor<3x10xbf16>, tensor<3xi64>, tensor<3xbf16>
  return %a, %b : tensor<2x4x50xf32>, tensor<3x10xbf16>
}

// RUN: dsc-opt %s -split-input-file --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp -split-input-file | FileCheck %s

// An input that indexes a table records the bound dsc-run checks its values
// against as it feeds them (TensorDesc::indexLimit): cross-entropy targets
// whose ignore_index lies in [0, classes) are bounded by the classes.
// CHECK-LABEL: const dsc::rt::TensorDesc kInputs[] = {
// CHECK-NEXT: {"labels", ElementType::I64, 1, kShape{{[0-9]+}}, 3},
dsc.state parameter @"logits" : tensor<2x3xf32>
func.func @forward(%labels: tensor<2xi64> {dsc.input = "labels"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %l = dsc.load @"logits" : tensor<2x3xf32>
  %loss = dsc.cross_entropy %l, %labels ignore_index = 0 reduction = mean : tensor<2x3xf32>, tensor<2xi64>
  return %loss : tensor<f32>
}

// -----

// With PyTorch's default ignore_index, -100 (Hugging Face's padding label),
// a target outside [0, classes) is valid: no bound is recorded, and the
// kernel checks every other target itself.
// CHECK-LABEL: const dsc::rt::TensorDesc kInputs[] = {
// CHECK-NEXT: {"labels", ElementType::I64, 1, kShape{{[0-9]+}}},
dsc.state parameter @"logits" : tensor<2x3xf32>
func.func @forward(%labels: tensor<2xi64> {dsc.input = "labels"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %l = dsc.load @"logits" : tensor<2x3xf32>
  %loss = dsc.cross_entropy %l, %labels : tensor<2x3xf32>, tensor<2xi64>
  return %loss : tensor<f32>
}


// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// Expert routing (dsc/kernels/Moe.h) as library calls: the layer's shape
// is a MoeShape literal {S, k, M, E, C}; an absent priority is a null
// pointer, an absent weight a null pointer of the rows' type (so both
// targets deduce the template argument from it alike); every kernel takes
// the index-fault record last on CUDA.

func.func @forward(%experts: tensor<16x2xi64>, %priority: tensor<16x2xf32>,
                   %x: tensor<16x32xbf16>, %w: tensor<16x2xbf16>)
    -> (tensor<16x2xi64>, tensor<4xi64>, tensor<16x2xi64>, tensor<16x32xbf16>,
        tensor<16x2xbf16>) {
  // CHECK-LABEL: static void kernel0(dsc_stream_t stream, const int64_t *__restrict in0, int64_t *__restrict out0, int64_t *__restrict out1) {
  // CHECK-NEXT: dsc_kernels::moeSlots(stream, DSC_LIB(in0), nullptr, DSC_LIB(out0), DSC_LIB(out1), dsc::kernels::MoeShape{16, 2, 0, 4, 5} DSC_INDEX_FAULT);
  // CUDA-LABEL: static void kernel0(
  // CUDA-NEXT: dsc_kernels::moeSlots(stream, DSC_LIB(in0), nullptr, DSC_LIB(out0), DSC_LIB(out1), dsc::kernels::MoeShape{16, 2, 0, 4, 5} DSC_INDEX_FAULT);
  %slots, %counts = dsc.moe_slots %experts, capacity = 5
      : tensor<16x2xi64> -> tensor<16x2xi64>, tensor<4xi64>
  // CHECK-LABEL: static void kernel1(
  // CHECK-NEXT: dsc_kernels::moeSlots(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(out0), DSC_LIB(out1), dsc::kernels::MoeShape{16, 2, 0, 4, 3} DSC_INDEX_FAULT);
  %kept, %c2 = dsc.moe_slots %experts priority %priority, capacity = 3
      : tensor<16x2xi64>, tensor<16x2xf32> -> tensor<16x2xi64>, tensor<4xi64>
  // CHECK-LABEL: static void kernel2(dsc_stream_t stream, const dsc_bf16 *__restrict in0, const int64_t *__restrict in1, dsc_bf16 *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::moeDispatch(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(static_cast<const dsc_bf16 *>(nullptr)), DSC_LIB(out0), dsc::kernels::MoeShape{16, 2, 32, 4, 5} DSC_INDEX_FAULT);
  // CUDA-LABEL: static void kernel2(
  // CUDA-NEXT: dsc_kernels::moeDispatch(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(static_cast<const dsc_bf16 *>(nullptr)), DSC_LIB(out0), dsc::kernels::MoeShape{16, 2, 32, 4, 5} DSC_INDEX_FAULT);
  %d = dsc.moe_dispatch %x, %slots : tensor<16x32xbf16>, tensor<16x2xi64> -> tensor<4x5x32xbf16>
  // CHECK-LABEL: static void kernel3(
  // CHECK-NEXT: dsc_kernels::moeDispatch(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(in2), DSC_LIB(out0), dsc::kernels::MoeShape{16, 2, 32, 4, 3} DSC_INDEX_FAULT);
  %dw = dsc.moe_dispatch %x, %kept, %w
      : tensor<16x32xbf16>, tensor<16x2xi64>, tensor<16x2xbf16> -> tensor<4x3x32xbf16>
  // CHECK-LABEL: static void kernel4(
  // CHECK-NEXT: dsc_kernels::moeCombine(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(in2), DSC_LIB(out0), dsc::kernels::MoeShape{16, 2, 32, 4, 5} DSC_INDEX_FAULT);
  %y = dsc.moe_combine %d, %slots, %w
      : tensor<4x5x32xbf16>, tensor<16x2xi64>, tensor<16x2xbf16> -> tensor<16x32xbf16>
  // CHECK-LABEL: static void kernel5(
  // CHECK-NEXT: dsc_kernels::moeRouteDot(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(in2), DSC_LIB(out0), dsc::kernels::MoeShape{16, 2, 32, 4, 3} DSC_INDEX_FAULT);
  // CUDA-LABEL: static void kernel5(
  // CUDA-NEXT: dsc_kernels::moeRouteDot(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(in2), DSC_LIB(out0), dsc::kernels::MoeShape{16, 2, 32, 4, 3} DSC_INDEX_FAULT);
  %g = dsc.moe_route_dot %y, %dw, %kept
      : tensor<16x32xbf16>, tensor<4x3x32xbf16>, tensor<16x2xi64> -> tensor<16x2xbf16>
  return %kept, %counts, %slots, %y, %g
      : tensor<16x2xi64>, tensor<4xi64>, tensor<16x2xi64>, tensor<16x32xbf16>, tensor<16x2xbf16>
}

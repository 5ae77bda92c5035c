// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// The multi-tensor optimizer kernels: one call over a table with a row per
// tensor (dsc/kernels/Optimizer.h), the same text on both targets. On CUDA
// each call site keeps its table in device memory (dsc_table_t of
// dsc/runtime/GeneratedCode.cuh), uploaded when it changes.
// CUDA: #include "dsc/runtime/GeneratedCode.cuh"

dsc.state parameter @w : tensor<4x3xbf16>
dsc.state master @w.master : tensor<4x3xf32>
dsc.state optimizer @w.exp_avg : tensor<4x3xf32>
dsc.state optimizer @w.exp_avg_sq : tensor<4x3xf32>
dsc.state parameter @b : tensor<70000xbf16>
dsc.state master @b.master : tensor<70000xf32>
dsc.state optimizer @b.exp_avg : tensor<70000xf32>
dsc.state optimizer @b.exp_avg_sq : tensor<70000xf32>
dsc.state parameter @u : tensor<4x3xf32>
func.func @forward(%gw: tensor<4x3xbf16> {dsc.input = "gw"}, %gb: tensor<70000xbf16> {dsc.input = "gb"},
                   %lr: tensor<f32> {dsc.input = "lr"}, %t: tensor<f32> {dsc.input = "t"},
                   %skip: tensor<i1> {dsc.input = "skip"})
    -> (tensor<f32> {dsc.output = "norm"}) {
  // CHECK-LABEL: static void kernel{{[0-9]+}}(dsc_stream_t stream, const dsc_bf16 *__restrict in0, const dsc_bf16 *__restrict in1, const float *__restrict in2, float *__restrict out0) {
  // CHECK-NEXT: using Entry = dsc::kernels::GradTensor<dsc_lib_type<dsc_bf16>::type>;
  // CHECK-NEXT: Entry rows[2] = {
  // CHECK-NEXT: {DSC_LIB(in0), 12, 0},
  // CHECK-NEXT: {DSC_LIB(in1), 70000, 0},
  // CHECK-NEXT: };
  // CHECK-NEXT: const int64_t chunks = dsc::kernels::assignChunks(rows, 2);
  // CHECK-NEXT: static dsc_table_t<Entry, 2> table;
  // CHECK-NEXT: static dsc_workspace_t workspace;
  // CHECK-NEXT: void *scratch = workspace.get(dsc::kernels::sumSquaresWorkspaceBytes(2, chunks));
  // CHECK-NEXT: dsc_kernels::multiTensorSumSquares(stream, table.get(rows, stream), 2, chunks, DSC_LIB(in2), DSC_LIB(out0), nullptr, scratch);
  // CUDA: dsc_kernels::multiTensorSumSquares(stream, table.get(rows, stream), 2, chunks, DSC_LIB(in2), DSC_LIB(out0), nullptr, scratch);
  %norm = dsc.sum_squares(%gw, %gb : tensor<4x3xbf16>, tensor<70000xbf16>) scale(%lr : tensor<f32>) : tensor<f32>
  %w = dsc.load @w.master : tensor<4x3xf32>
  %mw = dsc.load @w.exp_avg : tensor<4x3xf32>
  %vw = dsc.load @w.exp_avg_sq : tensor<4x3xf32>
  %cw = dsc.load @w : tensor<4x3xbf16>
  %b = dsc.load @b.master : tensor<70000xf32>
  %mb = dsc.load @b.exp_avg : tensor<70000xf32>
  %vb = dsc.load @b.exp_avg_sq : tensor<70000xf32>
  %cb = dsc.load @b : tensor<70000xbf16>
  // Every result is written over the state it updates (a copy first where
  // the buffers differ); a row per tensor: master, gradient, moments, the
  // 16-bit parameter, its size.
  // CHECK-LABEL: static void kernel{{[0-9]+}}(
  // CHECK-SAME: const float *in0, const float *in1, const dsc_bf16 *in2, const dsc_bf16 *in3
  // CHECK-NEXT: if (static_cast<const void *>(DSC_LIB(in0)) != static_cast<const void *>(DSC_LIB(out0)))
  // CHECK-NEXT: dsc_kernels::copy(stream, DSC_LIB(in0), DSC_LIB(out0), 48);
  // CHECK: dsc_kernels::copy(stream, DSC_LIB(in9), DSC_LIB(out7), 140000);
  // CHECK-NEXT: using Entry = dsc::kernels::AdamTensor<dsc_lib_type<dsc_bf16>::type>;
  // CHECK-NEXT: Entry rows[2] = {
  // CHECK-NEXT: {DSC_LIB(out0), DSC_LIB(in2), DSC_LIB(out2), DSC_LIB(out4), DSC_LIB(out6), 12, 0},
  // CHECK-NEXT: {DSC_LIB(out1), DSC_LIB(in3), DSC_LIB(out3), DSC_LIB(out5), DSC_LIB(out7), 70000, 0},
  // CHECK: const dsc::kernels::AdamConfig config = dsc::kernels::adamConfig(9.00000000000000022e-01, 9.98999999999999999e-01, 1.00000000000000002e-08, 1.00000000000000002e-02, true, -1);
  // CHECK-NEXT: const dsc::kernels::OptimizerStep step{DSC_LIB(in10), DSC_LIB(in11), nullptr, nullptr, DSC_LIB(in12)};
  // CHECK-NEXT: dsc_kernels::adamUpdate(stream, table.get(rows, stream), 2, chunks, config, step);
  // CUDA: dsc_kernels::adamUpdate(stream, table.get(rows, stream), 2, chunks, config, step);
  %p:2, %m:2, %v:2, %c:2 = dsc.adam_update params(%w, %b : tensor<4x3xf32>, tensor<70000xf32>)
      grads(%gw, %gb : tensor<4x3xbf16>, tensor<70000xbf16>)
      exp_avgs(%mw, %mb : tensor<4x3xf32>, tensor<70000xf32>)
      exp_avg_sqs(%vw, %vb : tensor<4x3xf32>, tensor<70000xf32>)
      copies(%cw, %cb : tensor<4x3xbf16>, tensor<70000xbf16>)
      lr(%lr : tensor<f32>) step(%t : tensor<f32>) skip(%skip : tensor<i1>)
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, decoupled}
      -> (tensor<4x3xf32>, tensor<70000xf32>), (tensor<4x3xf32>, tensor<70000xf32>),
         (tensor<4x3xf32>, tensor<70000xf32>) copies(tensor<4x3xbf16>, tensor<70000xbf16>)
  dsc.store %p#0 to @w.master : tensor<4x3xf32>
  dsc.store %p#1 to @b.master : tensor<70000xf32>
  dsc.store %m#0 to @w.exp_avg : tensor<4x3xf32>
  dsc.store %m#1 to @b.exp_avg : tensor<70000xf32>
  dsc.store %v#0 to @w.exp_avg_sq : tensor<4x3xf32>
  dsc.store %v#1 to @b.exp_avg_sq : tensor<70000xf32>
  dsc.store %c#0 to @w : tensor<4x3xbf16>
  dsc.store %c#1 to @b : tensor<70000xbf16>
  // SGD without momentum: no buffer, no copy; the constants of the config.
  // CHECK-LABEL: static void kernel{{[0-9]+}}(
  // CHECK: using Entry = dsc::kernels::SgdTensor<dsc_lib_type<dsc_bf16>::type>;
  // CHECK: {DSC_LIB(out0), DSC_LIB(in1), nullptr, nullptr, 12, 0},
  // CHECK: const dsc::kernels::SgdConfig config = dsc::kernels::sgdConfig(0.00000000000000000e+00, 5.00000000000000000e-01);
  // CHECK-NEXT: const dsc::kernels::OptimizerStep step{DSC_LIB(in2), nullptr, DSC_LIB(in3), DSC_LIB(in3), nullptr};
  // CHECK-NEXT: dsc_kernels::sgdUpdate(stream, table.get(rows, stream), 1, chunks, config, step);
  %w2 = dsc.load @u : tensor<4x3xf32>
  %s = dsc.sgd_update params(%w2 : tensor<4x3xf32>) grads(%gw : tensor<4x3xbf16>)
      momentum_buffers() copies() lr(%lr : tensor<f32>) unscale(%t : tensor<f32>)
      clip_coef(%t : tensor<f32>) {momentum = 0.0, weight_decay = 0.5}
      -> (tensor<4x3xf32>)
  dsc.store %s to @u : tensor<4x3xf32>
  return %norm : tensor<f32>
}


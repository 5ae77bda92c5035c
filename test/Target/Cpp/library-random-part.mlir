// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// A dropout of a rank's part of each sample (`part %r of 2`): the site
// literal gets the part count, and the call the buffer of the rank's
// index, the copy of its element of [0, 1] that the step makes from the
// rank's index in its tensor group.

module attributes {dsc.tensor_parallel_size = 2 : i64, dsc.world_size = 2 : i64} {
  func.func @forward(%x: tensor<4x3x5xf32> {dsc.input = "x"}) -> tensor<4x3x5xf32> {
    // CHECK-LABEL: static void kernel0(dsc_stream_t stream, const float *__restrict in0, const int64_t *__restrict in1, const int64_t *__restrict in2, float *__restrict out0) {
    // CHECK-NEXT: dsc_kernels::dropout(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(out0), dsc::kernels::DropoutSite{60, 15, 2.50000000000000000e-01, 3, 2}, DSC_LIB(in2));
    // CUDA-LABEL: static void kernel0(
    // CUDA-NEXT: dsc_kernels::dropout(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(out0), dsc::kernels::DropoutSite{60, 15, 2.50000000000000000e-01, 3, 2}, DSC_LIB(in2));
    // CHECK: dsc_artifact_step
    // CHECK: ctx->groupRank(dsc::rt::CommGroup::Tensor)
    // CHECK: "kernel0 (dsc.dropout)"
    %all = dsc.constant dense<[0, 1]> : tensor<2xi64>
    %r = dsc.local_shard %all over tensor : tensor<2xi64> -> tensor<1xi64>
    %key = dsc.step_key : tensor<4xi64>
    %y = dsc.dropout %x, %key, p = 0.25, seed = 3, samples = 4 part %r of 2 : tensor<4x3x5xf32>
    return %y : tensor<4x3x5xf32>
  }
}

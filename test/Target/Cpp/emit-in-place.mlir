// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s

// A kernel that writes a state it also reads (the lowering stores the new
// value in place) takes plain pointers: its input and output alias, so
// neither may be __restrict. Each element is read before it is written.
// CHECK-LABEL: DSC_GLOBAL void kernel0_0(const float *in0, const float *in1, float *out0) {
// CHECK: static void kernel0(dsc_stream_t stream, const float *in0, const float *in1, float *out0) {
// CHECK: static void kernel0_task(const dsc_task_t &t)
// CHECK: auto *[[P:v[0-9]+]] = static_cast<float *>(ctx->state(0));
// CHECK: enqueue(dsc_task_t{kernel0_task, {dsc_ptr([[P]]), dsc_ptr(v{{[0-9]+}}), dsc_ptr([[P2:v[0-9]+]])}, 0}
// No copy follows: the step ends with the output's copy.
// CHECK-NOT: kernel1
dsc.state parameter @p : tensor<4xf32>
func.func @train(%g: tensor<4xf32> {dsc.input = "g"}) -> (tensor<4xf32> {dsc.output = "g2"}) {
  %p = dsc.load @p : tensor<4xf32>
  %n = dsc.sub %p, %g : tensor<4xf32>, tensor<4xf32>
  dsc.store %n to @p : tensor<4xf32>
  return %g : tensor<4xf32>
}

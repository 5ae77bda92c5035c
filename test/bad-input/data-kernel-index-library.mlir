// The kernel library's index checks on the CPU target (as
// data-kernel-index.mlir, whose i32 indices keep generated loops): int64
// ids and indices go to the library's embedding, gather and scatter-add
// (dsc/kernels/), which throw after their OpenMP loops; the step fails
// naming the op and the bad index, never an abort or an out-of-bounds
// access. The ids pass through an add of zero, so the artifact records no
// vocabulary for its input and dsc-run's own check of the data does not
// stop them first.
// RUN: rm -rf %t && mkdir -p %t
// RUN: dsc-compile %s --eval -o %t/eval.so > /dev/null
// RUN: %torch_python -c "import numpy as np; from dsc import safetensors; safetensors.save({'wte.weight': np.ones((16, 8), np.float32), 'acc': np.zeros((1, 16), np.float32)}, '%t/w.safetensors'); np.array([1, 2, 3, 999, 4], np.uint16).tofile('%t/bad.bin'); np.array([1, 2, 3, 4, 5], np.uint16).tofile('%t/ok.bin')"
// RUN: dsc-run %t/eval.so --weights %t/w.safetensors --data %t/ok.bin --batch 1 --seq 4 --steps 1 | FileCheck %s --check-prefix=OK
// OK: step=1 loss=
// RUN: %expect_exit 1 dsc-run %t/eval.so --weights %t/w.safetensors --data %t/bad.bin --batch 1 --seq 4 --steps 1 2>&1 | FileCheck %s
// CHECK: dsc-run: rank 0: error: {{.*}}dsc.embedding: index 999 is outside [0, 16)
// CHECK-NOT: terminate
// CHECK-NOT: step=1
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library | FileCheck %s --check-prefix=LIB
// LIB: dscrt.kernel "embedding"
// LIB: dscrt.kernel "gather"
// LIB: dscrt.kernel "scatter_add"

dsc.state parameter @"wte.weight" : tensor<16x8xf32>
dsc.state parameter @"acc" : tensor<1x16xf32>

func.func @forward(%tokens: tensor<1x4xi64> {dsc.input = "tokens"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %zero = dsc.constant dense<0> : tensor<1x4xi64>
  %ids = dsc.add %tokens, %zero : tensor<1x4xi64>, tensor<1x4xi64>
  %wte = dsc.load @"wte.weight" : tensor<16x8xf32>
  %h = dsc.embedding %wte, %ids : tensor<16x8xf32>, tensor<1x4xi64>
  %s = dsc.reduce_sum %h, dims = [0, 1, 2] : tensor<1x4x8xf32>
  %acc = dsc.load @"acc" : tensor<1x16xf32>
  %g = dsc.gather %acc, %ids, dim = 1 : tensor<1x16xf32>, tensor<1x4xi64>
  %r = dsc.scatter_add %acc, %ids, %g, dim = 1 : tensor<1x16xf32>, tensor<1x4xi64>, tensor<1x4xf32>
  %t = dsc.reduce_sum %r, dims = [0, 1] : tensor<1x16xf32>
  %u = dsc.add %s, %t : tensor<f32>, tensor<f32>
  %loss = dsc.mul %u, %u : tensor<f32>, tensor<f32>
  return %loss : tensor<f32>
}

// The kernels' own index checks on the CPU target (as
// data-kernel-index.mlir): a scatter-add index outside its range fails the step naming the
// op, never an abort or an out-of-bounds access.
// RUN: rm -rf %t && mkdir -p %t
// RUN: dsc-compile %s --eval -o %t/eval.so > /dev/null
// RUN: %torch_python -c "import numpy as np; from dsc import safetensors; safetensors.save({'acc': np.zeros((1, 16), np.float32), 'src': np.ones((1, 4), np.float32)}, '%t/w.safetensors'); np.array([1, 2, 3, 300, 4], np.uint16).tofile('%t/bad.bin'); np.array([1, 2, 3, 4, 5], np.uint16).tofile('%t/ok.bin')"
// RUN: dsc-run %t/eval.so --weights %t/w.safetensors --data %t/ok.bin --batch 1 --seq 4 --steps 1 | FileCheck %s --check-prefix=OK
// OK: step=1 loss=
// RUN: %expect_exit 1 dsc-run %t/eval.so --weights %t/w.safetensors --data %t/bad.bin --batch 1 --seq 4 --steps 1 2>&1 | FileCheck %s
// CHECK: dsc-run: rank 0: error: {{.*}}dsc.scatter_add: index 300 is outside [0, 16)
// CHECK-NOT: step=1

dsc.state parameter @"acc" : tensor<1x16xf32>
dsc.state parameter @"src" : tensor<1x4xf32>

func.func @forward(%tokens: tensor<1x4xi64> {dsc.input = "tokens"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %ids = dsc.convert %tokens : tensor<1x4xi64> to tensor<1x4xi32>
  %acc = dsc.load @"acc" : tensor<1x16xf32>
  %src = dsc.load @"src" : tensor<1x4xf32>
  %r = dsc.scatter_add %acc, %ids, %src, dim = 1 : tensor<1x16xf32>, tensor<1x4xi32>, tensor<1x4xf32>
  %loss = dsc.reduce_sum %r, dims = [0, 1] : tensor<1x16xf32>
  return %loss : tensor<f32>
}

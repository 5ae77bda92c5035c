// The classifier of the kernel library on the CPU target (as
// data-kernel-index-cross-entropy.mlir, whose i32 targets keep generated
// loops): an i64 target outside the classes fails the step naming the op,
// never an abort or an out-of-bounds read. The targets pass through a
// conversion so that dsc-run does not refuse the token first.
// RUN: rm -rf %t && mkdir -p %t
// RUN: dsc-compile %s --eval -o %t/eval.so > /dev/null
// RUN: %torch_python -c "import numpy as np; from dsc import safetensors; safetensors.save({'logits': np.zeros((1, 4, 16), np.float32)}, '%t/w.safetensors'); np.array([1, 2, 3, 40000, 4], np.uint16).tofile('%t/bad.bin'); np.array([1, 2, 3, 4, 5], np.uint16).tofile('%t/ok.bin')"
// RUN: dsc-run %t/eval.so --weights %t/w.safetensors --data %t/ok.bin --batch 1 --seq 4 --steps 1 | FileCheck %s --check-prefix=OK
// OK: step=1 loss=2.77258
// RUN: %expect_exit 1 dsc-run %t/eval.so --weights %t/w.safetensors --data %t/bad.bin --batch 1 --seq 4 --steps 1 2>&1 | FileCheck %s
// CHECK: dsc-run: rank 0: error: {{.*}}dsc.cross_entropy: index 40000 is outside [0, 16)
// CHECK-NOT: step=1

dsc.state parameter @"logits" : tensor<1x4x16xf32>

func.func @forward(%tokens: tensor<1x4xi64> {dsc.input = "tokens"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %narrow = dsc.convert %tokens : tensor<1x4xi64> to tensor<1x4xi32>
  %ids = dsc.convert %narrow : tensor<1x4xi32> to tensor<1x4xi64>
  %logits = dsc.load @"logits" : tensor<1x4x16xf32>
  %loss = dsc.cross_entropy %logits, %ids : tensor<1x4x16xf32>, tensor<1x4xi64>
  return %loss : tensor<f32>
}

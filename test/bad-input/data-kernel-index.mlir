// The kernels' own index checks, on the CPU target: an index outside its
// table is one error of the step, naming the op, never an exception leaving
// an OpenMP loop (SIGABRT). The token ids pass through a conversion to i32
// before the embedding here (the lowering converts them back to the
// library's int64), so the artifact records no vocabulary for its input
// and dsc-run's own check of the data (data-token-vocabulary.test) does not
// stop them first.
// RUN: rm -rf %t && mkdir -p %t
// RUN: dsc-compile %s --eval -o %t/eval.so > /dev/null
// RUN: %torch_python -c "import numpy as np; from dsc import safetensors; safetensors.save({'wte.weight': np.ones((16, 8), np.float32)}, '%t/w.safetensors'); np.array([1, 2, 3, 999, 4], np.uint16).tofile('%t/bad.bin'); np.array([1, 2, 3, 4, 5], np.uint16).tofile('%t/ok.bin')"
// RUN: dsc-run %t/eval.so --weights %t/w.safetensors --data %t/ok.bin --batch 1 --seq 4 --steps 1 | FileCheck %s --check-prefix=OK
// OK: step=1 loss=1024 
// RUN: %expect_exit 1 dsc-run %t/eval.so --weights %t/w.safetensors --data %t/bad.bin --batch 1 --seq 4 --steps 1 2>&1 | FileCheck %s
// CHECK: dsc-run: rank 0: error: {{.*}}dsc.embedding: index 999 is outside [0, 16)
// CHECK-NOT: terminate
// CHECK-NOT: step=1

dsc.state parameter @"wte.weight" : tensor<16x8xf32>

func.func @forward(%tokens: tensor<1x4xi64> {dsc.input = "tokens"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %wte = dsc.load @"wte.weight" : tensor<16x8xf32>
  %ids = dsc.convert %tokens : tensor<1x4xi64> to tensor<1x4xi32>
  %h = dsc.embedding %wte, %ids : tensor<16x8xf32>, tensor<1x4xi32>
  %s = dsc.reduce_sum %h, dims = [0, 1, 2] : tensor<1x4x8xf32>
  %loss = dsc.mul %s, %s : tensor<f32>, tensor<f32>
  return %loss : tensor<f32>
}

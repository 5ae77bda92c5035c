// RUN: not dsc-opt %s --world-size=2 --optimizer=adamw --offload-optimizer=cpu 2>&1 | FileCheck %s --check-prefix=STAGE0
// RUN: not dsc-opt %s --world-size=2 --optimizer=adamw --zero-stage=2 --offload-optimizer=nvme 2>&1 | FileCheck %s --check-prefix=NVME
// RUN: not dsc-opt %s --world-size=2 --optimizer=adamw --zero-stage=2 --offload-optimizer=gpu 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not dsc-opt %s --world-size=2 --optimizer=adamw --zero-stage=2 --offload-optimizer=cpu --zero-sub-group-size=0 2>&1 | FileCheck %s --check-prefix=SUB0
// RUN: not dsc-opt %s --world-size=2 --optimizer=adamw --zero-stage=3 --offload-optimizer=nvme --offload-buffer-count=0 2>&1 | FileCheck %s --check-prefix=BUF0
// RUN: not dsc-opt %s --world-size=2 --optimizer=adamw --zero-stage=2 --offload-optimizer=cpu --offload-param=cpu 2>&1 | FileCheck %s --check-prefix=PARAM-S2
// RUN: not dsc-opt %s --world-size=2 --optimizer=adamw --zero-stage=3 --zero-persistence-threshold=0 --offload-param=nvme --offload-param-buffer-size=5 2>&1 | FileCheck %s --check-prefix=PARAM-BUFSIZE

// Offload the pass refuses, located at the optimizer's update (here the
// graph's location).
// STAGE0: offload-invalid.mlir:[[@LINE+10]]:1: error: ZeRO-Offload needs ZeRO stage 1, 2 or 3 (as in DeepSpeed), the step is at stage 0
// NVME: offload-invalid.mlir:[[@LINE+9]]:1: error: NVMe optimizer offload (ZeRO-Infinity) needs ZeRO stage 3 (as in DeepSpeed), the step is at stage 2
// BAD: dsc-opt: error: --offload-optimizer: 'gpu' is not one of none, cpu, nvme
// SUB0: error: --zero-sub-group-size: must be
// BUF0: error: --offload-buffer-count: must be
// PARAM-S2: error: parameter offload needs ZeRO stage 3 (as in DeepSpeed), the step is at stage 2
// A partition of 6 elements does not fit a swap buffer of 5 (DeepSpeed
// refuses such a parameter too).
// PARAM-BUFSIZE: offload-invalid.mlir:[[@LINE+1]]:1: error: @w has 6 elements, more than a parameter swap buffer holds (offload_param.buffer_size, --offload-param-buffer-size = 5)
dsc.state parameter @w : tensor<4x3xf32>
func.func @f(%x: tensor<2x3xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<4x3xf32>
  %y = dsc.linear %x, %w : tensor<2x3xf32>, tensor<4x3xf32>
  %s = dsc.reduce_sum %y, dims = [0, 1] : tensor<2x4xf32>
  return %s : tensor<f32>
}

// RUN: dsc-opt %s --world-size=2 --precision=bf16 --optimizer=adamw --grad-clip=1.0 --zero-stage=2 --offload-optimizer=cpu | FileCheck %s
// RUN: dsc-opt %s --world-size=2 --precision=bf16 --optimizer=adamw --grad-clip=1.0 --zero-stage=2 --offload-optimizer=cpu --zero-sub-group-size=12 | FileCheck %s --check-prefix=SUB
// RUN: dsc-opt %s --world-size=2 --optimizer=sgd --momentum=0.9 --zero-stage=3 --zero-persistence-threshold=0 --offload-optimizer=cpu | FileCheck %s --check-prefix=FP32
// RUN: dsc-opt %s --world-size=2 --precision=bf16 --optimizer=adamw --zero-stage=2 --offload-optimizer=none | FileCheck %s --check-prefix=NONE
// RUN: dsc-opt %s --world-size=2 --precision=bf16 --optimizer=adamw --zero-stage=3 --zero-persistence-threshold=0 --offload-optimizer=cpu --offload-param=cpu | FileCheck %s --check-prefix=PARAM
// RUN: dsc-opt %s --world-size=2 --precision=bf16 --optimizer=adamw --zero-stage=3 --zero-persistence-threshold=0 --offload-param=nvme --offload-param-buffer-count=2 | FileCheck %s --check-prefix=PARAM-NVME
// RUN: dsc-opt %s --world-size=2 --precision=bf16 --optimizer=adamw --zero-stage=3 --zero-persistence-threshold=0 --offload-optimizer=nvme --offload-buffer-count=3 --nvme-path=/scratch/nvme --zero-sub-group-size=12 | FileCheck %s --check-prefix=NVME

// ZeRO-Offload of a bf16 AdamW step at stage 2 on 2 ranks: the masters and
// moments live on the host; the bucketed reduce-scatter's result is copied
// there once, right after the reduction, and cut into the gradient
// partitions on the host (the device keeps its own slices for the clipping
// norm); the scalars the update shares are copied too; the update's 16-bit
// results come back in one copy, packed on the host and cut on the device,
// to be gathered.
// CHECK: dsc.state master @emb.master on host {partition_of = array<i64: 7, 3>} : tensor<11xf32>
// CHECK-NEXT: dsc.state optimizer @emb.exp_avg on host
// CHECK-NEXT: dsc.state optimizer @emb.exp_avg_sq on host
// CHECK: dsc.state optimizer @optimizer.step : tensor<f32>
// CHECK: %[[RS:.*]] = dsc.reduce_scatter %{{.*}} : tensor<30xbf16> -> tensor<15xbf16>
// CHECK-NEXT: %[[RSH:.*]] = dsc.transfer %[[RS]] to host : tensor<15xbf16>
// CHECK-NEXT: dsc.slice %[[RS]], dim = 0, start = 0, end = 4
// CHECK-NEXT: %[[GBH:.*]] = dsc.slice %[[RSH]], dim = 0, start = 0, end = 4
// CHECK-NEXT: dsc.slice %[[RS]], dim = 0, start = 4, end = 15
// CHECK-NEXT: %[[GEH:.*]] = dsc.slice %[[RSH]], dim = 0, start = 4, end = 15
// CHECK-NOT: dsc.transfer {{.*}} to host : tensor<{{4|11}}xbf16>
// CHECK: %[[CLIP:.*]] = dsc.minimum
// CHECK-NEXT: dsc.transfer %[[CLIP]] to host : tensor<f32>
// CHECK: %[[M:.*]] = dsc.load @emb.master : tensor<11xf32>
// CHECK: %{{.*}}:2, %{{.*}}:2, %{{.*}}:2, %[[NEW16:.*]]:2 = dsc.adam_update params(%[[M]], %{{.*}} : tensor<11xf32>, tensor<4xf32>) grads(%[[GEH]], %[[GBH]] : tensor<11xbf16>, tensor<4xbf16>)
// CHECK-NEXT: %[[PACKED:.*]] = dsc.concat(%[[NEW16]]#0, %[[NEW16]]#1), dim = 0 : tensor<11xbf16>, tensor<4xbf16>
// CHECK-NEXT: %[[ALL:.*]] = dsc.transfer %[[PACKED]] to device : tensor<15xbf16>
// CHECK-NEXT: %[[BACK:.*]] = dsc.slice %[[ALL]], dim = 0, start = 0, end = 11
// CHECK-NEXT: dsc.slice %[[ALL]], dim = 0, start = 11, end = 15
// CHECK: dsc.all_gather %[[BACK]] : tensor<11xbf16> -> tensor<22xbf16>

// Sub-groups of at most 12 elements: one update per parameter (11 and 4
// elements), each followed by the copy of its result, so the second
// update runs while the first one's result is copied back.
// SUB: dsc.adam_update params(%{{.*}} : tensor<11xf32>)
// SUB-NEXT: dsc.transfer %{{.*}} to device : tensor<11xbf16>
// SUB-NEXT: dsc.adam_update params(%{{.*}} : tensor<4xf32>)
// SUB-NEXT: dsc.transfer %{{.*}} to device : tensor<4xbf16>

// fp32 SGD at stage 3: the momentum buffers move to the host; the
// parameter shard is device state read by the gathers too, so it is
// copied to the host for the update and its new value back.
// FP32: dsc.state parameter @emb {partition_of = array<i64: 7, 3>} : tensor<11xf32>
// FP32: dsc.state optimizer @emb.momentum_buffer on host
// FP32: dsc.reduce_scatter {{.*}} -> tensor<15xf32>
// FP32-NEXT: dsc.transfer %{{.*}} to host : tensor<15xf32>
// FP32: dsc.load @emb : tensor<11xf32>
// FP32-NEXT: %[[PH:.*]] = dsc.transfer %{{.*}} to host : tensor<11xf32>
// FP32-NEXT: dsc.load @emb.momentum_buffer
// FP32: %[[NEW:.*]]:2, %{{.*}}:2 = dsc.sgd_update params(%[[PH]], %{{.*}} : tensor<11xf32>, tensor<4xf32>)
// FP32-NEXT: %[[PACKED:.*]] = dsc.concat(%[[NEW]]#0, %[[NEW]]#1)
// FP32-NEXT: %[[ALL:.*]] = dsc.transfer %[[PACKED]] to device : tensor<15xf32>
// FP32-NEXT: %[[NEWD:.*]] = dsc.slice %[[ALL]], dim = 0, start = 0, end = 11
// FP32: dsc.store %[[NEWD]] to @emb : tensor<11xf32>

// ZeRO-Infinity (stage 3): the same graph, but the masters and moments
// live on NVMe; the read-ahead depth and the directory are the module's.
// NVME: module attributes {{{.*}}dsc.nvme_buffer_count = 3 : i64, dsc.nvme_path = "/scratch/nvme"
// NVME: dsc.state master @emb.master on nvme {partition_of = array<i64: 7, 3>} : tensor<11xf32>
// NVME-NEXT: dsc.state optimizer @emb.exp_avg on nvme
// NVME-NEXT: dsc.state optimizer @emb.exp_avg_sq on nvme
// NVME: dsc.state optimizer @optimizer.step : tensor<f32>
// NVME: %[[M:.*]] = dsc.load @emb.master : tensor<11xf32>
// NVME: dsc.adam_update params(%[[M]] : tensor<11xf32>)
// NVME-NEXT: dsc.transfer %{{.*}} to device : tensor<11xbf16>
// NVME: dsc.store %{{.*}} to @emb.master : tensor<11xf32>

// Parameter offload (stage 3): the 16-bit partitions live on the host too;
// each load of one is copied to the device right after it, ahead of its
// gather; the update's new partitions are stored there from the host, with
// no copy back.
// PARAM: dsc.state parameter @emb on host {partition_of = array<i64: 7, 3>} : tensor<11xbf16>
// PARAM: %[[W:.*]] = dsc.load @emb : tensor<11xbf16>
// PARAM-NEXT: %[[WD:.*]] = dsc.transfer %[[W]] to device : tensor<11xbf16>
// PARAM: dsc.concat(%[[WD]], {{.*}}
// PARAM-NEXT: dsc.all_gather {{.*}} -> tensor<52xbf16>
// PARAM: %{{.*}}, %{{.*}}, %{{.*}}, %[[NEW16:.*]]:2 = dsc.adam_update
// PARAM-NOT: dsc.transfer {{.*}} to device
// PARAM: dsc.store %[[NEW16]]#0 to @emb : tensor<11xbf16>

// NONE-NOT: on host
// NONE-NOT: dsc.transfer
// Parameters on NVMe without optimizer offload (DeepSpeed allows
// offload_param alone): the partitions live in the file (the read-ahead
// depth is the module's), each load is copied to the device, the update
// runs on the device, and each new partition is copied to the host right
// before its store.
// PARAM-NVME: module attributes {dsc.nvme_param_buffer_count = 2 : i64
// PARAM-NVME: dsc.state parameter @emb on nvme {partition_of = array<i64: 7, 3>} : tensor<11xbf16>
// PARAM-NVME: dsc.state master @emb.master {partition_of
// PARAM-NVME: %[[W:.*]] = dsc.load @emb : tensor<11xbf16>
// PARAM-NVME-NEXT: dsc.transfer %[[W]] to device : tensor<11xbf16>
// PARAM-NVME: %{{.*}}:2, %{{.*}}:2, %{{.*}}:2, %[[NEW:.*]]:2 = dsc.adam_update
// PARAM-NVME: %[[H:.*]] = dsc.transfer %[[NEW]]#0 to host : tensor<11xbf16>
// PARAM-NVME-NEXT: dsc.store %[[H]] to @emb : tensor<11xbf16>

dsc.state parameter @emb : tensor<7x3xf32>
dsc.state parameter @b : tensor<7xf32>
func.func @tied(%ids: tensor<3xi64> {dsc.input = "ids"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %e = dsc.load @emb : tensor<7x3xf32>
  %h = dsc.embedding %e, %ids : tensor<7x3xf32>, tensor<3xi64>
  %e2 = dsc.load @emb : tensor<7x3xf32>
  %b = dsc.load @b : tensor<7xf32>
  %logits = dsc.linear %h, %e2, %b : tensor<3x3xf32>, tensor<7x3xf32>, tensor<7xf32>
  %loss = dsc.cross_entropy %logits, %ids : tensor<3x7xf32>, tensor<3xi64>
  return %loss : tensor<f32>
}

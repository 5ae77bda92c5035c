// RUN: dsc-opt %s --dsc-data-parallel=world-size=2 --dsc-mixed-precision=precision=bf16 --dsc-autodiff --dsc-optimizer="optimizer=adamw lr=0.1" | FileCheck %s --check-prefix=S0
// RUN: dsc-opt %s --dsc-data-parallel=world-size=2 --dsc-mixed-precision=precision=bf16 --dsc-autodiff --dsc-optimizer="optimizer=adamw lr=0.1" --dsc-zero=stage=1 | FileCheck %s --check-prefix=S1
// RUN: dsc-opt %s --dsc-data-parallel=world-size=2 --dsc-mixed-precision=precision=bf16 --dsc-autodiff --dsc-optimizer="optimizer=adamw lr=0.1" --dsc-zero=stage=2 | FileCheck %s --check-prefix=S2
// RUN: dsc-opt %s --dsc-data-parallel=world-size=2 --dsc-mixed-precision=precision=fp16 --dsc-autodiff --dsc-optimizer="optimizer=adamw lr=0.1" --dsc-zero=stage=3 | FileCheck %s --check-prefix=S3
// RUN: dsc-opt %s --dsc-data-parallel="world-size=2 grad-accum=2" --dsc-mixed-precision=precision=fp16 --dsc-autodiff="seed=16.0 seed-state=optimizer.loss_scale" --dsc-optimizer="optimizer=sgd lr=0.1 loss-scaling=1 initial-scale-power=4 grad-accum=2" --dsc-zero=stage=1 | FileCheck %s --check-prefix=SKIP

// Mixed precision with DeepSpeed's model states through the optimizer and
// ZeRO: the update reads the bf16 gradients (the library widens each
// element), updates the fp32 master weights and writes their rounding into
// the bf16 parameters (its copies).
// S0: dsc.state parameter @emb : tensor<7x3xbf16>
// S0-NEXT: dsc.state master @emb.master : tensor<7x3xf32>
// S0: dsc.state optimizer @optimizer.step : tensor<f32>
// S0: %[[G:.*]] = dsc.all_reduce %{{.*}} : tensor<7x3xbf16>
// S0: %[[M:.*]] = dsc.load @emb.master : tensor<7x3xf32>
// S0: %[[NEW:.*]]:2, %{{.*}}:2, %{{.*}}:2, %[[NEW16:.*]]:2 = dsc.adam_update params(%[[M]], %{{.*}} : tensor<7x3xf32>, tensor<7xf32>) grads(%[[G]], %{{.*}} : tensor<7x3xbf16>, tensor<7xbf16>) {{.*}} copies() {{.*}} decoupled
// S0: dsc.store %[[NEW]]#0 to @emb.master : tensor<7x3xf32>
// S0: dsc.store %{{.*}} to @emb.exp_avg : tensor<7x3xf32>
// S0: dsc.store %{{.*}} to @emb.exp_avg_sq : tensor<7x3xf32>
// S0: dsc.store %[[NEW16]]#0 to @emb : tensor<7x3xbf16>

// Stage 1: the master is partitioned like the moments; the bf16 gradient
// is sliced, the update writes the rounded master shard, and the bf16
// parameter is gathered in bf16.
// S1: dsc.state parameter @emb : tensor<7x3xbf16>
// S1-NEXT: dsc.state master @emb.master {partition_of = array<i64: 7, 3>} : tensor<11xf32>
// S1: %[[G:.*]] = dsc.local_shard %{{.*}} : tensor<22xbf16> -> tensor<11xbf16>
// S1: %[[M:.*]] = dsc.load @emb.master : tensor<11xf32>
// S1: %[[NEW:.*]]:2, %{{.*}}:2, %{{.*}}:2, %[[NEW16:.*]]:2 = dsc.adam_update params(%[[M]], %{{.*}} : tensor<11xf32>, tensor<4xf32>) grads(%[[G]], %{{.*}} : tensor<11xbf16>, tensor<4xbf16>)
// S1: dsc.store %[[NEW]]#0 to @emb.master : tensor<11xf32>
// S1: %[[ALL:.*]] = dsc.all_gather %[[NEW16]]#0 : tensor<11xbf16> -> tensor<22xbf16>
// S1: dsc.store %{{.*}} to @emb : tensor<7x3xbf16>
// S1-NOT: dsc.all_gather %{{.*}} : tensor<{{.*}}xf32>

// Stage 2: the bf16 gradient is reduce-scattered in bf16.
// S2: dsc.reduce_scatter %{{.*}} : tensor<22xbf16> -> tensor<11xbf16>
// S2: dsc.store %{{.*}} to @emb.master : tensor<11xf32>
// S2: dsc.all_gather %{{.*}} : tensor<11xbf16> -> tensor<22xbf16>
// S2: dsc.store %{{.*}} to @emb : tensor<7x3xbf16>
// S2-NOT: dsc.all_gather %{{.*}} : tensor<{{.*}}xf32>

// Stage 3: the fp16 parameter is sharded too, gathered in fp16 before its
// uses in the forward and the backward pass; the update writes its shard.
// S3: dsc.state parameter @emb {partition_of = array<i64: 7, 3>} : tensor<11xf16>
// S3-NEXT: dsc.state master @emb.master {partition_of = array<i64: 7, 3>} : tensor<11xf32>
// S3: dsc.load @emb : tensor<11xf16>
// S3-NEXT: dsc.all_gather %{{.*}} : tensor<11xf16> -> tensor<22xf16>
// S3: dsc.load @emb : tensor<11xf16>
// S3-NEXT: dsc.all_gather %{{.*}} : tensor<11xf16> -> tensor<22xf16>
// S3: %[[G:.*]] = dsc.reduce_scatter %{{.*}} : tensor<22xf16> -> tensor<11xf16>
// S3: %[[NEW:.*]]:2, %{{.*}}:2, %{{.*}}:2, %[[NEW16:.*]]:2 = dsc.adam_update {{.*}} grads(%[[G]], %{{.*}} : tensor<11xf16>, tensor<4xf16>)
// S3: dsc.store %[[NEW]]#0 to @emb.master : tensor<11xf32>
// S3: dsc.store %[[NEW16]]#0 to @emb : tensor<11xf16>
// S3-NOT: dsc.all_gather %{{.*}} : tensor<{{.*}}xf32>

// fp16 loss scaling with gradient accumulation: the accumulator is fp32
// (the widened gradient); its sum is rounded to fp16 for the one reduction
// per optimizer step (the bytes of one micro-batch), and the update,
// behind the boundary, writes fp32 only; a step that overflows skips, and
// the fp16 parameter is stored back bit for bit.
// SKIP: dsc.state gradient @emb.grad_acc : tensor<7x3xf32>
// SKIP: %[[SUM:.*]]:4 = dsc.optimizer_boundary
// SKIP: %[[NARROW:.*]] = dsc.convert %[[SUM]]#0 : tensor<7x3xf32> to tensor<7x3xf16>
// SKIP: dsc.all_reduce %[[NARROW]] : tensor<7x3xf16>
// SKIP: %[[APPLY:.*]] = dsc.compare eq
// SKIP: %[[SKIPS:.*]] = dsc.select %[[APPLY]], %{{.*}}, %{{.*}} : tensor<i1>, tensor<i1>, tensor<i1>
// SKIP: %[[OLD:.*]] = dsc.load @emb.master : tensor<11xf32>
// SKIP: %[[NEW:.*]]:2 = dsc.sgd_update params(%[[OLD]], %{{.*}} : tensor<11xf32>, tensor<4xf32>) grads(%{{.*}}, %{{.*}} : tensor<11xf32>, tensor<4xf32>) {{.*}} skip(%[[SKIPS]] : tensor<i1>)
// SKIP-NEXT: %[[NEW16:.*]] = dsc.convert %[[NEW]]#0 : tensor<11xf32> to tensor<11xf16>
// SKIP: %[[OLD16:.*]] = dsc.local_shard %{{.*}} : tensor<22xf16> -> tensor<11xf16>
// SKIP-NEXT: %[[KEEP16:.*]] = dsc.select %[[APPLY]], %[[NEW16]], %[[OLD16]] : tensor<i1>, tensor<11xf16>, tensor<11xf16>
// SKIP: dsc.store %[[NEW]]#0 to @emb.master : tensor<11xf32>
// SKIP: %[[ALL:.*]] = dsc.all_gather %[[KEEP16]] : tensor<11xf16> -> tensor<22xf16>
// SKIP: dsc.store %{{.*}} to @emb : tensor<7x3xf16>
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

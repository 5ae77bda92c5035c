// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1" --dsc-zero=stage=3 | FileCheck %s

// Stage 3 on 2 ranks: @w (15 elements, shards of 8) is read by the forward
// pass (the loss) and by the backward pass (the gradient of @b, written
// here by hand after the loss, as --dsc-autodiff places it).
module attributes {dsc.world_size = 2 : i64} {
  dsc.state parameter @w : tensor<3x5xf32>
  dsc.state parameter @b : tensor<3x5xf32>
  func.func @step(%x: tensor<3x5xf32> {dsc.input = "x"})
      -> (tensor<f32> {dsc.output = "loss"},
          tensor<3x5xf32> {dsc.output = "grad.w", dsc.gradient_of = @w},
          tensor<3x5xf32> {dsc.output = "grad.b", dsc.gradient_of = @b}) {
    %w = dsc.load @w : tensor<3x5xf32>
    %b = dsc.load @b : tensor<3x5xf32>
    %p = dsc.mul %w, %b : tensor<3x5xf32>, tensor<3x5xf32>
    %l = dsc.reduce_sum %p, dims = [0, 1] : tensor<3x5xf32>
    %dw = dsc.mul %b, %x : tensor<3x5xf32>, tensor<3x5xf32>
    %db = dsc.mul %w, %x : tensor<3x5xf32>, tensor<3x5xf32>
    %gw = dsc.all_reduce %dw : tensor<3x5xf32>
    %gb = dsc.all_reduce %db : tensor<3x5xf32>
    return %l, %gw, %gb : tensor<f32>, tensor<3x5xf32>, tensor<3x5xf32>
  }
}
// Parameters are shards too.
// CHECK: dsc.state parameter @w {partition_of = array<i64: 3, 5>} : tensor<8xf32>
// CHECK: dsc.state parameter @b {partition_of = array<i64: 3, 5>} : tensor<8xf32>
// CHECK-LABEL: func.func @step
// Forward: each parameter gathered just before its first use.
// CHECK: %[[WS:.*]] = dsc.load @w : tensor<8xf32>
// CHECK-NEXT: %[[WA:.*]] = dsc.all_gather %[[WS]] : tensor<8xf32> -> tensor<16xf32>
// CHECK-NEXT: %[[WC:.*]] = dsc.slice %[[WA]], dim = 0, start = 0, end = 15, step = 1 : tensor<16xf32>
// CHECK-NEXT: %[[W:.*]] = dsc.reshape %[[WC]] : tensor<15xf32> -> tensor<3x5xf32>
// CHECK-NEXT: %[[BS:.*]] = dsc.load @b : tensor<8xf32>
// CHECK-NEXT: dsc.all_gather %[[BS]]
// CHECK: %[[B:.*]] = dsc.reshape
// CHECK-NEXT: %[[P:.*]] = dsc.mul %[[W]], %[[B]]
// CHECK-NEXT: dsc.reduce_sum %[[P]]
// Backward: gathered again, just before the first backward use.
// CHECK-NEXT: %[[BS2:.*]] = dsc.load @b : tensor<8xf32>
// CHECK-NEXT: dsc.all_gather %[[BS2]] : tensor<8xf32> -> tensor<16xf32>
// CHECK: %[[B2:.*]] = dsc.reshape
// CHECK-NEXT: %[[DW:.*]] = dsc.mul %[[B2]], %{{.*}}
// CHECK: %[[WS2:.*]] = dsc.load @w : tensor<8xf32>
// CHECK-NEXT: dsc.all_gather %[[WS2]]
// CHECK: %[[W2:.*]] = dsc.reshape
// CHECK-NEXT: %[[DB:.*]] = dsc.mul %[[W2]], %{{.*}}
// Gradients reduce-scattered; each shard updated and stored as a shard,
// with no all-gather after the update.
// CHECK: %[[GW:.*]] = dsc.reduce_scatter %{{.*}} : tensor<16xf32> -> tensor<8xf32>
// CHECK: %[[GB:.*]] = dsc.reduce_scatter %{{.*}} : tensor<16xf32> -> tensor<8xf32>
// CHECK: %[[WOLD:.*]] = dsc.load @w : tensor<8xf32>
// CHECK: %[[BOLD:.*]] = dsc.load @b : tensor<8xf32>
// CHECK: %[[NEW:.*]]:2 = dsc.sgd_update params(%[[WOLD]], %[[BOLD]] : tensor<8xf32>, tensor<8xf32>) grads(%[[GW]], %[[GB]] : tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: dsc.store %[[NEW]]#0 to @w : tensor<8xf32>
// CHECK-NEXT: dsc.store %[[NEW]]#1 to @b : tensor<8xf32>
// CHECK-NOT: dsc.all_gather
// CHECK: return

// stage3_param_persistence_threshold: with persistence-threshold=15 @w and
// @b (15 elements each) stay whole: no gather, the update gathers them
// back as at stage 2; their optimizer state (none for plain SGD) and
// gradients are still partitioned.
// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1" --dsc-zero="stage=3 persistence-threshold=15" | FileCheck %s --check-prefix=PERSIST
// PERSIST: dsc.state parameter @w : tensor<3x5xf32>
// PERSIST: dsc.state parameter @b : tensor<3x5xf32>
// PERSIST-LABEL: func.func @step
// PERSIST: dsc.load @w : tensor<3x5xf32>
// PERSIST: dsc.reduce_scatter
// PERSIST: dsc.all_gather
// PERSIST: dsc.store %{{.*}} to @w : tensor<3x5xf32>
// RUN: not dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1" --dsc-zero="stage=3 persistence-threshold=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: error: ZeRO persistence threshold -1 is negative; it counts elements

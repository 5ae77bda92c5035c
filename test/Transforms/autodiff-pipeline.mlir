// Autodiff of pipeline stages: the transfers' own gradient rules move the
// activations' gradients between stages, and a weight two stages hold sums
// its gradient over the pipeline group.
// RUN: dsc-opt %s --split-input-file --dsc-autodiff | FileCheck %s

// A first stage: its loss is the zero its send returns. The gradient of
// what it sent comes back from the next stage.
// CHECK-LABEL: func.func @first_stage
// CHECK: %[[W:.*]] = dsc.load @w
// CHECK: %[[H:.*]] = dsc.linear %[[X:.*]], %[[W]]
// CHECK: %[[Z:.*]] = dsc.pipeline_send %[[H]] to next micro_batch 0 : tensor<2x4xf32>
// CHECK: %[[LOSS:.*]] = dsc.all_reduce %[[Z]] over pipeline : tensor<f32>
// CHECK: %[[DH:.*]] = dsc.pipeline_recv from next micro_batch 0 : tensor<2x4xf32>
// CHECK: %[[DW:.*]] = dsc.matmul %[[DH]], %[[X]] transpose_lhs
// CHECK: return %[[LOSS]], %[[DW]]
module attributes {dsc.world_size = 2 : i64, dsc.pipeline_parallel_size = 2 : i64} {
  dsc.state parameter @w : tensor<4x4xf32>
  func.func @first_stage(%x: tensor<2x4xf32> {dsc.input = "x"})
      -> (tensor<f32> {dsc.output = "loss"}) {
    %w = dsc.load @w : tensor<4x4xf32>
    %h = dsc.linear %x, %w : tensor<2x4xf32>, tensor<4x4xf32>
    %z = dsc.pipeline_send %h to next micro_batch 0 : tensor<2x4xf32>
    %loss = dsc.all_reduce %z over pipeline : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A last stage: the received activation is active, and its cotangent goes
// back to the previous stage. Its weight is tied (held by both stages):
// its gradient is summed over the pipeline group.
// CHECK-LABEL: func.func @last_stage
// CHECK: %[[X:.*]] = dsc.pipeline_recv from previous micro_batch 0 : tensor<2x4xf32>
// CHECK: dsc.pipeline_send %{{.*}} to previous micro_batch 0 : tensor<2x4xf32>
// CHECK: %[[DW:.*]] = dsc.all_reduce %{{.*}} over pipeline : tensor<4x4xf32>
// CHECK: return %{{.*}}, %[[DW]]
module attributes {dsc.world_size = 2 : i64, dsc.pipeline_parallel_size = 2 : i64} {
  dsc.state parameter @w {dsc.pipeline_tied} : tensor<4x4xf32>
  func.func @last_stage() -> (tensor<f32> {dsc.output = "loss"}) {
    %x = dsc.pipeline_recv from previous micro_batch 0 : tensor<2x4xf32>
    %w = dsc.load @w : tensor<4x4xf32>
    %h = dsc.linear %x, %w : tensor<2x4xf32>, tensor<4x4xf32>
    %s = dsc.reduce_sum %h, dims = [0, 1] : tensor<2x4xf32>
    %loss = dsc.all_reduce %s over pipeline : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A middle stage relaying a float that depends on no parameter (the
// experts' dropped routes, counted from integers) and that no loss reads:
// the transfers pair only if each has its reverse on both sides. The send
// of the inactive value still receives its cotangent (and drops it); the
// receive of a value that reaches no loss sends back zeros.
// CHECK-LABEL: func.func @relay_inactive
// CHECK: %[[IN:.*]] = dsc.pipeline_recv from previous micro_batch 0 : tensor<f32>
// CHECK: %[[Z:.*]] = dsc.pipeline_send %{{.*}} to next micro_batch 0 : tensor<f32>
// CHECK: %[[OUT:.*]] = dsc.pipeline_send %{{.*}} to next micro_batch 0 : tensor<f32>
// CHECK: dsc.pipeline_recv from next micro_batch 0 : tensor<f32>
// CHECK: dsc.pipeline_recv from next micro_batch 0 : tensor<f32>
// CHECK: dsc.pipeline_send %{{.*}} to previous micro_batch 0 : tensor<f32>
// CHECK: return
module attributes {dsc.world_size = 3 : i64, dsc.pipeline_parallel_size = 3 : i64} {
  func.func @relay_inactive(%n: tensor<4xi64> {dsc.input = "n"})
      -> (tensor<f32> {dsc.output = "loss"}) {
    %in = dsc.pipeline_recv from previous micro_batch 0 : tensor<f32>
    %c = dsc.convert %n : tensor<4xi64> to tensor<4xf32>
    %own = dsc.reduce_sum %c, dims = [0] : tensor<4xf32>
    %z0 = dsc.pipeline_send %own to next micro_batch 0 : tensor<f32>
    %sum = dsc.add %in, %own : tensor<f32>, tensor<f32>
    %z1 = dsc.pipeline_send %sum to next micro_batch 0 : tensor<f32>
    %local = dsc.add %z0, %z1 : tensor<f32>, tensor<f32>
    %loss = dsc.all_reduce %local over pipeline : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A last stage receiving such a value for an output beside its loss: the
// receive sends zeros back, which its sender waits for.
// CHECK-LABEL: func.func @metric_only
// CHECK: dsc.pipeline_recv from previous micro_batch 0 : tensor<f32>
// CHECK: %[[ZERO:.*]] = dsc.constant dense<0.000000e+00> : tensor<f32>
// CHECK: dsc.pipeline_send %[[ZERO]] to previous micro_batch 0 : tensor<f32>
// CHECK: return
module attributes {dsc.world_size = 2 : i64, dsc.pipeline_parallel_size = 2 : i64} {
  dsc.state parameter @w : tensor<4xf32>
  func.func @metric_only() -> (tensor<f32> {dsc.output = "loss"}, tensor<f32> {dsc.output = "moe.dropped"}) {
    %dropped = dsc.pipeline_recv from previous micro_batch 0 : tensor<f32>
    %w = dsc.load @w : tensor<4xf32>
    %s = dsc.reduce_sum %w, dims = [0] : tensor<4xf32>
    %loss = dsc.all_reduce %s over pipeline : tensor<f32>
    return %loss, %dropped : tensor<f32>, tensor<f32>
  }
}

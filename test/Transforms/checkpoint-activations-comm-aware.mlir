// Communication-aware activation checkpointing (DeepSpeed-TED's): a
// recomputed block reads its collectives' forward outputs instead of
// communicating them again, so the checkpointed step issues the collectives
// of the step without checkpointing. comm-aware=false clones them with the
// block. Two residual blocks, each a row-parallel product summed over the
// tensor group (tanh needs the sum in the backward) and an expert exchange.
// RUN: dsc-opt %s --dsc-autodiff --cse | FileCheck %s --check-prefix=NONE
// RUN: dsc-opt %s --dsc-autodiff --cse --dsc-checkpoint-activations | FileCheck %s --check-prefix=AWARE
// RUN: dsc-opt %s --dsc-autodiff --cse --dsc-checkpoint-activations="comm-aware=false" | FileCheck %s --check-prefix=AGAIN
// RUN: dsc-opt %s --dsc-autodiff --cse --dsc-checkpoint-activations="print=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PRINT
// RUN: dsc-opt %s --dsc-autodiff --cse --dsc-checkpoint-activations="print=true comm-aware=false" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PRINT-AGAIN

// Uncheckpointed: 2 sums forward (their gradient is the identity), 2
// exchanges forward and 2 backward.
// NONE: dsc.all_reduce {{.*}} over tensor
// NONE: dsc.all_to_all
// NONE: dsc.all_reduce {{.*}} over tensor
// NONE-COUNT-3: dsc.all_to_all
// NONE-NOT: dsc.all_reduce {{.*}} over tensor
// NONE-NOT: dsc.all_to_all

// Checkpointed, communication-aware: the same collectives, none recomputed;
// the recomputed tanh reads the forward's sum, the backward the forward's
// exchange.
// AWARE: %[[S0:.*]] = dsc.all_reduce %{{.*}} over tensor
// AWARE: %[[E0:.*]] = dsc.all_to_all
// AWARE: %[[S1:.*]] = dsc.all_reduce %{{.*}} over tensor
// AWARE: dsc.all_to_all
// AWARE: dsc.all_to_all
// AWARE: dsc.tanh %[[S1]] {dsc.recomputed}
// AWARE: dsc.all_to_all
// AWARE: dsc.tanh %[[S0]] {dsc.recomputed}
// AWARE-NOT: dsc.all_reduce {{.*}} over tensor
// AWARE-NOT: dsc.all_to_all

// Not communication-aware: each block's sum and exchange communicated again.
// AGAIN: dsc.all_reduce {{.*}} over tensor :
// AGAIN: dsc.all_to_all
// AGAIN: dsc.all_reduce {{.*}} over tensor :
// AGAIN: dsc.all_to_all
// AGAIN: dsc.all_reduce {{.*}} over tensor {dsc.recomputed}
// AGAIN: dsc.all_to_all {{.*}} {dsc.recomputed}
// AGAIN: dsc.all_to_all
// AGAIN: dsc.all_reduce {{.*}} over tensor {dsc.recomputed}
// AGAIN: dsc.all_to_all {{.*}} {dsc.recomputed}
// AGAIN: dsc.all_to_all
// AGAIN-NOT: dsc.all_reduce {{.*}} over tensor
// AGAIN-NOT: dsc.all_to_all

// Kept: each block's sum (read by the recomputed tanh) and exchange (read
// by the backward), 2 x 2 x 32 bytes.
// PRINT: recomputing 2 of 2 blocks h.0 h.1; {{.*}}; collective outputs kept (comm-aware): 128 bytes
// PRINT-AGAIN: recomputing 2 of 2 blocks h.0 h.1; {{.*}}; collectives recomputed (comm-aware=false)

module attributes {dsc.world_size = 4 : i64, dsc.tensor_parallel_size = 2 : i64, dsc.expert_parallel_size = 2 : i64} {
  dsc.state parameter @"h.0.w" : tensor<4x4xf32>
  dsc.state parameter @"h.1.w" : tensor<4x4xf32>
  func.func @forward(%x: tensor<2x4xf32> {dsc.input = "x"})
      -> (tensor<f32> {dsc.output = "loss"}) {
    %w0 = dsc.load @"h.0.w" : tensor<4x4xf32>
    %l0 = dsc.linear %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
    %s0 = dsc.all_reduce %l0 over tensor : tensor<2x4xf32>
    %t0 = dsc.tanh %s0 : tensor<2x4xf32>
    %e0 = dsc.all_to_all %t0 over expert : tensor<2x4xf32>
    %m0 = dsc.mul %e0, %e0 : tensor<2x4xf32>, tensor<2x4xf32>
    %h0 = dsc.add %x, %m0 : tensor<2x4xf32>, tensor<2x4xf32>
    %w1 = dsc.load @"h.1.w" : tensor<4x4xf32>
    %l1 = dsc.linear %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
    %s1 = dsc.all_reduce %l1 over tensor : tensor<2x4xf32>
    %t1 = dsc.tanh %s1 : tensor<2x4xf32>
    %e1 = dsc.all_to_all %t1 over expert : tensor<2x4xf32>
    %m1 = dsc.mul %e1, %e1 : tensor<2x4xf32>, tensor<2x4xf32>
    %h1 = dsc.add %h0, %m1 : tensor<2x4xf32>, tensor<2x4xf32>
    %loss = dsc.reduce_sum %h1, dims = [0, 1] : tensor<2x4xf32>
    return %loss : tensor<f32>
  }
}

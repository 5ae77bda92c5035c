// The verifier's guarantee of a rank-invariant order of collectives: each is
// at the top level of a single-block graph, so every rank issues every
// collective once per step, in program order.
// RUN: dsc-opt %s -split-input-file -verify-diagnostics --allow-unregistered-dialect

// Collectives only at the top level of a graph: a kernel body runs per
// launch, and a rank could issue what is in it a different number of times.
func.func @all_reduce_in_kernel(%x: memref<4xf32>, %y: memref<4xf32>) {
  %s = dscrt.stream "compute"
  dscrt.kernel on %s ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%v: tensor<4xf32>):
    // expected-error @+1 {{'dsc.all_reduce' op is nested in 'dscrt.kernel': collectives must be at the top level of a graph, where every rank issues them in the same order}}
    %r = dsc.all_reduce %v : tensor<4xf32>
    dscrt.yield %r : tensor<4xf32>
  }
  return
}

// -----

module attributes {dsc.world_size = 2 : i64} {
  func.func @all_to_all_in_kernel(%x: memref<4xf32>, %y: memref<4xf32>) {
    %s = dscrt.stream "compute"
    dscrt.kernel on %s ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
    ^bb0(%v: tensor<4xf32>):
      // expected-error @+1 {{'dsc.all_to_all' op is nested in 'dscrt.kernel'}}
      %r = dsc.all_to_all %v : tensor<4xf32>
      dscrt.yield %r : tensor<4xf32>
    }
    return
  }
}

// -----

module attributes {dsc.world_size = 2 : i64} {
  func.func @all_gather_in_a_branch(%c: i1, %x: tensor<4xf32>) {
    // expected-error @+1 {{'dsc.all_gather' op is in a graph of 3 blocks: collectives need a single-block graph, where every rank issues them in the same order}}
    %0 = dsc.all_gather %x : tensor<4xf32> -> tensor<8xf32>
    "test.cond_br"(%c)[^a, ^b] : (i1) -> ()
  ^a:
    return
  ^b:
    return
  }
}

// -----

// Pipeline transfers are ordered like collectives: the two stages of a
// transfer must issue it once each, in their schedules' order.
module attributes {dsc.world_size = 2 : i64, dsc.pipeline_parallel_size = 2 : i64} {
  func.func @pipeline_send_in_kernel(%x: memref<4xf32>, %y: memref<f32>) {
    %s = dscrt.stream "compute"
    dscrt.kernel on %s ins(%x : memref<4xf32>) outs(%y : memref<f32>) {
    ^bb0(%v: tensor<4xf32>):
      // expected-error @+1 {{'dsc.pipeline_send' op is nested in 'dscrt.kernel'}}
      %z = dsc.pipeline_send %v to next micro_batch 0 : tensor<4xf32>
      dscrt.yield %z : tensor<f32>
    }
    return
  }
}

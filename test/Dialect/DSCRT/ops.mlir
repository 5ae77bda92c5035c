// RUN: dsc-opt %s | dsc-opt | FileCheck %s

// CHECK-LABEL: func.func @step() attributes {dscrt.arena_bytes = 1536 : i64}
func.func @step() attributes {dscrt.arena_bytes = 1536 : i64} {
  // CHECK: %[[C:.*]] = dscrt.stream "compute"
  %compute = dscrt.stream "compute"
  // CHECK: %[[M:.*]] = dscrt.stream "comm"
  %comm = dscrt.stream "comm"
  // CHECK: dscrt.input 0 "tokens" : memref<2x8xi64, #dscrt.host>
  %h = dscrt.input 0 "tokens" : memref<2x8xi64, #dscrt.host>
  // CHECK: dscrt.buffer 1024 : memref<2x8xi64>
  %t = dscrt.buffer 1024 : memref<2x8xi64>
  // CHECK: dscrt.copy %{{.*}} to %{{.*}} on %[[C]] : memref<2x8xi64, #dscrt.host> to memref<2x8xi64>
  dscrt.copy %h to %t on %compute : memref<2x8xi64, #dscrt.host> to memref<2x8xi64>
  // CHECK: dscrt.step_key : memref<4xi64, #dscrt.host>
  %k = dscrt.step_key : memref<4xi64, #dscrt.host>
  // CHECK: dscrt.step_key sample_offset = 4 : memref<4xi64, #dscrt.host>
  %k4 = dscrt.step_key sample_offset = 4 : memref<4xi64, #dscrt.host>
  // CHECK: dscrt.state 3 "wte.weight" : memref<16x4xf32>
  %w = dscrt.state 3 "wte.weight" : memref<16x4xf32>
  // CHECK: dscrt.constant dense<5.000000e-01> : tensor<f32> : memref<f32>
  %c = dscrt.constant dense<0.5> : tensor<f32> : memref<f32>
  // CHECK: dscrt.buffer 256 : memref<2x8x4xf32>
  %b = dscrt.buffer 256 : memref<2x8x4xf32>
  // CHECK: dscrt.kernel on %[[C]] ins(%{{.*}}, %{{.*}} : memref<16x4xf32>, memref<2x8xi64>) outs(%{{.*}} : memref<2x8x4xf32>)
  dscrt.kernel on %compute ins(%w, %t : memref<16x4xf32>, memref<2x8xi64>) outs(%b : memref<2x8x4xf32>) {
  ^bb0(%a0: tensor<16x4xf32>, %a1: tensor<2x8xi64>):
    %e = dsc.embedding %a0, %a1 : tensor<16x4xf32>, tensor<2x8xi64>
    dscrt.yield %e : tensor<2x8x4xf32>
  }
  // CHECK: dscrt.view %{{.*}} : memref<2x8x4xf32> to memref<64xf32>
  %v = dscrt.view %b : memref<2x8x4xf32> to memref<64xf32>
  // A host buffer's view is a host buffer (the offloaded optimizer's).
  // CHECK: dscrt.view %{{.*}} : memref<2x8xi64, #dscrt.host> to memref<16xi64, #dscrt.host>
  %hv = dscrt.view %h : memref<2x8xi64, #dscrt.host> to memref<16xi64, #dscrt.host>
  // CHECK: dscrt.alloc : memref<f32>
  %s = dscrt.alloc : memref<f32>
  // CHECK: %[[E:.*]] = dscrt.record %[[C]]
  %written = dscrt.record %compute
  // CHECK: dscrt.wait %[[M]] for %[[E]]
  dscrt.wait %comm for %written
  // CHECK: dscrt.all_reduce %{{.*}} on %[[M]] {sequence = 0 : i64} : memref<64xf32>
  dscrt.all_reduce %v on %comm {sequence = 0 : i64} : memref<64xf32>
  %reduced = dscrt.record %comm
  dscrt.wait %compute for %reduced
  // CHECK: dscrt.output 0 "loss" : memref<f32, #dscrt.host>
  %l = dscrt.output 0 "loss" : memref<f32, #dscrt.host>
  // CHECK: dscrt.copy %{{.*}} to %{{.*}} on %[[C]] : memref<f32> to memref<f32, #dscrt.host>
  dscrt.copy %c to %l on %compute : memref<f32> to memref<f32, #dscrt.host>
  // CHECK: dscrt.eval_exit
  dscrt.eval_exit
  // CHECK: dscrt.micro_step_exit
  dscrt.micro_step_exit
  // CHECK: dscrt.synchronize %[[C]]
  dscrt.synchronize %compute
  dscrt.synchronize %comm
  return
}

// The collectives and the rank's copy of ZeRO partitions.
// CHECK-LABEL: module attributes {dsc.world_size = 2 : i64}
module attributes {dsc.world_size = 2 : i64} {
  // CHECK-LABEL: func.func @partitioned
  func.func @partitioned(%whole: memref<16xf32>, %shard: memref<8xf32>, %out: memref<16xf32>) {
    %compute = dscrt.stream "compute"
    %comm = dscrt.stream "comm"
    // CHECK: dscrt.copy_shard %{{.*}} to %{{.*}} on %{{.*}} : memref<16xf32> to memref<8xf32>
    dscrt.copy_shard %whole to %shard on %compute : memref<16xf32> to memref<8xf32>
    // CHECK: dscrt.copy_shard %{{.*}} to %{{.*}} on %{{.*}} over expert_data : memref<16xf32> to memref<8xf32>
    dscrt.copy_shard %whole to %shard on %compute over expert_data : memref<16xf32> to memref<8xf32>
    // CHECK: dscrt.reduce_scatter %{{.*}} to %{{.*}} on %{{.*}} {sequence = 0 : i64} : memref<16xf32> to memref<8xf32>
    dscrt.reduce_scatter %whole to %shard on %comm {sequence = 0 : i64} : memref<16xf32> to memref<8xf32>
    // CHECK: dscrt.all_gather %{{.*}} to %{{.*}} on %{{.*}} {sequence = 1 : i64} : memref<8xf32> to memref<16xf32>
    dscrt.all_gather %shard to %out on %comm {sequence = 1 : i64} : memref<8xf32> to memref<16xf32>
    return
  }
}

// ZeRO-Offload: a host state and a host-arena buffer, a host kernel on a
// stream of its own, and the copies between the memories.
// CHECK-LABEL: func.func @offload()
func.func @offload() attributes {dscrt.arena_bytes = 256 : i64, dscrt.host_arena_bytes = 256 : i64} {
  %compute = dscrt.stream "compute"
  %d2h = dscrt.stream "d2h"
  %host = dscrt.stream "host"
  // CHECK: dscrt.state 0 "w.exp_avg" : memref<4xf32, #dscrt.host>
  %m = dscrt.state 0 "w.exp_avg" : memref<4xf32, #dscrt.host>
  %g = dscrt.buffer 0 : memref<4xf32>
  // CHECK: dscrt.buffer 0 : memref<4xf32, #dscrt.host>
  %gh = dscrt.buffer 0 : memref<4xf32, #dscrt.host>
  %e = dscrt.record %compute
  dscrt.wait %d2h for %e
  // CHECK: dscrt.copy %{{.*}} to %{{.*}} on %{{.*}} : memref<4xf32> to memref<4xf32, #dscrt.host>
  dscrt.copy %g to %gh on %d2h : memref<4xf32> to memref<4xf32, #dscrt.host>
  %c = dscrt.record %d2h
  dscrt.wait %host for %c
  // CHECK: dscrt.kernel on %{{.*}} ins(%{{.*}}, %{{.*}} : memref<4xf32, #dscrt.host>, memref<4xf32, #dscrt.host>) outs(%{{.*}} : memref<4xf32, #dscrt.host>)
  dscrt.kernel on %host ins(%m, %gh : memref<4xf32, #dscrt.host>, memref<4xf32, #dscrt.host>) outs(%m : memref<4xf32, #dscrt.host>) {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %s = dsc.add %a, %b : tensor<4xf32>, tensor<4xf32>
    dscrt.yield %s : tensor<4xf32>
  }
  dscrt.synchronize %compute
  dscrt.synchronize %d2h
  dscrt.synchronize %host
  return
}

// A pipeline stage's transfers to and from its neighbours, on the
// collectives stream.
// CHECK-LABEL: module attributes {dsc.pipeline_parallel_size = 2 : i64, dsc.world_size = 2 : i64}
module attributes {dsc.pipeline_parallel_size = 2 : i64, dsc.world_size = 2 : i64} {
  // CHECK-LABEL: func.func @stage
  func.func @stage(%act: memref<2x8xf32>, %grad: memref<2x8xf32>) {
    %compute = dscrt.stream "compute"
    %comm = dscrt.stream "comm"
    // CHECK: dscrt.pipeline_send %{{.*}} to next on %{{.*}} {micro_batch = 1 : i64, sequence = 0 : i64} : memref<2x8xf32>
    dscrt.pipeline_send %act to next on %comm {micro_batch = 1 : i64, sequence = 0 : i64} : memref<2x8xf32>
    // CHECK: dscrt.pipeline_recv %{{.*}} from next on %{{.*}} {micro_batch = 0 : i64, sequence = 1 : i64} : memref<2x8xf32>
    dscrt.pipeline_recv %grad from next on %comm {micro_batch = 0 : i64, sequence = 1 : i64} : memref<2x8xf32>
    return
  }
}

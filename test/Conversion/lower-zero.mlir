// RUN: dsc-opt %s --dsc-lower-to-runtime | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s --check-prefix=CPP
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// A stage-2 update of one parameter of 3 elements on 2 ranks (shards of 2):
// the gradient is reduce-scattered, the parameter's block copied out, the
// updated shard all-gathered, cut to 3 elements and stored whole.
module attributes {dsc.world_size = 2 : i64} {
  dsc.state parameter @w : tensor<3xf32>
  dsc.state optimizer @w.momentum_buffer {partition_of = array<i64: 3>} : tensor<2xf32>
  func.func @train(%g: tensor<4xf32> {dsc.input = "g"}) -> (tensor<f32> {dsc.output = "loss"}) {
    %w = dsc.load @w : tensor<3xf32>
    %l = dsc.reduce_sum %w, dims = [0] : tensor<3xf32>
    %gs = dsc.reduce_scatter %g : tensor<4xf32> -> tensor<2xf32>
    %z = dsc.constant dense<0.0> : tensor<1xf32>
    %wp = dsc.concat(%w, %z), dim = 0 : tensor<3xf32>, tensor<1xf32>
    %ws = dsc.local_shard %wp : tensor<4xf32> -> tensor<2xf32>
    %buf = dsc.load @w.momentum_buffer : tensor<2xf32>
    %b2 = dsc.add %buf, %gs : tensor<2xf32>, tensor<2xf32>
    %new = dsc.sub %ws, %b2 : tensor<2xf32>, tensor<2xf32>
    dsc.store %b2 to @w.momentum_buffer : tensor<2xf32>
    %all = dsc.all_gather %new : tensor<2xf32> -> tensor<4xf32>
    %cut = dsc.slice %all, dim = 0, start = 0, end = 3, step = 1 : tensor<4xf32>
    dsc.store %cut to @w : tensor<3xf32>
    return %l : tensor<f32>
  }
}
// CHECK-LABEL: func.func @step
// CHECK: %[[C:.*]] = dscrt.stream "compute"
// CHECK-NEXT: %[[M:.*]] = dscrt.stream "comm"
// CHECK: dscrt.eval_exit
// The reduce-scatter reads the gradient in place (no copy, unlike an
// all-reduce), once compute has written it.
// CHECK: %[[GS:.*]] = dscrt.alloc : memref<2xf32>
// CHECK-NEXT: %[[E0:.*]] = dscrt.record %[[C]]
// CHECK-NEXT: dscrt.wait %[[M]] for %[[E0]]
// CHECK-NEXT: dscrt.reduce_scatter %{{.*}} to %[[GS]] on %[[M]] {sequence = 0 : i64} : memref<4xf32> to memref<2xf32>
// CHECK-NEXT: %[[E1:.*]] = dscrt.record %[[M]]
// CHECK: %[[WS:.*]] = dscrt.alloc : memref<2xf32>
// CHECK-NEXT: dscrt.copy_shard %{{.*}} to %[[WS]] on %[[C]] : memref<4xf32> to memref<2xf32>
// CHECK: dscrt.wait %[[C]] for %[[E1]]
// The new momentum (stored) and the new shard (gathered) in one kernel.
// CHECK: dscrt.kernel on %[[C]] ins(%{{.*}}, %[[GS]], %[[WS]] : memref<2xf32>, memref<2xf32>, memref<2xf32>) outs(%{{.*}}, %{{.*}} : memref<2xf32>, memref<2xf32>)
// CHECK: %[[ALL:.*]] = dscrt.alloc : memref<4xf32>
// CHECK-NEXT: %[[E2:.*]] = dscrt.record %[[C]]
// CHECK-NEXT: dscrt.wait %[[M]] for %[[E2]]
// CHECK-NEXT: dscrt.all_gather %{{.*}} to %[[ALL]] on %[[M]] {sequence = 1 : i64} : memref<2xf32> to memref<4xf32>
// CHECK-NEXT: %[[E3:.*]] = dscrt.record %[[M]]
// CHECK-NEXT: dscrt.wait %[[C]] for %[[E3]]
// CHECK-NEXT: %[[CUT:.*]] = dscrt.alloc : memref<3xf32>
// CHECK-NEXT: dscrt.kernel on %[[C]] ins(%[[ALL]] : memref<4xf32>) outs(%[[CUT]] : memref<3xf32>)
// CHECK: dsc.slice
// CHECK: dscrt.state 0 "w" : memref<3xf32>

// The partitioned state's whole shape is in the state table; the rank's
// block is copied from rank * 2 elements; the collectives go to the
// runtime with the shard's element count.
// CPP: {{[{][{]}}"w.momentum_buffer", ElementType::F32, 1, kShape{{[0-9]+}}}, dsc::rt::StateRole::Optimizer, 1, kShape{{[0-9]+}}, int32_t(dsc::rt::CommGroup::World)},
// CPP: ctx->reduceScatterSum(v{{[0-9]+}}, v{{[0-9]+}}, 2, ElementType::F32, 0, s{{[0-9]+}}, dsc::rt::CommGroup::World);
// CPP: .enqueue(dsc_task_t{dsc_memcpy_task, {dsc_ptr(v{{[0-9]+}}), dsc_ptr(v{{[0-9]+}} + static_cast<int64_t>(ctx->rank()) * 2)}, 8}, "copy of this rank's shard");
// CPP: ctx->allGather(v{{[0-9]+}}, v{{[0-9]+}}, 2, ElementType::F32, 1, s{{[0-9]+}}, dsc::rt::CommGroup::World);
// CUDA: dsc_check(cudaMemcpyAsync(v{{[0-9]+}}, v{{[0-9]+}} + static_cast<int64_t>(ctx->rank()) * 2, 2 * sizeof(*v{{[0-9]+}}), cudaMemcpyDeviceToDevice, s{{[0-9]+}}_h), "this rank's shard");

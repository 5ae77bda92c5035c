// RUN: dsc-opt %s --dsc-lower-to-runtime | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s --check-prefix=CPP
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// A stage-2 update of a rank's 2 experts of 3 (6 elements) over its
// expert-data group of 2 (4 ranks, expert groups of 2): shards of 3, the
// gradient reduce-scattered over the group, the rank's block of its
// experts copied out from its index in the group, the updated shard
// gathered over the group.
module attributes {dsc.world_size = 4 : i64, dsc.expert_parallel_size = 2 : i64} {
  dsc.state parameter @e {partition_of = array<i64: 4, 3>, partition_group = 1 : i32} : tensor<2x3xf32>
  dsc.state optimizer @e.momentum_buffer {partition_of = array<i64: 4, 3>, partition_group = 2 : i32} : tensor<3xf32>
  func.func @train(%g: tensor<6xf32> {dsc.input = "g"}) -> (tensor<f32> {dsc.output = "loss"}) {
    %e = dsc.load @e : tensor<2x3xf32>
    %l = dsc.reduce_sum %e, dims = [0, 1] : tensor<2x3xf32>
    %gs = dsc.reduce_scatter %g over expert_data : tensor<6xf32> -> tensor<3xf32>
    %flat = dsc.reshape %e : tensor<2x3xf32> -> tensor<6xf32>
    %es = dsc.local_shard %flat over expert_data : tensor<6xf32> -> tensor<3xf32>
    %buf = dsc.load @e.momentum_buffer : tensor<3xf32>
    %b2 = dsc.add %buf, %gs : tensor<3xf32>, tensor<3xf32>
    %new = dsc.sub %es, %b2 : tensor<3xf32>, tensor<3xf32>
    dsc.store %b2 to @e.momentum_buffer : tensor<3xf32>
    %all = dsc.all_gather %new over expert_data : tensor<3xf32> -> tensor<6xf32>
    %back = dsc.reshape %all : tensor<6xf32> -> tensor<2x3xf32>
    dsc.store %back to @e : tensor<2x3xf32>
    return %l : tensor<f32>
  }
}
// CHECK-LABEL: func.func @step
// CHECK: dscrt.reduce_scatter %{{.*}} to %{{.*}} on %{{.*}} over expert_data {sequence = 0 : i64} : memref<6xf32> to memref<3xf32>
// CHECK: dscrt.copy_shard %{{.*}} to %{{.*}} on %{{.*}} over expert_data : memref<6xf32> to memref<3xf32>
// CHECK: dscrt.all_gather %{{.*}} to %{{.*}} on %{{.*}} over expert_data {sequence = 1 : i64} : memref<3xf32> to memref<6xf32>

// The state table names the group; the block is copied from the rank's
// index in its expert-data group.
// CPP: {{[{][{]}}"e.momentum_buffer", ElementType::F32, 1, kShape{{[0-9]+}}}, dsc::rt::StateRole::Optimizer, 2, kShape{{[0-9]+}}, int32_t(dsc::rt::CommGroup::ExpertData)},
// CPP: ctx->reduceScatterSum(v{{[0-9]+}}, v{{[0-9]+}}, 3, ElementType::F32, 0, s{{[0-9]+}}, dsc::rt::CommGroup::ExpertData);
// CPP: .enqueue(dsc_task_t{dsc_memcpy_task, {dsc_ptr(v{{[0-9]+}}), dsc_ptr(v{{[0-9]+}} + static_cast<int64_t>(ctx->groupRank(dsc::rt::CommGroup::ExpertData)) * 3)}, 12}, "copy of this rank's shard");
// CPP: ctx->allGather(v{{[0-9]+}}, v{{[0-9]+}}, 3, ElementType::F32, 1, s{{[0-9]+}}, dsc::rt::CommGroup::ExpertData);
// CUDA: dsc_check(cudaMemcpyAsync(v{{[0-9]+}}, v{{[0-9]+}} + static_cast<int64_t>(ctx->groupRank(dsc::rt::CommGroup::ExpertData)) * 3, 3 * sizeof(*v{{[0-9]+}}), cudaMemcpyDeviceToDevice, s{{[0-9]+}}_h), "this rank's shard");

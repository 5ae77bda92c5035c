// A pipeline stage's program, lowered and emitted: the transfers become
// dscrt.pipeline_send / dscrt.pipeline_recv on the collectives stream (the
// send's zero, which the stage adds to its loss, a constant), numbered with
// the collectives and tagged with their micro-batch, then the runtime's
// pipelineSend / pipelineRecv, in 1F1B's order for 2 micro-batches on 2
// stages: stage 0 sends both forwards, then receives both gradients from
// the next stage; stage 1 receives an activation and sends its gradient
// back, micro-batch by micro-batch. The loss and the tied embedding's
// gradient are summed over the pipeline group after every transfer.
// ArtifactInfo ends with the pipeline-parallel size and the stage.
// RUN: dsc-opt %S/../../Transforms/Inputs/three-blocks.mlir --world-size=2 --pipeline-parallel=2 --pipeline-stage=0 --grad-accum=2 --optimizer=sgd --lr=0.1 --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory -o %t0.mlir
// RUN: FileCheck %s --check-prefix=LOWER < %t0.mlir
// RUN: dsc-translate --dscrt-to-cpp %t0.mlir | FileCheck %s --check-prefix=S0
// RUN: dsc-opt %S/../../Transforms/Inputs/three-blocks.mlir --world-size=2 --pipeline-parallel=2 --pipeline-stage=1 --grad-accum=2 --optimizer=sgd --lr=0.1 --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory -o %t1.mlir
// RUN: dsc-translate --dscrt-to-cpp %t1.mlir | FileCheck %s --check-prefix=S1

// LOWER: %[[COMM:.*]] = dscrt.stream "comm"
// LOWER: dscrt.pipeline_send %{{.*}} to next on %[[COMM]] {micro_batch = 0 : i64, sequence = 0 : i64} : memref<2x8x4xf32>
// LOWER-NEXT: dscrt.constant dense<0.000000e+00> : tensor<f32> : memref<f32>
// LOWER: dscrt.pipeline_send %{{.*}} to next on %[[COMM]] {micro_batch = 1 : i64, sequence = 1 : i64} : memref<2x8x4xf32>
// LOWER: %[[G:.*]] = dscrt.buffer {{[0-9]+}} : memref<2x8x4xf32>
// LOWER-NEXT: dscrt.pipeline_recv %[[G]] from next on %[[COMM]] {micro_batch = 0 : i64, sequence = 2 : i64} : memref<2x8x4xf32>
// LOWER-NEXT: dscrt.record %[[COMM]]
// LOWER: dscrt.pipeline_recv %{{.*}} from next on %[[COMM]] {micro_batch = 1 : i64, sequence = 3 : i64}
// LOWER: dscrt.all_reduce %{{.*}} on %[[COMM]] over pipeline {sequence = 4 : i64} : memref<f32>

// S0: {"comm", true, true},
// S0: const dsc::rt::ArtifactInfo kInfo = {{.*}}, kStreams, 1, 0, 1, 2, 0};
// S0: ctx->pipelineSend({{v[0-9]+}}, 64, ElementType::F32, dsc::rt::PipelinePeer::Next, 0, 0, [[S:s[0-9]+]]);
// S0: ctx->pipelineSend({{v[0-9]+}}, 64, ElementType::F32, dsc::rt::PipelinePeer::Next, 1, 1, [[S]]);
// S0: ctx->pipelineRecv({{v[0-9]+}}, 64, ElementType::F32, dsc::rt::PipelinePeer::Next, 0, 2, [[S]]);
// S0: ctx->pipelineRecv({{v[0-9]+}}, 64, ElementType::F32, dsc::rt::PipelinePeer::Next, 1, 3, [[S]]);
// S0: ctx->allReduceSum({{v[0-9]+}}, 1, ElementType::F32, 4, [[S]], dsc::rt::CommGroup::Pipeline);
// S0: ctx->allReduceSum({{v[0-9]+}}, 64, ElementType::F32, 5, [[S]], dsc::rt::CommGroup::Pipeline);

// S1: const dsc::rt::ArtifactInfo kInfo = {{.*}}, kStreams, 1, 0, 1, 2, 1};
// S1: ctx->pipelineRecv({{v[0-9]+}}, 64, ElementType::F32, dsc::rt::PipelinePeer::Previous, 0, 0, [[S:s[0-9]+]]);
// S1: ctx->pipelineSend({{v[0-9]+}}, 64, ElementType::F32, dsc::rt::PipelinePeer::Previous, 0, 1, [[S]]);
// S1: ctx->pipelineRecv({{v[0-9]+}}, 64, ElementType::F32, dsc::rt::PipelinePeer::Previous, 1, 2, [[S]]);
// S1: ctx->pipelineSend({{v[0-9]+}}, 64, ElementType::F32, dsc::rt::PipelinePeer::Previous, 1, 3, [[S]]);
// S1: ctx->allReduceSum({{v[0-9]+}}, 1, ElementType::F32, 4, [[S]], dsc::rt::CommGroup::Pipeline);

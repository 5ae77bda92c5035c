// The stage cut of a graph with outputs after its loss (as the experts'
// metrics follow it): each output is returned by the stage that computes
// it, micro-batch m - 1's value (what a single rank's gradient
// accumulation returns from the step's last call), summed over the
// pipeline group with the other stages' zeros so that every rank returns
// it. An output crosses no cut to be returned; a value that a later
// stage's output reads (%m0 in %both, as stage 0's l_aux in the loss)
// crosses it as any activation does. The schedule keeps the sums behind
// the micro-batches, in one order on every stage.
// RUN: dsc-opt %s --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=0 micro-batches=2" | FileCheck %s --check-prefix=STAGE0
// RUN: dsc-opt %s --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=1 micro-batches=2" | FileCheck %s --check-prefix=STAGE1
// RUN: dsc-opt %s --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=0 micro-batches=2" --dsc-autodiff --dsc-pipeline-schedule=schedule=1f1b | FileCheck %s --check-prefix=ORDER
// RUN: dsc-opt %s --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=1 micro-batches=2" --dsc-autodiff --dsc-pipeline-schedule=schedule=zb-h1 | FileCheck %s --check-prefix=ORDER

dsc.state parameter @"h.0.w" : tensor<4x4xf32>
dsc.state parameter @"h.1.w" : tensor<4x4xf32>
func.func @forward(%x: tensor<2x4xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"}, tensor<f32> {dsc.output = "first"},
        tensor<2x4xi64> {dsc.output = "second"}, tensor<f32> {dsc.output = "both"}) {
  %w0 = dsc.load @"h.0.w" : tensor<4x4xf32>
  %h0 = dsc.linear %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %m0 = dsc.reduce_sum %h0, dims = [0, 1] : tensor<2x4xf32>
  %w1 = dsc.load @"h.1.w" : tensor<4x4xf32>
  %h1 = dsc.linear %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %i1 = dsc.convert %h1 : tensor<2x4xf32> to tensor<2x4xi64>
  %m1 = dsc.reduce_sum %h1, dims = [0, 1] : tensor<2x4xf32>
  %both = dsc.add %m0, %m1 : tensor<f32>, tensor<f32>
  %loss = dsc.add %m1, %both : tensor<f32>, tensor<f32>
  return %loss, %m0, %i1, %both : tensor<f32>, tensor<f32>, tensor<2x4xi64>, tensor<f32>
}

// Stage 0 computes "first"; %m0 crosses the cut for "both" and the loss.
// STAGE0-LABEL: func.func @forward
// STAGE0: %[[M00:.*]] = dsc.reduce_sum {{.*}} {dsc.micro_batch = 0 : i64}
// STAGE0: dsc.pipeline_send %[[M00]] to next micro_batch 0 : tensor<f32>
// STAGE0: %[[M01:.*]] = dsc.reduce_sum {{.*}} {dsc.micro_batch = 1 : i64}
// STAGE0: dsc.pipeline_send %[[M01]] to next micro_batch 1 : tensor<f32>
// STAGE0: %[[LOSS:.*]] = dsc.all_reduce %{{.*}} over pipeline : tensor<f32>
// STAGE0: %[[FIRST:.*]] = dsc.all_reduce %[[M01]] over pipeline : tensor<f32>
// STAGE0: %[[Z2:.*]] = dsc.constant dense<0> : tensor<2x4xi64>
// STAGE0: %[[SECOND:.*]] = dsc.all_reduce %[[Z2]] over pipeline : tensor<2x4xi64>
// STAGE0: %[[Z3:.*]] = dsc.constant dense<0.000000e+00> : tensor<f32>
// STAGE0: %[[BOTH:.*]] = dsc.all_reduce %[[Z3]] over pipeline : tensor<f32>
// STAGE0: return %[[LOSS]], %[[FIRST]], %[[SECOND]], %[[BOTH]]

// Stage 1 computes "second" and "both"; micro-batch 0's copy of the
// conversion only "second" reads is gone.
// STAGE1-LABEL: func.func @forward
// STAGE1: %[[R0:.*]] = dsc.pipeline_recv from previous micro_batch 0 : tensor<f32>
// STAGE1-NOT: dsc.convert {{.*}}micro_batch = 0
// STAGE1: %[[R1:.*]] = dsc.pipeline_recv from previous micro_batch 1 : tensor<f32>
// STAGE1: %[[I1:.*]] = dsc.convert %{{.*}} {dsc.micro_batch = 1 : i64} : tensor<2x4xf32> to tensor<2x4xi64>
// STAGE1: %[[B1:.*]] = dsc.add %[[R1]], %{{.*}} {dsc.micro_batch = 1 : i64}
// STAGE1: %[[LOSS:.*]] = dsc.all_reduce %{{.*}} over pipeline : tensor<f32>
// STAGE1: %[[Z1:.*]] = dsc.constant dense<0.000000e+00> : tensor<f32>
// STAGE1: %[[FIRST:.*]] = dsc.all_reduce %[[Z1]] over pipeline : tensor<f32>
// STAGE1: %[[SECOND:.*]] = dsc.all_reduce %[[I1]] over pipeline : tensor<2x4xi64>
// STAGE1: %[[BOTH:.*]] = dsc.all_reduce %[[B1]] over pipeline : tensor<f32>
// STAGE1: return %[[LOSS]], %[[FIRST]], %[[SECOND]], %[[BOTH]]

// After the schedule, the four sums follow the last transfer: on stage 0
// the owner's sum of micro-batch 1's "first" does not run in B1, nor the
// zeros' sums first.
// ORDER-LABEL: func.func @forward
// ORDER-NOT: dsc.all_reduce
// ORDER: {{recv from next|to previous}} micro_batch 1 : tensor<2x4xf32>
// ORDER-NOT: dsc.pipeline_
// ORDER: dsc.all_reduce {{.*}} over pipeline : tensor<f32>
// ORDER-NEXT: dsc.all_reduce {{.*}} over pipeline : tensor<f32>
// ORDER-NEXT: dsc.all_reduce {{.*}} over pipeline : tensor<2x4xi64>
// ORDER-NEXT: dsc.all_reduce {{.*}} over pipeline : tensor<f32>
// ORDER-NEXT: return

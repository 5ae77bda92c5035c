// Gradient clipping in pipeline stages: each stage sums the squares of its
// gradients, the pipeline group adds the stages' sums, and the norm is the
// model's on every stage. The embedding tied between the stages (held by
// both, its gradient summed over the pipeline group) counts on stage 0
// alone.
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --world-size=2 --pipeline-parallel=2 --pipeline-stage=0 --grad-accum=2 --optimizer=sgd --lr=0.1 --grad-clip=1.0 | FileCheck %s --check-prefix=STAGE0
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --world-size=2 --pipeline-parallel=2 --pipeline-stage=1 --grad-accum=2 --optimizer=sgd --lr=0.1 --grad-clip=1.0 | FileCheck %s --check-prefix=STAGE1

// STAGE0: %[[TIED:.*]] = dsc.all_reduce %{{.*}} over pipeline : tensor<16x4xf32>
// STAGE0: %[[OWN:.*]] = dsc.sum_squares(%[[TIED]], {{.*}}) : tensor<f32>
// STAGE0: %[[ALL:.*]] = dsc.all_reduce %[[OWN]] over pipeline : tensor<f32>
// STAGE0: dsc.sqrt %[[ALL]]

// Stage 1's own: block h.2's and the final norm's, not the embedding's.
// STAGE1: dsc.all_reduce %{{.*}} over pipeline : tensor<16x4xf32>
// STAGE1: %[[OWN:.*]] = dsc.sum_squares({{[^:]*}} : tensor<4xf32>, tensor<12x4xf32>, tensor<4x4xf32>, tensor<4xf32>) : tensor<f32>
// STAGE1: %[[ALL:.*]] = dsc.all_reduce %[[OWN]] over pipeline : tensor<f32>
// STAGE1: dsc.sqrt %[[ALL]]

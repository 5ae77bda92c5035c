// A weight that only some pipeline stages read: GPT-2's tied embedding and
// head (four-blocks.mlir) at P = 4, read by stage 0 (the embedding) and
// stage 3 (the head). Both declare it, marked with the stages that read
// it; autodiff sums its gradient over those two stages alone, which the
// middle stages neither hold nor join. The step report counts that sum
// under the group of the two stages.
// DEFINE: %{cut} = dsc-opt %S/Inputs/four-blocks.mlir --dsc-data-parallel="world-size=4 pipeline-parallel=4" --dsc-pipeline-parallel=
// RUN: %{cut}"stage=0 micro-batches=4" --dsc-autodiff | FileCheck %s --check-prefix=FIRST
// RUN: %{cut}"stage=1 micro-batches=4" --dsc-autodiff | FileCheck %s --check-prefix=MIDDLE
// RUN: %{cut}"stage=3 micro-batches=4" --dsc-autodiff | FileCheck %s --check-prefix=LAST
// RUN: dsc-opt %S/Inputs/four-blocks.mlir --world-size=4 --pipeline-parallel=4 --pipeline-stage=3 --grad-accum=4 --optimizer=sgd --lr=0.1 --dsc-report=comm -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: dsc-opt %S/Inputs/four-blocks.mlir --world-size=4 --pipeline-parallel=4 --pipeline-stage=2 --grad-accum=4 --optimizer=sgd --lr=0.1 --dsc-report=comm -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT-MIDDLE

// FIRST: dsc.state parameter @wte {dsc.pipeline_tied = array<i64: 0, 3>} : tensor<16x4xf32>
// FIRST: dsc.all_reduce %{{.*}} over pipeline stages [0, 3] : tensor<16x4xf32>
// FIRST-NOT: stages

// MIDDLE-NOT: @wte
// MIDDLE-NOT: stages
// MIDDLE: dsc.pipeline_stage = 1
// MIDDLE-NOT: @wte
// MIDDLE-NOT: stages

// LAST: dsc.state parameter @wte {dsc.pipeline_tied = array<i64: 0, 3>} : tensor<16x4xf32>
// LAST: dsc.all_reduce %{{.*}} over pipeline stages [0, 3] : tensor<16x4xf32>
// LAST-NOT: stages

// The embedding's gradient, 16 x 4 f32 = 256 bytes, once per update; over
// two ranks an all-reduce sends (2 - 1) / 2 x 2 x 256 bytes.
// REPORT: dsc report: world size 4 (mesh: tensor 1 x data 1 x pipeline 4, tensor innermost, then data: rank r at stage r / 1), pipeline stage 3 of 4
// REPORT: all_reduce[pipeline[0,3]] f32 1 256 256 256
// REPORT-MIDDLE: dsc report: world size 4 (mesh: {{.*}}), pipeline stage 2 of 4
// REPORT-MIDDLE-NOT: pipeline[


// A tied weight that only some stages read (four-blocks.mlir at P = 4: the
// embedding on stage 0, the head on stage 3): its gradient's sum lowers to
// dscrt.all_reduce ... over pipeline stages [0, 3] and is emitted as the
// runtime's allReduceSumStages with the list of stages; the loss stays a
// sum over the whole pipeline group. A middle stage emits neither.
// RUN: dsc-opt %S/../../Transforms/Inputs/four-blocks.mlir --world-size=4 --pipeline-parallel=4 --pipeline-stage=0 --grad-accum=4 --optimizer=sgd --lr=0.1 --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory -o %t0.mlir
// RUN: FileCheck %s --check-prefix=LOWER < %t0.mlir
// RUN: dsc-translate --dscrt-to-cpp %t0.mlir | FileCheck %s
// RUN: dsc-opt %S/../../Transforms/Inputs/four-blocks.mlir --world-size=4 --pipeline-parallel=4 --pipeline-stage=1 --grad-accum=4 --optimizer=sgd --lr=0.1 --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s --check-prefix=MIDDLE

// LOWER: dscrt.all_reduce %{{.*}} on %{{.*}} over pipeline {sequence = {{[0-9]+}} : i64} : memref<f32>
// LOWER: dscrt.all_reduce %{{.*}} on %{{.*}} over pipeline stages [0, 3] {sequence = {{[0-9]+}} : i64} : memref<16x4xf32>

// CHECK: ctx->allReduceSum(v{{[0-9]+}}, 1, ElementType::F32, {{[0-9]+}}, s{{[0-9]+}}, dsc::rt::CommGroup::Pipeline);
// CHECK: static const int32_t stages[] = {0, 3};
// CHECK-NEXT: ctx->allReduceSumStages(v{{[0-9]+}}, 64, ElementType::F32, {{[0-9]+}}, s{{[0-9]+}}, stages, 2);

// MIDDLE: ctx->allReduceSum(v{{[0-9]+}}, 1, ElementType::F32, {{[0-9]+}}, s{{[0-9]+}}, dsc::rt::CommGroup::Pipeline);
// MIDDLE-NOT: allReduceSumStages

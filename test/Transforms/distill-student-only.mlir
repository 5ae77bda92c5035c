// RUN: dsc-opt %S/Inputs/distill-student.mlir --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir beta=2 temperature=2 teacher-forward=false" | FileCheck %s
// RUN: dsc-opt %S/Inputs/distill-student.mlir --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir beta=2 temperature=2" | grep "dsc.state" > %t.with
// RUN: dsc-opt %S/Inputs/distill-student.mlir --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir beta=2 temperature=2 teacher-forward=false" | grep "dsc.state" > %t.without
// RUN: diff %t.with %t.without
// RUN: dsc-opt %S/Inputs/distill-student.mlir --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir teacher-forward=false teacher-precision=bf16" | FileCheck %s --check-prefix=BF16
// RUN: dsc-opt %S/Inputs/distill-student.mlir --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir teacher-forward=false" --dsc-autodiff --dsc-optimizer | FileCheck %s --check-prefix=TRAIN
// RUN: not dsc-opt %S/Inputs/distill-student.mlir --dsc-distill="teacher=%S/Inputs/distill-teacher-9-classes.mlir teacher-forward=false" 2>&1 | FileCheck %s --check-prefix=CLASSES

// Staged KD's step after the stop (teacher-forward=false): the student's
// models are Inputs/distill-student.mlir and Inputs/distill-teacher.mlir.
// The teacher's states are declared as the step with the teacher declares
// them (the diff above: the same names, types and order, so both steps
// share one state table), but nothing reads them: no teacher forward, no
// FLOPs of it, no KD term in the loss, and a kd_loss of 0.
// CHECK: module attributes {dsc.teacher_flops = 0 : i64}
// CHECK: dsc.state parameter @lm_head.weight
// CHECK-NEXT: dsc.state teacher @teacher.wte.weight : tensor<8x4xf32>
// CHECK-NEXT: dsc.state teacher @teacher.h.0.mlp.c_fc.weight : tensor<4x4xf32>
// CHECK-NEXT: dsc.state teacher @teacher.h.0.scale : tensor<4xf32>
// CHECK-NEXT: dsc.state teacher @teacher.lm_head.weight : tensor<8x4xf32>
// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> (tensor<f32> {dsc.output = "loss"}, tensor<f32> {dsc.output = "lm_loss"}, tensor<f32> {dsc.output = "kd_loss"})
// CHECK-NOT: dsc.load @teacher
// CHECK: %[[LM:.*]] = dsc.cross_entropy
// CHECK-NOT: dsc.log_softmax
// CHECK-NOT: dsc.load @teacher
// CHECK: %[[ZERO:.*]] = dsc.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: return %[[LM]], %[[LM]], %[[ZERO]]

// The teacher's storage type is the one the step with the teacher has.
// BF16: dsc.state teacher @teacher.wte.weight : tensor<8x4xbf16>
// BF16-NOT: dsc.load @teacher

// Trained, it updates the student alone, as the step with the teacher does.
// TRAIN-NOT: teacher.{{.*}}exp_avg
// TRAIN-NOT: dsc.store %{{.*}} to @teacher.
// TRAIN-NOT: dsc.load @teacher

// The pair is checked as for the step with the teacher: the two steps of
// one artifact distill the same teacher.
// CLASSES: error: --dsc-distill: the teacher's vocabulary has 9 classes, the student's 8

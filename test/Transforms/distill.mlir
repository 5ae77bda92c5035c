// RUN: dsc-opt %S/Inputs/distill-student.mlir --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir beta=2 temperature=2" | FileCheck %s
// RUN: dsc-opt %S/Inputs/distill-student.mlir --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir" --dsc-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: dsc-opt %S/Inputs/distill-student.mlir --dsc-data-parallel=world-size=2 --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir" | FileCheck %s --check-prefix=DP
// RUN: dsc-opt %S/Inputs/distill-student.mlir --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir teacher-precision=bf16" | FileCheck %s --check-prefix=BF16
// RUN: dsc-opt %S/Inputs/distill-student.mlir --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir" --dsc-autodiff --dsc-optimizer | FileCheck %s --check-prefix=TRAIN

// This file holds only checks; the models are Inputs/distill-student.mlir
// (one layer) and Inputs/distill-teacher.mlir (two, with dropout).

// The FLOPs of the teacher's matrix products, for the report:
// 2 * 6 * 4 * 4 + 2 * 6 * 8 * 4.
// CHECK: module attributes {dsc.teacher_flops = 576 : i64}
// The teacher's states, after the student's, frozen and prefixed, in the
// order its forward reads them.
// CHECK: dsc.state parameter @lm_head.weight
// CHECK-NEXT: dsc.state teacher @teacher.wte.weight : tensor<8x4xf32>
// CHECK-NEXT: dsc.state teacher @teacher.h.0.mlp.c_fc.weight : tensor<4x4xf32>
// CHECK-NEXT: dsc.state teacher @teacher.h.0.scale : tensor<4xf32>
// CHECK-NEXT: dsc.state teacher @teacher.lm_head.weight : tensor<8x4xf32>
// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> (tensor<f32> {dsc.output = "loss"}, tensor<f32> {dsc.output = "lm_loss"}, tensor<f32> {dsc.output = "kd_loss"})
// CHECK: %[[LOGITS:.*]] = dsc.reshape %{{.*}} : tensor<2x3x8xf32> -> tensor<6x8xf32>
// CHECK: %[[LM:.*]] = dsc.cross_entropy %[[LOGITS]]
// The teacher on the same inputs, in eval mode: no dropout.
// CHECK-NOT: dsc.dropout
// CHECK-NOT: dsc.step_key
// CHECK: dsc.load @teacher.wte.weight
// CHECK: dsc.embedding %{{.*}}, %arg0
// CHECK: dsc.load @teacher.h.0.scale
// CHECK: %[[TLOGITS:.*]] = dsc.reshape %{{.*}} : tensor<2x3x8xf32> -> tensor<6x8xf32>
// Only what its logits need: not its cross-entropy.
// CHECK-NOT: dsc.cross_entropy
// KL(softmax(t / tau) || softmax(s / tau)) * beta * tau^2 / (b * s):
// 2 * 4 / 6.
// CHECK: %[[TAU:.*]] = dsc.constant dense<2.000000e+00>
// CHECK: %[[S:.*]] = dsc.div %[[LOGITS]], %[[TAU]]
// CHECK: %[[LOGPS:.*]] = dsc.log_softmax %[[S]], dim = 1
// CHECK: %[[T:.*]] = dsc.div %[[TLOGITS]], %{{.*}}
// CHECK: %[[LOGPT:.*]] = dsc.log_softmax %[[T]], dim = 1
// CHECK: %[[PT:.*]] = dsc.exp %[[LOGPT]]
// CHECK: %[[DIFF:.*]] = dsc.sub %[[LOGPT]], %[[LOGPS]]
// CHECK: %[[PROD:.*]] = dsc.mul %[[PT]], %[[DIFF]]
// CHECK: %[[KL:.*]] = dsc.reduce_sum %[[PROD]], dims = [0, 1]
// CHECK: %[[SCALE:.*]] = dsc.constant dense<1.3333333{{.*}}>
// CHECK: %[[KD:.*]] = dsc.mul %[[KL]], %[[SCALE]]
// CHECK: %[[TOTAL:.*]] = dsc.add %[[LM]], %[[KD]]
// CHECK: return %[[TOTAL]], %[[LM]], %[[KD]]

// Autodiff differentiates the student's parameters only: the teacher's
// states get no gradient, and the loss's terms stay metrics.
// GRAD-LABEL: func.func @forward
// GRAD-SAME: {dsc.output = "kd_loss"}
// GRAD-SAME: {dsc.gradient_of = @wte.weight, dsc.output = "grad.wte.weight"}
// GRAD-SAME: {dsc.gradient_of = @lm_head.weight, dsc.output = "grad.lm_head.weight"})
// GRAD-NOT: grad.teacher

// On data-parallel ranks each rank's KD term is averaged over the ranks,
// beside the loss made global by the data-parallel pass.
// DP-LABEL: func.func @forward
// DP: %[[KD:.*]] = dsc.mul %{{.*}}, %{{.*}} : tensor<f32>
// DP: %[[SUM:.*]] = dsc.all_reduce %[[KD]]
// DP: %[[MEAN:.*]] = dsc.div %[[SUM]], %{{.*}}
// DP: return %{{.*}}, %{{.*}}, %[[MEAN]]

// bf16 storage: the forward reads the teacher's weights widened back.
// BF16: dsc.state teacher @teacher.wte.weight : tensor<8x4xbf16>
// BF16: dsc.load @teacher.wte.weight : tensor<8x4xbf16>
// BF16-NEXT: dsc.convert %{{.*}} : tensor<8x4xbf16> to tensor<8x4xf32>

// The optimizer updates the student's parameters only: no store to a
// teacher's state, no optimizer state of one.
// TRAIN-NOT: teacher.{{.*}}exp_avg
// TRAIN-NOT: dsc.store %{{.*}} to @teacher.

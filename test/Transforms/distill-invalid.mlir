// RUN: dsc-opt %s -split-input-file -verify-diagnostics --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir"
// RUN: not dsc-opt %S/Inputs/distill-student.mlir --dsc-distill="teacher=%S/Inputs/distill-teacher-9-classes.mlir" 2>&1 | FileCheck %s --check-prefix=VOCAB
// RUN: not dsc-opt %S/Inputs/distill-student.mlir --dsc-distill="teacher=%S/Inputs/no-such-teacher.mlir" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not dsc-opt %S/Inputs/distill-student.mlir --dsc-distill 2>&1 | FileCheck %s --check-prefix=NOTEACHER
// RUN: not dsc-opt %S/Inputs/distill-student.mlir --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir temperature=0" 2>&1 | FileCheck %s --check-prefix=TEMP
// RUN: not dsc-opt %S/Inputs/distill-student.mlir --dsc-distill="teacher=%S/Inputs/two-mlp-blocks.mlir" 2>&1 | FileCheck %s --check-prefix=NOCE
// RUN: sed 's/"tokens"/"ids"/' %S/Inputs/distill-student.mlir | not dsc-opt --dsc-distill="teacher=%S/Inputs/distill-teacher.mlir" 2>&1 | FileCheck %s --check-prefix=INPUTS
// RUN: sed 's/buffer @"h.0.scale"/optimizer @"h.0.scale"/' %S/Inputs/distill-teacher.mlir > %t.teacher.mlir
// RUN: not dsc-opt %S/Inputs/distill-student.mlir --dsc-distill="teacher=%t.teacher.mlir" 2>&1 | FileCheck %s --check-prefix=ROLE

// VOCAB: distill-teacher-9-classes.mlir:{{[0-9]+}}:{{[0-9]+}}: error: --dsc-distill: the teacher's vocabulary has 9 classes, the student's 8
// VOCAB: distill-student.mlir:{{[0-9]+}}:{{[0-9]+}}: note: the student's cross-entropy
// MISSING: error: --dsc-distill: cannot read the teacher model '{{.*}}no-such-teacher.mlir'
// NOTEACHER: error: --dsc-distill: needs teacher=<the teacher's model.mlir>
// TEMP: error: --dsc-distill: temperature must be positive and finite, got 0
// INPUTS: distill-teacher.mlir:{{[0-9]+}}:{{[0-9]+}}: error: --dsc-distill: the teacher reads input 'tokens', which the student's graph @forward does not have
// ROLE: error: --dsc-distill: the teacher's forward reads a state of role 'optimizer'
// NOCE: two-mlp-blocks.mlir:{{[0-9]+}}:{{[0-9]+}}: error: --dsc-distill: the teacher's graph @forward has 0 dsc.cross_entropy ops; its logits are the input of exactly one

// A student without a cross-entropy has no logits to distill into.
dsc.state parameter @w : tensor<2x3x8xf32>
// expected-error @+1 {{the student's graph @forward has 0 dsc.cross_entropy ops}}
func.func @forward(%tokens: tensor<2x3xi64> {dsc.input = "tokens"},
                   %targets: tensor<2x3xi64> {dsc.input = "targets"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<2x3x8xf32>
  %l = dsc.reduce_sum %w, dims = [0, 1, 2] : tensor<2x3x8xf32>
  return %l : tensor<f32>
}

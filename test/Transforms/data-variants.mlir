// RUN: dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-variants="ltd-min=2 ltd-max=8 ltd-require-steps=6 ltd-seq-per-step=2 output=%t.ltd.json" | FileCheck %s --check-prefix=LTD
// RUN: FileCheck %s --check-prefix=LTDJSON < %t.ltd.json
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-variants="curriculum-schedule=fixed_linear curriculum-min=2 curriculum-max=8 curriculum-total-steps=6 curriculum-difficulty-step=2 budget=0.3 output=%t.cl.json" | FileCheck %s --check-prefix=CL
// RUN: FileCheck %s --check-prefix=CLJSON < %t.cl.json
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-variants="kd-stop-step=3 output=%t.kd.json" | FileCheck %s --check-prefix=KD
// RUN: FileCheck %s --check-prefix=KDJSON < %t.kd.json
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-variants="ltd-min=2 ltd-max=8 ltd-require-steps=6 ltd-seq-per-step=2 kd-stop-step=3 output=%t.both.json" | FileCheck %s --check-prefix=BOTH
// RUN: FileCheck %s --check-prefix=BOTHJSON < %t.both.json
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-variants > %t.none
// RUN: dsc-opt %S/Inputs/three-blocks.mlir > %t.plain
// RUN: diff %t.plain %t.none

// Random-LTD 2 -> 8 kept in steps of 2 over 6 steps (DeepSpeed's
// fixed_linear: 2, 2, 4, 4, 6, 6, 8): every length is its own bucket
// within 2%, and the middle block's count goes to dsc-run's counter. The
// graph itself is unchanged.
// LTD: module attributes {dsc.data_schedule = "ltd_min=2\0Altd_max=8\0Altd_require_steps=6\0Altd_seq_per_step=2\0Altd_total_layers=3\0Altd_layers=1\0Altd_seed=0\0Altd_buckets=2,4,6,8\0A"}
// LTD: dsc.causal_mask %{{.*}} : tensor<2x8x8xf32>
// LTD-NOT: dsc.random_ltd_indices
// The full-length step first, then the ramp's variants with their FLOPs
// (one block of three at 2, 4, 6 of 8 tokens: the products shrink).
// LTDJSON: "full_length": 8
// LTDJSON: "flops": 14336,
// LTDJSON-NEXT: "kept": 8,
// LTDJSON-NEXT: "ramp_steps": 1,
// LTDJSON-NEXT: "seqlen": 8
// LTDJSON: "flops": 10880,
// LTDJSON-NEXT: "kept": 2,
// LTDJSON-NEXT: "ramp_steps": 2,
// LTDJSON: "kept": 4,
// LTDJSON: "kept": 6,

// Curriculum 2 -> 8 in steps of 2 over 6 steps (DeepSpeed's fixed_linear:
// 2, 4, 4, 6, 6, 8, then 8) with a budget of 30%: two buckets, 4 and 8
// (2 rounds up to 4, 6 to 8), where the lengths would need four.
// CL: curriculum_schedule=fixed_linear\0Acurriculum_min=2\0Acurriculum_max=8\0Acurriculum_total_steps=6\0Acurriculum_difficulty_step=2\0Acurriculum_root_degree=1.00000000000000000e+00\0Aseqlen_buckets=4,8\0A
// CLJSON: "seqlen_overhead": 0.2058
// CLJSON: "flops": 14336,
// CLJSON-NEXT: "kept": 8,
// CLJSON-NEXT: "ramp_steps": 4,
// CLJSON-NEXT: "seqlen": 8
// CLJSON: "flops": 5632,
// CLJSON-NEXT: "kept": 4,
// CLJSON-NEXT: "ramp_steps": 3,
// CLJSON-NEXT: "seqlen": 4

// Staged KD alone (the teacher until step 3): two full-length variants,
// with the teacher (steps 1-3) and without it (step 4 on).
// KD: module attributes {dsc.data_schedule = "kd_stop_step=3\0A"}
// KDJSON: "kept": 8,
// KDJSON-NEXT: "ramp_steps": 3,
// KDJSON-NEXT: "seqlen": 8,
// KDJSON-NEXT: "teacher": true
// KDJSON: "kept": 8,
// KDJSON-NEXT: "ramp_steps": 1,
// KDJSON-NEXT: "seqlen": 8,
// KDJSON-NEXT: "teacher": false
// KDJSON-NOT: "teacher"

// With random-LTD (kept 2, 2, 4, 4, 6, 6, 8): a step runs its kept length
// with the teacher up to step 3 and without it after, so kept 4 comes in
// both kinds (steps 3 and 4) and the full-length step with the teacher,
// variant 0, is in no step of the ramp.
// BOTH: ltd_buckets=2,4,6,8\0Akd_stop_step=3\0A"
// BOTHJSON: "kept": 8,
// BOTHJSON-NEXT: "ramp_steps": 0,
// BOTHJSON-NEXT: "seqlen": 8,
// BOTHJSON-NEXT: "teacher": true
// BOTHJSON: "kept": 2,
// BOTHJSON-NEXT: "ramp_steps": 2,
// BOTHJSON-NEXT: "seqlen": 8,
// BOTHJSON-NEXT: "teacher": true
// BOTHJSON: "kept": 4,
// BOTHJSON-NEXT: "ramp_steps": 1,
// BOTHJSON-NEXT: "seqlen": 8,
// BOTHJSON-NEXT: "teacher": true
// BOTHJSON: "kept": 4,
// BOTHJSON-NEXT: "ramp_steps": 1,
// BOTHJSON-NEXT: "seqlen": 8,
// BOTHJSON-NEXT: "teacher": false
// BOTHJSON: "kept": 6,
// BOTHJSON-NEXT: "ramp_steps": 2,
// BOTHJSON-NEXT: "seqlen": 8,
// BOTHJSON-NEXT: "teacher": false
// BOTHJSON: "kept": 8,
// BOTHJSON-NEXT: "ramp_steps": 1,
// BOTHJSON-NEXT: "seqlen": 8,
// BOTHJSON-NEXT: "teacher": false

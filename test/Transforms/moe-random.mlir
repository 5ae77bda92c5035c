// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 use-rts=true capacity-factor=0.5 min-capacity=1" | FileCheck %s --check-prefix=RTS
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 noisy-gate-policy=rsample" | FileCheck %s --check-prefix=RSAMPLE
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 top-k=3 noisy-gate-policy=jitter" | FileCheck %s --check-prefix=JITTER
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 top-k=2" | FileCheck %s --check-prefix=SECOND
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 top-k=2 top2-2nd-expert-sampling=false" | FileCheck %s --check-prefix=NONE
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 use-rts=true drop-tokens=false" | FileCheck %s --check-prefix=NONE
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 top-k=3" | FileCheck %s --check-prefix=NONE
// RUN: dsc-opt %S/Inputs/mlp-100-tokens.mlir --dsc-moe="experts=4 use-rts=true" | FileCheck %s --check-prefix=SAMPLES
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 use-rts=true noisy-gate-policy=jitter capacity-factor=0.5" --dsc-autodiff | FileCheck %s --check-prefix=AUTODIFF
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --moe-experts=4 --moe-noisy-gate-policy=jitter --precision=bf16 | FileCheck %s --check-prefix=BF16
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --moe-experts=4 --moe-use-rts --moe-noisy-gate-policy=rsample --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=FLAGS
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --moe-experts=4 --moe-use-rts --moe-noisy-gate-policy=rsample --step=eval | FileCheck %s --check-prefix=EVAL
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --moe-experts=4 --moe-top-k=2 --moe-top2-2nd-expert-sampling=false --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=FLAGS2

// --dsc-moe's random gating (Passes.td): each replaced block i draws with
// dsc.random_uniform at sites 4i + 0 (jitter), 1 (rsample), 2 (random token
// selection) and 3 (second expert), over the micro-batch's 2 samples
// (the graph input's leading dimension). The model is
// Inputs/two-mlp-blocks.mlir (8 tokens of width 4, three blocks).

// Random token selection (top-1): the priority of a token's route is the
// uniform at its token and expert; moe_slots keeps each expert's C highest.
// The step key moves to the start of the body, where every block reads it.
// RTS-LABEL: func.func @forward
// RTS-NEXT: %[[KEY:.*]] = dsc.step_key : tensor<4xi64>
// RTS: %[[P:.*]] = dsc.softmax
// RTS: %{{.*}}, %[[FIRST:.*]] = dsc.top_k %[[P]], k = 1, dim = 1
// RTS: %[[U:.*]] = dsc.random_uniform %[[KEY]], low = 0.000000e+00, high = 1.000000e+00, seed = 2, samples = 2 : tensor<8x4xf32>
// RTS: %[[PRI:.*]] = dsc.gather %[[U]], %[[FIRST]], dim = 1 : tensor<8x4xf32>, tensor<8x1xi64>
// RTS: dsc.moe_slots %[[FIRST]] priority %[[PRI]], capacity = 1 : tensor<8x1xi64>, tensor<8x1xf32>
// RTS: dsc.random_uniform %[[KEY]], {{.*}} seed = 6, samples = 2 : tensor<8x4xf32>
// RTS: dsc.random_uniform %[[KEY]], {{.*}} seed = 10, samples = 2 : tensor<8x4xf32>
// RTS-NOT: dsc.random_uniform

// RSample (top-1): the choice is the argmax of logits + Gumbel noise
// -log(-log(u)) while the step trains (key[3] != 0), of the probabilities
// otherwise; the gate value is the noiseless probability.
// RSAMPLE-LABEL: func.func @forward
// RSAMPLE-NEXT: %[[KEY:.*]] = dsc.step_key
// RSAMPLE: %[[LOGITS:.*]] = dsc.linear
// RSAMPLE: %[[P:.*]] = dsc.softmax %[[LOGITS]]
// RSAMPLE: %[[U:.*]] = dsc.random_uniform %[[KEY]], low = 0.000000e+00, high = 1.000000e+00, seed = 1, samples = 2 : tensor<8x4xf32>
// RSAMPLE: %[[L1:.*]] = dsc.log %[[U]]
// RSAMPLE: %[[N1:.*]] = dsc.neg %[[L1]]
// RSAMPLE: %[[L2:.*]] = dsc.log %[[N1]]
// RSAMPLE: %[[G:.*]] = dsc.neg %[[L2]]
// RSAMPLE: %[[NOISY:.*]] = dsc.add %[[LOGITS]], %[[G]]
// RSAMPLE: %[[FLAG:.*]] = dsc.slice %[[KEY]], dim = 0, start = 3, end = 4, step = 1
// RSAMPLE: %[[FLAG0:.*]] = dsc.reshape %[[FLAG]] : tensor<1xi64> -> tensor<i64>
// RSAMPLE: %[[TRAINING:.*]] = dsc.compare ne, %[[FLAG0]]
// RSAMPLE: %[[SCORES:.*]] = dsc.select %[[TRAINING]], %[[NOISY]], %[[P]] : tensor<i1>, tensor<8x4xf32>, tensor<8x4xf32>
// RSAMPLE: %{{.*}}, %[[FIRST:.*]] = dsc.top_k %[[SCORES]], k = 1, dim = 1
// RSAMPLE: %[[SLOTS:.*]], %{{.*}} = dsc.moe_slots %[[FIRST]], capacity
// RSAMPLE: dsc.gather %[[P]], %[[FIRST]], dim = 1
// RSAMPLE: dsc.random_uniform %[[KEY]], {{.*}} seed = 5, samples = 2
// RSAMPLE: dsc.random_uniform %[[KEY]], {{.*}} seed = 9, samples = 2

// Jitter (any k): the gate's fp32 input times U(0.99, 1.01) while the step
// trains, times 1 otherwise; the experts read the input itself.
// JITTER-LABEL: func.func @forward
// JITTER-NEXT: %[[KEY:.*]] = dsc.step_key
// JITTER: %[[X:.*]] = dsc.reshape %{{.*}} : tensor<2x4x4xf32> -> tensor<8x4xf32>
// JITTER: %[[TRAINING:.*]] = dsc.compare ne
// JITTER: %[[U:.*]] = dsc.random_uniform %[[KEY]], low = 0.98999999999999999, high = 1.010000e+00, seed = 0, samples = 2 : tensor<8x4xf32>
// JITTER: %[[ONE:.*]] = dsc.constant dense<1.000000e+00> : tensor<f32>
// JITTER: %[[F:.*]] = dsc.select %[[TRAINING]], %[[U]], %[[ONE]]
// JITTER: %[[XJ:.*]] = dsc.mul %[[X]], %[[F]]
// JITTER: dsc.linear %[[XJ]], %{{.*}} : tensor<8x4xf32>, tensor<4x4xf32>
// JITTER: dsc.moe_dispatch %[[X]],
// JITTER: dsc.random_uniform %[[KEY]], {{.*}} seed = 4, samples = 2
// JITTER: dsc.random_uniform %[[KEY]], {{.*}} seed = 8, samples = 2
// JITTER-NOT: dsc.random_uniform

// Second-expert sampling (top-2, on by default, in training and
// evaluation): Gumbel noise on the logits, the first choice masked.
// SECOND-LABEL: func.func @forward
// SECOND-NEXT: %[[KEY:.*]] = dsc.step_key
// SECOND: %[[LOGITS:.*]] = dsc.linear
// SECOND: %[[P:.*]] = dsc.softmax %[[LOGITS]]
// SECOND: %{{.*}}, %[[FIRST:.*]] = dsc.top_k %[[P]], k = 1, dim = 1
// SECOND: %[[ISFIRST:.*]] = dsc.compare ne
// SECOND: %[[U:.*]] = dsc.random_uniform %[[KEY]], low = 0.000000e+00, high = 1.000000e+00, seed = 3, samples = 2 : tensor<8x4xf32>
// SECOND: dsc.log %[[U]]
// SECOND: dsc.neg
// SECOND: dsc.log
// SECOND: %[[G:.*]] = dsc.neg
// SECOND: %[[NOISY:.*]] = dsc.add %[[LOGITS]], %[[G]]
// SECOND-NOT: dsc.step_key
// SECOND: %[[MASKED:.*]] = dsc.select %[[ISFIRST]], %{{.*}}, %[[NOISY]]
// SECOND: %{{.*}}, %[[SECOND:.*]] = dsc.top_k %[[MASKED]], k = 1, dim = 1
// SECOND: dsc.concat(%[[FIRST]], %[[SECOND]]), dim = 1
// SECOND: dsc.random_uniform %[[KEY]], {{.*}} seed = 7, samples = 2
// SECOND: dsc.random_uniform %[[KEY]], {{.*}} seed = 11, samples = 2

// Nothing random: no draw and no step key (random token selection without
// dropping cannot change anything; top-k for k >= 3 draws nothing).
// NONE-NOT: dsc.step_key
// NONE-NOT: dsc.random_uniform
// NONE: dsc.moe_slots

// 100 tokens in 100 samples of one token.
// SAMPLES: dsc.random_uniform %{{.*}}, low = 0.000000e+00, high = 1.000000e+00, seed = 2, samples = 100 : tensor<100x4xf32>

// Autodiff takes the draws as constants: each is drawn once, in the
// forward, none in the backward; the gates still get their gradients.
// AUTODIFF: dsc.gradient_of = @h.0.mlp.gate.weight
// AUTODIFF-COUNT-6: dsc.random_uniform
// AUTODIFF-NOT: dsc.random_uniform
// AUTODIFF: return

// bf16: the gate stays fp32, and so do the jitter factors.
// BF16: %[[U:.*]] = dsc.random_uniform %{{.*}}, low = 0.98999999999999999, high = 1.010000e+00, seed = 0, samples = 2 : tensor<8x4xf32>
// BF16: %[[F:.*]] = dsc.select %{{.*}}, %[[U]], %{{.*}} : tensor<i1>, tensor<8x4xf32>, tensor<f32>
// BF16: %[[XJ:.*]] = dsc.mul %{{.*}}, %[[F]] : tensor<8x4xf32>, tensor<8x4xf32>
// BF16: dsc.linear %[[XJ]], %{{.*}} : tensor<8x4xf32>, tensor<4x4xf32>

// The flags reach the pass; an evaluation step has no gate noise, but
// random token selection stays (DeepSpeed's use_rts holds in eval too).
// FLAGS: dsc-moe{{.*}}noisy-gate-policy=rsample{{.*}}use-rts=true
// EVAL-NOT: seed = 1, samples
// EVAL: dsc.random_uniform %{{.*}}, seed = 2, samples = 2
// EVAL-NOT: seed = 1, samples
// FLAGS2: dsc-moe{{.*}}top2-2nd-expert-sampling=false

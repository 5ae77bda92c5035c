// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 top-k=2 top2-2nd-expert-sampling=false" | FileCheck %s --check-prefix=TOP2
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 capacity-factor=0.5 min-capacity=1" | FileCheck %s --check-prefix=TOP1
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 top-k=3 every=2 init=random seed=7" | FileCheck %s --check-prefix=TOPK
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts-per-layer=2,4,8 drop-tokens=false" | FileCheck %s --check-prefix=PYRAMID
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=128" | FileCheck %s --check-prefix=E128
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 top-k=2" --dsc-autodiff --dsc-optimizer | FileCheck %s --check-prefix=TRAIN

// This file holds only checks; the model (two GELU/ReLU MLP blocks and a
// SwiGLU block) is Inputs/two-mlp-blocks.mlir.

// Top-2: the gate and the stacked experts replace each dense block's
// states, in the block's order; upcycled experts repeat the dense tensors.
// TOP2-NOT: dsc.state parameter @"h.0.mlp.c_fc.weight"
// TOP2: dsc.state parameter @h.0.mlp.gate.weight {dsc.keep_fp32, init_seed = 0 : i64, init_uniform = 5.000000e-01 : f64} : tensor<4x4xf32>
// TOP2-NEXT: dsc.state parameter @h.0.mlp.experts.c_fc.weight {init_from = "h.0.mlp.c_fc.weight"} : tensor<4x16x4xf32>
// TOP2-NEXT: dsc.state parameter @h.0.mlp.experts.c_fc.bias {init_from = "h.0.mlp.c_fc.bias"} : tensor<4x16xf32>
// TOP2-NEXT: dsc.state parameter @h.0.mlp.experts.c_proj.weight {init_from = "h.0.mlp.c_proj.weight"} : tensor<4x4x16xf32>
// TOP2-NEXT: dsc.state parameter @h.0.mlp.experts.c_proj.bias {init_from = "h.0.mlp.c_proj.bias"} : tensor<4x4xf32>
// TOP2: dsc.state parameter @h.2.mlp.gate.weight
// TOP2-NEXT: dsc.state parameter @h.2.mlp.experts.gate_proj.weight {init_from = "h.2.mlp.gate_proj.weight"} : tensor<4x16x4xf32>
// TOP2-NEXT: dsc.state parameter @h.2.mlp.experts.up_proj.weight {init_from = "h.2.mlp.up_proj.weight"} : tensor<4x16x4xf32>
// TOP2-NEXT: dsc.state parameter @h.2.mlp.experts.down_proj.weight {init_from = "h.2.mlp.down_proj.weight"} : tensor<4x4x16xf32>
// TOP2-LABEL: func.func @forward
// Gate in fp32: softmax of x @ gate^T; the first choice is the most
// probable expert, the second the largest logit once the first is -inf.
// TOP2: %[[X:.*]] = dsc.reshape %{{.*}} : tensor<2x4x4xf32> -> tensor<8x4xf32>
// TOP2: %[[LOGITS:.*]] = dsc.linear %[[X]], %{{.*}} : tensor<8x4xf32>, tensor<4x4xf32>
// TOP2: %[[P:.*]] = dsc.softmax %[[LOGITS]], dim = 1
// TOP2: %{{.*}}, %[[FIRST:.*]] = dsc.top_k %[[P]], k = 1, dim = 1
// TOP2: %[[ISFIRST:.*]] = dsc.compare ne
// TOP2: %[[MASKED:.*]] = dsc.select %[[ISFIRST]], %{{.*}}, %[[LOGITS]]
// TOP2: %{{.*}}, %[[SECOND:.*]] = dsc.top_k %[[MASKED]], k = 1, dim = 1
// TOP2: %[[CHOICES:.*]] = dsc.concat(%[[FIRST]], %[[SECOND]]), dim = 1
// Capacity ceil(8 / 4 * 2 * 1.0) = 4.
// TOP2: %[[SLOTS:.*]], %{{.*}} = dsc.moe_slots %[[CHOICES]], capacity = 4 : tensor<8x2xi64> -> tensor<8x2xi64>, tensor<4xi64>
// Gates: the chosen probabilities, zero where dropped, renormalised.
// TOP2: %[[G:.*]] = dsc.gather %[[P]], %[[CHOICES]], dim = 1
// TOP2: %[[KEPT:.*]] = dsc.compare ge, %[[SLOTS]]
// TOP2: %[[GK:.*]] = dsc.select %[[KEPT]], %[[G]]
// TOP2: %[[SUM:.*]] = dsc.reduce_sum %[[GK]], dims = [1] keep_dims
// TOP2: %[[DENOM:.*]] = dsc.maximum %[[SUM]]
// TOP2: %[[GATES:.*]] = dsc.div %[[GK]], %[[DENOM]]
// l_aux = mean(me * ce) * E * E, ce over the first choices.
// TOP2: %[[ME:.*]] = dsc.reduce_mean %[[P]], dims = [0]
// TOP2: dsc.one_hot %[[FIRST]] : tensor<8x1xi64> -> tensor<8x1x4xf32>
// TOP2: %[[AUX0:.*]] = dsc.mul
// The experts: one batched matmul per projection, on [E, C, M].
// TOP2: %[[D:.*]] = dsc.moe_dispatch %[[X]], %[[SLOTS]] : tensor<8x4xf32>, tensor<8x2xi64> -> tensor<4x4x4xf32>
// TOP2: %[[W1:.*]] = dsc.load @h.0.mlp.experts.c_fc.weight
// TOP2: %[[H:.*]] = dsc.matmul %[[D]], %[[W1]] transpose_rhs : tensor<4x4x4xf32>, tensor<4x16x4xf32>
// TOP2: %[[B1:.*]] = dsc.reshape %{{.*}} : tensor<4x16xf32> -> tensor<4x1x16xf32>
// TOP2: %[[HB:.*]] = dsc.add %[[H]], %[[B1]]
// TOP2: %[[A:.*]] = dsc.gelu tanh %[[HB]] : tensor<4x4x16xf32>
// TOP2: %[[Y:.*]] = dsc.matmul %[[A]], %{{.*}} transpose_rhs : tensor<4x4x16xf32>, tensor<4x4x16xf32>
// TOP2: %[[YB:.*]] = dsc.add %[[Y]]
// TOP2: %[[OUT:.*]] = dsc.moe_combine %[[YB]], %[[SLOTS]], %[[GATES]] : tensor<4x4x4xf32>, tensor<8x2xi64>, tensor<8x2xf32> -> tensor<8x4xf32>
// TOP2: dsc.add %[[X]], %[[OUT]]
// The ReLU block's reshapes around the activation vanish on [E, C, H].
// TOP2: dsc.relu %{{.*}} : tensor<4x4x16xf32>
// The SwiGLU block: two first projections, silu(gate) * up, down.
// TOP2: %[[D2:.*]] = dsc.moe_dispatch
// TOP2: %[[HG:.*]] = dsc.matmul %[[D2]], %{{.*}} transpose_rhs
// TOP2: %[[HU:.*]] = dsc.matmul %[[D2]], %{{.*}} transpose_rhs
// TOP2: %[[S:.*]] = dsc.silu %[[HG]] : tensor<4x4x16xf32>
// TOP2: %[[M:.*]] = dsc.mul %[[S]], %[[HU]] : tensor<4x4x16xf32>, tensor<4x4x16xf32>
// TOP2: dsc.matmul %[[M]], %{{.*}} transpose_rhs : tensor<4x4x16xf32>, tensor<4x4x16xf32>
// TOP2-NOT: dsc.linear %{{.*}} : tensor<8x16xf32>
// The loss gains 0.01 times the sum of the three l_aux.
// TOP2: %[[COEF:.*]] = dsc.constant dense<0.00999999977> : tensor<f32>
// TOP2: %[[TERM:.*]] = dsc.mul %[[COEF]], %{{.*}} : tensor<f32>, tensor<f32>
// TOP2: %[[LOSS:.*]] = dsc.add %{{.*}}, %[[TERM]] : tensor<f32>, tensor<f32>
// TOP2: return %[[LOSS]]

// Top-1: the gate value is not renormalised; l_aux = sum(me * ce) * E;
// capacity max(1, ceil(8 / 4 * 0.5)) = 1.
// TOP1: %{{.*}}, %[[FIRST:.*]] = dsc.top_k %{{.*}}, k = 1, dim = 1
// TOP1-NOT: dsc.top_k
// TOP1: dsc.moe_slots %[[FIRST]], capacity = 1 : tensor<8x1xi64> -> tensor<8x1xi64>, tensor<4xi64>
// TOP1-NOT: dsc.div
// TOP1: %[[PROD:.*]] = dsc.mul %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>
// TOP1: dsc.reduce_sum %[[PROD]], dims = [0] : tensor<4xf32>
// TOP1: dsc.moe_dispatch %{{.*}} -> tensor<4x1x4xf32>

// Top-3 on every second block (0 and 2): each expert keeps its most
// probable routes (the probabilities are the priority); capacity
// ceil(8 / 4 * 3) = 6; l_aux divides by k. Random experts draw from
// U(-1/sqrt(in), 1/sqrt(in)), biases with their weight's fan-in.
// TOPK: dsc.state parameter @h.0.mlp.experts.c_fc.weight {init_seed = 7 : i64, init_uniform = 5.000000e-01 : f64} : tensor<4x16x4xf32>
// TOPK-NEXT: dsc.state parameter @h.0.mlp.experts.c_fc.bias {init_seed = 7 : i64, init_uniform = 5.000000e-01 : f64} : tensor<4x16xf32>
// TOPK-NEXT: dsc.state parameter @h.0.mlp.experts.c_proj.weight {init_seed = 7 : i64, init_uniform = 2.500000e-01 : f64} : tensor<4x4x16xf32>
// TOPK: dsc.state parameter @h.1.mlp.c_fc.weight : tensor<16x4xf32>
// TOPK: dsc.state parameter @h.2.mlp.gate.weight
// TOPK: %[[V:.*]], %[[I:.*]] = dsc.top_k %{{.*}}, k = 3, dim = 1
// TOPK: dsc.moe_slots %[[I]] priority %[[V]], capacity = 6 : tensor<8x3xi64>, tensor<8x3xf32>
// TOPK: dsc.one_hot %[[I]] : tensor<8x3xi64> -> tensor<8x3x4xf32>
// TOPK: %[[K:.*]] = dsc.constant dense<3.000000e+00>
// TOPK: dsc.div %{{.*}}, %[[K]]
// TOPK: dsc.linear %{{.*}} : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16xf32>
// TOPK: dsc.top_k %{{.*}}, k = 3, dim = 1

// PR-MoE's pyramid, dropless: 2, 4 and 8 experts, capacity = all 8 tokens.
// PYRAMID: dsc.state parameter @h.0.mlp.gate.weight {{.*}} : tensor<2x4xf32>
// PYRAMID: dsc.state parameter @h.1.mlp.gate.weight {{.*}} : tensor<4x4xf32>
// PYRAMID: dsc.state parameter @h.2.mlp.gate.weight {{.*}} : tensor<8x4xf32>
// PYRAMID: dsc.moe_slots %{{.*}}, capacity = 8 : tensor<8x1xi64> -> tensor<8x1xi64>, tensor<2xi64>
// PYRAMID: dsc.moe_slots %{{.*}}, capacity = 8 : tensor<8x1xi64> -> tensor<8x1xi64>, tensor<4xi64>
// PYRAMID: dsc.moe_slots %{{.*}}, capacity = 8 : tensor<8x1xi64> -> tensor<8x1xi64>, tensor<8xi64>

// 128 experts: the same ops, wider tensors (min-capacity 4 applies).
// E128: dsc.moe_slots %{{.*}}, capacity = 4 : tensor<8x1xi64> -> tensor<8x1xi64>, tensor<128xi64>
// E128: dsc.moe_dispatch %{{.*}} -> tensor<128x4x4xf32>

// Autodiff runs through the rewrite: routing has no backward; the gate
// learns through the gathered probabilities and the aux loss.
// TRAIN: dsc.state optimizer @h.0.mlp.gate.weight.exp_avg : tensor<4x4xf32>
// TRAIN: dsc.state optimizer @h.0.mlp.experts.c_fc.weight.exp_avg : tensor<4x16x4xf32>
// TRAIN-LABEL: func.func @forward
// TRAIN-COUNT-3: dsc.moe_slots
// TRAIN-NOT: dsc.moe_slots
// TRAIN: dsc.moe_route_dot
// TRAIN: dsc.store {{.*}}@h.0.mlp.gate.weight

// The users' spelling: dsc-opt's --moe-* flags feed --dsc-moe in the
// training pipeline (after data parallelism: capacity counts the tokens of
// a rank's micro-batch, the exported batch).
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --world-size=2 --moe-experts=4 --moe-top-k=2 --moe-every=2 --moe-aux-loss-coef=0.5 | FileCheck %s --check-prefix=FLAGS
// FLAGS-COUNT-2: dsc.moe_slots %{{.*}}, capacity = 4 : tensor<8x2xi64> -> tensor<8x2xi64>, tensor<4xi64>
// FLAGS-NOT: dsc.moe_slots
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --moe-experts-per-layer=2,0 --moe-capacity-factor=0 2>&1 | FileCheck %s --check-prefix=BADFLAGS
// BADFLAGS-DAG: --moe-experts-per-layer: must be in [1, 1048576], got 0
// BADFLAGS-DAG: --moe-capacity-factor: must be > 0, got 0

// Capacity in float32, as DeepSpeed's: 100 tokens, 4 experts, top-2 at
// 1.1 is ceil(25 * 2.2f) = 55 (float64 would give 56); top-1 at 1.1 is
// ceil(27.5) = 28; top-3 at 1.1 is ceil(25 * 3.3f) = 83.
// RUN: dsc-opt %S/Inputs/mlp-100-tokens.mlir --dsc-moe="experts=4 top-k=2 capacity-factor=1.1" | FileCheck %s --check-prefix=CAP2
// RUN: dsc-opt %S/Inputs/mlp-100-tokens.mlir --dsc-moe="experts=4 capacity-factor=1.1" | FileCheck %s --check-prefix=CAP1
// RUN: dsc-opt %S/Inputs/mlp-100-tokens.mlir --dsc-moe="experts=4 top-k=3 capacity-factor=1.1" | FileCheck %s --check-prefix=CAP3
// The states of a block whose linears are mlp.fc and mlp.proj: mlp.*.
// CAP1: dsc.state parameter @mlp.gate.weight
// CAP1: dsc.state parameter @mlp.experts.fc.weight {init_from = "mlp.fc.weight"} : tensor<4x8x4xf32>
// CAP2: dsc.moe_slots %{{.*}}, capacity = 55 :
// CAP1: dsc.moe_slots %{{.*}}, capacity = 28 :
// CAP3: dsc.moe_slots %{{.*}}, capacity = 83 :

// bf16 training: the gate stays fp32 (DeepSpeed's `wg.float()` on
// `input.float()`), with no master copy; the experts are 16-bit with fp32
// masters that inherit their fill rule; routing weights meet the experts'
// outputs in bf16, as DeepSpeed's `combine_weights.type_as(input)`.
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --moe-experts=4 --moe-top-k=2 --precision=bf16 | FileCheck %s --check-prefix=BF16
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 capacity-factor=0.5 min-capacity=1" | FileCheck %s --check-prefix=METRICS
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 every=3 residual=1" | FileCheck %s --check-prefix=RESIDUAL
// BF16: dsc.state parameter @h.0.mlp.gate.weight {dsc.keep_fp32, {{.*}}} : tensor<4x4xf32>
// BF16-NOT: @h.0.mlp.gate.weight.master
// BF16: dsc.state parameter @h.0.mlp.experts.c_fc.weight {init_from = "h.0.mlp.c_fc.weight"} : tensor<4x16x4xbf16>
// BF16-NEXT: dsc.state master @h.0.mlp.experts.c_fc.weight.master {init_from = "h.0.mlp.c_fc.weight"} : tensor<4x16x4xf32>
// BF16-LABEL: func.func @forward
// BF16: %[[X:.*]] = dsc.reshape %{{.*}} : tensor<2x4x4xbf16> -> tensor<8x4xbf16>
// BF16: %[[G:.*]] = dsc.load @h.0.mlp.gate.weight : tensor<4x4xf32>
// BF16: %[[XF:.*]] = dsc.convert %[[X]] : tensor<8x4xbf16> to tensor<8x4xf32>
// BF16: %[[L:.*]] = dsc.linear %[[XF]], %[[G]] : tensor<8x4xf32>, tensor<4x4xf32>
// BF16: dsc.softmax %[[L]], dim = 1 : tensor<8x4xf32>
// BF16: %[[W:.*]] = dsc.convert %{{.*}} : tensor<8x2xf32> to tensor<8x2xbf16>
// BF16: dsc.moe_combine %{{.*}}, %{{.*}}, %[[W]] : tensor<4x4x4xbf16>, tensor<8x2xi64>, tensor<8x2xbf16> -> tensor<8x4xbf16>

// The step's metrics, outputs after the loss: each layer's routes per
// expert before dropping (the counts of dsc.moe_slots, DeepSpeed's
// exp_counts), named after the layer's module path, and the routes the
// capacity dropped (slot -1) summed over the layers.
// METRICS: func.func @forward({{.*}}) -> (tensor<f32> {dsc.output = "loss"}, tensor<f32> {dsc.output = "aux_loss"}, tensor<4xi64> {dsc.output = "moe.exp_counts.h.0.mlp"}, tensor<4xi64> {dsc.output = "moe.exp_counts.h.1.mlp"}, tensor<4xi64> {dsc.output = "moe.exp_counts.h.2.mlp"}, tensor<f32> {dsc.output = "moe.dropped"})
// METRICS: %[[S0:.*]], %[[C0:.*]] = dsc.moe_slots
// METRICS: %[[NEG0:.*]] = dsc.compare lt, %[[S0]], %{{.*}} : tensor<8x1xi64>, tensor<i64>
// METRICS: %[[ONES0:.*]] = dsc.convert %[[NEG0]] : tensor<8x1xi1> to tensor<8x1xf32>
// METRICS: %[[D0:.*]] = dsc.reduce_sum %[[ONES0]], dims = [0, 1]
// METRICS: %[[S1:.*]], %[[C1:.*]] = dsc.moe_slots
// METRICS: %[[D1:.*]] = dsc.reduce_sum %{{.*}}, dims = [0, 1]
// METRICS: %[[T1:.*]] = dsc.add %[[D0]], %[[D1]]
// METRICS: %[[S2:.*]], %[[C2:.*]] = dsc.moe_slots
// METRICS: %[[D2:.*]] = dsc.reduce_sum %{{.*}}, dims = [0, 1]
// METRICS: %[[T2:.*]] = dsc.add %[[T1]], %[[D2]]
// METRICS: return %{{.*}}, %[[C0]], %[[C1]], %[[C2]], %[[T2]] :

// Residual MoE (PR-MoE): the dense block stays beside the experts, its
// parameters renamed `P.mlp.*` (filled from the dense ones), and the two
// outputs are mixed per token by softmax(x · P.coefficient): experts times
// the first weight plus the dense block times the second.
// RESIDUAL-NOT: dsc.state parameter @h.0.mlp.c_fc.weight :
// RESIDUAL: dsc.state parameter @h.0.mlp.experts.c_proj.bias {init_from = "h.0.mlp.c_proj.bias"}
// RESIDUAL-NEXT: dsc.state parameter @h.0.mlp.mlp.c_fc.weight {init_from = "h.0.mlp.c_fc.weight"} : tensor<16x4xf32>
// RESIDUAL-NEXT: dsc.state parameter @h.0.mlp.mlp.c_fc.bias {init_from = "h.0.mlp.c_fc.bias"} : tensor<16xf32>
// RESIDUAL-NEXT: dsc.state parameter @h.0.mlp.mlp.c_proj.weight {init_from = "h.0.mlp.c_proj.weight"} : tensor<4x16xf32>
// RESIDUAL-NEXT: dsc.state parameter @h.0.mlp.mlp.c_proj.bias {init_from = "h.0.mlp.c_proj.bias"} : tensor<4xf32>
// RESIDUAL-NEXT: dsc.state parameter @h.0.mlp.coefficient.weight {init_seed = 0 : i64, init_uniform = 5.000000e-01 : f64} : tensor<2x4xf32>
// RESIDUAL-NEXT: dsc.state parameter @h.0.mlp.coefficient.bias {init_seed = 0 : i64, init_uniform = 5.000000e-01 : f64} : tensor<2xf32>
// RESIDUAL-NOT: dsc.state parameter @h.0.mlp.c_fc.weight :
// RESIDUAL-LABEL: func.func @forward
// RESIDUAL: %[[X:.*]] = dsc.reshape %arg0
// RESIDUAL: %[[W1:.*]] = dsc.load @h.0.mlp.mlp.c_fc.weight
// RESIDUAL: %[[B1:.*]] = dsc.load @h.0.mlp.mlp.c_fc.bias
// RESIDUAL: %[[H:.*]] = dsc.linear %[[X]], %[[W1]], %[[B1]]
// RESIDUAL: %[[EXPERTS:.*]] = dsc.moe_combine
// RESIDUAL: %[[DENSE:.*]] = dsc.linear %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<4x16xf32>, tensor<4xf32>
// RESIDUAL: %[[CW:.*]] = dsc.load @h.0.mlp.coefficient.weight
// RESIDUAL: %[[CB:.*]] = dsc.load @h.0.mlp.coefficient.bias
// RESIDUAL: %[[LOGITS:.*]] = dsc.linear %[[X]], %[[CW]], %[[CB]] : tensor<8x4xf32>, tensor<2x4xf32>, tensor<2xf32>
// RESIDUAL: %[[COEF:.*]] = dsc.softmax %[[LOGITS]], dim = 1 : tensor<8x2xf32>
// RESIDUAL: %[[C0:.*]] = dsc.slice %[[COEF]], dim = 1, start = 0, end = 1
// RESIDUAL: %[[E:.*]] = dsc.mul %[[EXPERTS]], %[[C0]] : tensor<8x4xf32>, tensor<8x1xf32>
// RESIDUAL: %[[C1:.*]] = dsc.slice %[[COEF]], dim = 1, start = 1, end = 2
// RESIDUAL: %[[D:.*]] = dsc.mul %[[DENSE]], %[[C1]] : tensor<8x4xf32>, tensor<8x1xf32>
// RESIDUAL: %[[MIX:.*]] = dsc.add %[[E]], %[[D]] : tensor<8x4xf32>, tensor<8x4xf32>
// RESIDUAL: dsc.add %[[X]], %[[MIX]]

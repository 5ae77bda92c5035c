// RUN: dsc-opt %s --dsc-optimizer="optimizer=adamw lr=0.1" --split-input-file | FileCheck %s --check-prefix=ADAMW
// RUN: dsc-opt %s --dsc-optimizer="optimizer=adam lr=0.1 betas=0.8,0.9 eps=1e-6 weight-decay=0.5" --split-input-file | FileCheck %s --check-prefix=ADAM
// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1 momentum=0.9" --split-input-file | FileCheck %s --check-prefix=SGD
// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1 grad-clip=1.0" --split-input-file | FileCheck %s --check-prefix=CLIP

// The gradient results of --dsc-autodiff (written here by hand) become the
// optimizer step; the function returns the loss only.

dsc.state parameter @w : tensor<4xf32>
dsc.state buffer @b : tensor<4xf32>
func.func @step(%x: tensor<4xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"},
        tensor<4xf32> {dsc.output = "grad.w", dsc.gradient_of = @w}) {
  %w = dsc.load @w : tensor<4xf32>
  %p = dsc.mul %w, %x : tensor<4xf32>, tensor<4xf32>
  %l = dsc.reduce_sum %p, dims = [0] : tensor<4xf32>
  return %l, %x : tensor<f32>, tensor<4xf32>
}

// AdamW: decoupled decay p * (1 - lr * 0.01), moments named after the
// parameter, bias corrections from the step count, stores last.
// ADAMW: dsc.state parameter @w
// ADAMW-NEXT: dsc.state optimizer @w.exp_avg : tensor<4xf32>
// ADAMW-NEXT: dsc.state optimizer @w.exp_avg_sq : tensor<4xf32>
// ADAMW-NEXT: dsc.state optimizer @optimizer.step : tensor<f32>
// ADAMW-LABEL: func.func @step
// ADAMW-SAME: -> (tensor<f32> {dsc.output = "loss"}, tensor<f32> {dsc.output = "lr"})
// ADAMW: %[[STEP:.*]] = dsc.load @optimizer.step
// ADAMW: %[[T:.*]] = dsc.add %[[STEP]]
// ADAMW: dsc.pow %{{.*}}, %[[T]]
// ADAMW: %[[W:.*]] = dsc.load @w :
// ADAMW: %[[DECAY:.*]] = dsc.constant dense<9.990000e-01>
// ADAMW: %[[WD:.*]] = dsc.mul %[[W]], %[[DECAY]]
// ADAMW: dsc.load @w.exp_avg
// ADAMW: dsc.load @w.exp_avg_sq
// ADAMW: %[[NEW:.*]] = dsc.sub %[[WD]], %{{.*}}
// ADAMW: dsc.store %{{.*}} to @w.exp_avg
// ADAMW: dsc.store %{{.*}} to @w.exp_avg_sq
// ADAMW: dsc.store %[[NEW]] to @w
// ADAMW: dsc.store %[[T]] to @optimizer.step
// ADAMW: return %{{.*}} : tensor<f32>

// Adam: L2 weight decay in the gradient, the given betas and eps.
// ADAM-LABEL: func.func @step
// ADAM: dsc.load @optimizer.step
// ADAM: dsc.pow
// ADAM: %[[W:.*]] = dsc.load @w :
// ADAM: %[[L2:.*]] = dsc.constant dense<5.000000e-01>
// ADAM: %[[P:.*]] = dsc.mul %[[W]], %[[L2]]
// ADAM: %[[G:.*]] = dsc.add %arg0, %[[P]]
// ADAM: dsc.constant dense<8.000000e-01>
// ADAM: dsc.constant dense<9.99999997E-7>
// ADAM: dsc.store %{{.*}} to @w

// SGD with momentum: buf = 0.9 * buf + g; p -= lr * buf. No Adam state.
// SGD-NOT: exp_avg
// SGD: dsc.state optimizer @w.momentum_buffer : tensor<4xf32>
// SGD: %[[N:.*]] = dsc.load @optimizer.step
// SGD: dsc.add %[[N]]
// SGD: %[[W:.*]] = dsc.load @w :
// SGD: %[[BUF:.*]] = dsc.load @w.momentum_buffer
// SGD: %[[M:.*]] = dsc.mul %[[BUF]], %{{.*}}
// SGD: %[[NB:.*]] = dsc.add %[[M]], %arg0
// SGD: %[[U:.*]] = dsc.mul %[[NB]], %{{.*}}
// SGD: %[[NEW:.*]] = dsc.sub %[[W]], %[[U]]
// SGD: dsc.store %[[NB]] to @w.momentum_buffer
// SGD: dsc.store %[[NEW]] to @w

// Clipping by the global norm: min(1 / (sqrt(sum g^2) + 1e-6), 1).
// CLIP: %[[SQ:.*]] = dsc.mul %arg0, %arg0
// CLIP: %[[SUM:.*]] = dsc.reduce_sum %[[SQ]], dims = [0]
// CLIP: %[[NORM:.*]] = dsc.sqrt %[[SUM]]
// CLIP: %[[COEF:.*]] = dsc.div
// CLIP: %[[C:.*]] = dsc.minimum %[[COEF]]
// CLIP: %[[G:.*]] = dsc.mul %arg0, %[[C]]

// -----

// A function without gradients is left alone.
// ADAMW-LABEL: func.func @eval
// ADAMW-NOT: dsc.store
dsc.state parameter @v : tensor<4xf32>
func.func @eval(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %l = dsc.reduce_sum %x, dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}

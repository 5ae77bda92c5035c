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

// AdamW: one dsc.adam_update (decoupled decay, the constant lr recorded
// for its decay factor), moments named after the parameter, the step
// count's next value as the bias corrections' t, stores last.
// ADAMW: dsc.state parameter @w
// ADAMW-NEXT: dsc.state optimizer @w.exp_avg : tensor<4xf32>
// ADAMW-NEXT: dsc.state optimizer @w.exp_avg_sq : tensor<4xf32>
// ADAMW-NEXT: dsc.state optimizer @optimizer.step : tensor<f32>
// ADAMW-LABEL: func.func @step
// ADAMW-SAME: -> (tensor<f32> {dsc.output = "loss"}, tensor<f32> {dsc.output = "lr"})
// ADAMW: %[[STEP:.*]] = dsc.load @optimizer.step
// ADAMW: %[[LR:.*]] = dsc.constant dense<1.000000e-01>
// ADAMW: %[[T:.*]] = dsc.add %[[STEP]]
// ADAMW: %[[W:.*]] = dsc.load @w :
// ADAMW: %[[M:.*]] = dsc.load @w.exp_avg
// ADAMW: %[[V:.*]] = dsc.load @w.exp_avg_sq
// ADAMW: %[[NEW:.*]], %[[NM:.*]], %[[NV:.*]] = dsc.adam_update params(%[[W]] : tensor<4xf32>) grads(%arg0 : tensor<4xf32>) exp_avgs(%[[M]] : tensor<4xf32>) exp_avg_sqs(%[[V]] : tensor<4xf32>) copies() lr(%[[LR]] : tensor<f32>) step(%[[T]] : tensor<f32>) {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, constant_lr = 1.000000e-01 : f64, decoupled, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64}
// ADAMW: dsc.store %[[NEW]] to @w
// ADAMW: dsc.store %[[NM]] to @w.exp_avg
// ADAMW: dsc.store %[[NV]] to @w.exp_avg_sq
// ADAMW: dsc.store %[[T]] to @optimizer.step
// ADAMW: return %{{.*}} : tensor<f32>

// Adam: L2 weight decay (no `decoupled`), the given betas and eps.
// ADAM-LABEL: func.func @step
// ADAM: dsc.adam_update {{.*}} {beta1 = 8.000000e-01 : f64, beta2 = 9.000000e-01 : f64, constant_lr = 1.000000e-01 : f64, eps = 9.9999999999999995E-7 : f64, weight_decay = 5.000000e-01 : f64}
// ADAM: dsc.store %{{.*}} to @w

// SGD with momentum: buf = 0.9 * buf + g; p -= lr * buf. No Adam state.
// SGD-NOT: exp_avg
// SGD: dsc.state optimizer @w.momentum_buffer : tensor<4xf32>
// SGD: %[[BUF:.*]] = dsc.load @w.momentum_buffer
// SGD: %[[NEW:.*]], %[[NB:.*]] = dsc.sgd_update params(%{{.*}} : tensor<4xf32>) grads(%arg0 : tensor<4xf32>) momentum_buffers(%[[BUF]] : tensor<4xf32>) copies() lr(%{{.*}}) {momentum = 9.000000e-01 : f64, weight_decay = 0.000000e+00 : f64}
// SGD: dsc.store %[[NEW]] to @w
// SGD: dsc.store %[[NB]] to @w.momentum_buffer

// Clipping by the global norm: min(1 / (sqrt(sum g^2) + 1e-6), 1), which
// the update multiplies the gradients by.
// CLIP: %[[SUM:.*]] = dsc.sum_squares(%arg0 : tensor<4xf32>) : tensor<f32>
// CLIP: %[[NORM:.*]] = dsc.sqrt %[[SUM]]
// CLIP: %[[COEF:.*]] = dsc.div
// CLIP: %[[C:.*]] = dsc.minimum %[[COEF]]
// CLIP: dsc.sgd_update {{.*}} clip_coef(%[[C]] : tensor<f32>)

// -----

// A function without gradients is left alone.
// ADAMW-LABEL: func.func @eval
// ADAMW-NOT: dsc.store
dsc.state parameter @v : tensor<4xf32>
func.func @eval(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %l = dsc.reduce_sum %x, dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}

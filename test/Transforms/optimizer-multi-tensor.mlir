// RUN: dsc-opt %s --dsc-optimizer="optimizer=adamw lr=0.1 grad-clip=1.0" --split-input-file | FileCheck %s
// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1 momentum=0.9" --split-input-file | FileCheck %s --check-prefix=SGD
// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1" --split-input-file | FileCheck %s --check-prefix=PLAIN

// Every parameter's update is one multi-tensor op, whatever the number of
// parameters; the global norm of clipping is one dsc.sum_squares.

dsc.state parameter @w : tensor<4x3xf32>
dsc.state parameter @b : tensor<3xf32>
dsc.state parameter @e : tensor<5x2xf32>
func.func @step(%gw: tensor<4x3xf32>, %gb: tensor<3xf32>, %ge: tensor<5x2xf32>)
    -> (tensor<f32> {dsc.output = "loss"},
        tensor<4x3xf32> {dsc.output = "grad.w", dsc.gradient_of = @w},
        tensor<3xf32> {dsc.output = "grad.b", dsc.gradient_of = @b},
        tensor<5x2xf32> {dsc.output = "grad.e", dsc.gradient_of = @e}) {
  %l = dsc.reduce_sum %gb, dims = [0] : tensor<3xf32>
  return %l, %gw, %gb, %ge : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>, tensor<5x2xf32>
}

// CHECK-LABEL: func.func @step
// CHECK: %[[SQ:.*]] = dsc.sum_squares(%arg0, %arg1, %arg2 : tensor<4x3xf32>, tensor<3xf32>, tensor<5x2xf32>) : tensor<f32>
// CHECK: %[[NORM:.*]] = dsc.sqrt %[[SQ]]
// CHECK: %[[COEF:.*]] = dsc.minimum
// CHECK: %[[W:.*]] = dsc.load @w : tensor<4x3xf32>
// CHECK: %[[B:.*]] = dsc.load @b : tensor<3xf32>
// CHECK: %[[E:.*]] = dsc.load @e : tensor<5x2xf32>
// CHECK: %[[P:.*]]:3, %[[M:.*]]:3, %[[V:.*]]:3 = dsc.adam_update params(%[[W]], %[[B]], %[[E]] : tensor<4x3xf32>, tensor<3xf32>, tensor<5x2xf32>) grads(%arg0, %arg1, %arg2 : {{.*}}) exp_avgs({{.*}}) exp_avg_sqs({{.*}}) copies() lr(%{{.*}} : tensor<f32>) step(%{{.*}} : tensor<f32>) clip_coef(%[[COEF]] : tensor<f32>) {{.*}} -> (tensor<4x3xf32>, tensor<3xf32>, tensor<5x2xf32>), (tensor<4x3xf32>, tensor<3xf32>, tensor<5x2xf32>), (tensor<4x3xf32>, tensor<3xf32>, tensor<5x2xf32>)
// CHECK-NOT: dsc.adam_update
// CHECK: dsc.store %[[P]]#0 to @w
// CHECK: dsc.store %[[P]]#1 to @b
// CHECK: dsc.store %[[P]]#2 to @e
// CHECK: dsc.store %[[M]]#0 to @w.exp_avg
// CHECK: dsc.store %[[V]]#2 to @e.exp_avg_sq
// CHECK: dsc.store %{{.*}} to @optimizer.step

// SGD with momentum: the buffers are the op's state lists.
// SGD-LABEL: func.func @step
// SGD: %[[P:.*]]:3, %[[BUF:.*]]:3 = dsc.sgd_update params({{.*}}) grads({{.*}}) momentum_buffers(%{{.*}}, %{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<3xf32>, tensor<5x2xf32>) copies() lr({{.*}}) {momentum = 9.000000e-01 : f64, weight_decay = 0.000000e+00 : f64}
// SGD-NOT: dsc.sgd_update
// SGD: dsc.store %[[BUF]]#0 to @w.momentum_buffer

// PLAIN-LABEL: func.func @step
// PLAIN: %{{.*}}:3 = dsc.sgd_update {{.*}} momentum_buffers() copies()
// PLAIN-NOT: dsc.state optimizer @w.momentum_buffer

// -----

// Mixed precision: the op reads the 16-bit gradients and writes the 16-bit
// parameters (rounded from the updated fp32 masters).
dsc.state parameter @w : tensor<4xbf16>
dsc.state master @w.master : tensor<4xf32>
dsc.state parameter @b : tensor<2xbf16>
dsc.state master @b.master : tensor<2xf32>
func.func @mixed(%gw: tensor<4xbf16>, %gb: tensor<2xbf16>)
    -> (tensor<4xbf16> {dsc.output = "grad.w", dsc.gradient_of = @w},
        tensor<2xbf16> {dsc.output = "grad.b", dsc.gradient_of = @b}) {
  return %gw, %gb : tensor<4xbf16>, tensor<2xbf16>
}

// CHECK-LABEL: func.func @mixed
// CHECK: %[[P:.*]]:2, %{{.*}}:2, %{{.*}}:2, %[[C:.*]]:2 = dsc.adam_update params(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<2xf32>) grads(%arg0, %arg1 : tensor<4xbf16>, tensor<2xbf16>) {{.*}} copies() {{.*}} -> (tensor<4xf32>, tensor<2xf32>), (tensor<4xf32>, tensor<2xf32>), (tensor<4xf32>, tensor<2xf32>) copies(tensor<4xbf16>, tensor<2xbf16>)
// CHECK: dsc.store %[[P]]#0 to @w.master
// CHECK: dsc.store %[[C]]#0 to @w : tensor<4xbf16>
// CHECK: dsc.store %[[C]]#1 to @b : tensor<2xbf16>

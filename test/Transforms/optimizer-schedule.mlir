// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1" | FileCheck %s --check-prefix=NONE
// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd scheduler=warmup-lr warmup-max-lr=0.5 warmup-num-steps=10" | FileCheck %s --check-prefix=WLR
// RUN: dsc-opt %s --dsc-optimizer="optimizer=adamw lr=0.1 scheduler=warmup-decay-lr warmup-type=linear warmup-num-steps=10 total-num-steps=100" | FileCheck %s --check-prefix=DECAY
// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1 scheduler=warmup-cosine-lr total-num-steps=100 warmup-num-steps=1" | FileCheck %s --check-prefix=COS

// The learning rate is computed from the step count at the top of the
// graph (so that the `lr` output is ready with the loss) and returned.

dsc.state parameter @w : tensor<4xf32>
func.func @step(%x: tensor<4xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"},
        tensor<4xf32> {dsc.output = "grad.w", dsc.gradient_of = @w}) {
  %w = dsc.load @w : tensor<4xf32>
  %p = dsc.mul %w, %x : tensor<4xf32>, tensor<4xf32>
  %l = dsc.reduce_sum %p, dims = [0] : tensor<4xf32>
  return %l, %x : tensor<f32>, tensor<4xf32>
}

// Without a schedule the lr is a constant, and still an output.
// NONE-LABEL: func.func @step
// NONE-SAME: -> (tensor<f32> {dsc.output = "loss"}, tensor<f32> {dsc.output = "lr"})
// NONE-NEXT: dsc.load @optimizer.step
// NONE-NEXT: %[[LR:.*]] = dsc.constant dense<1.000000e-01>
// NONE: return %{{.*}}, %[[LR]] : tensor<f32>, tensor<f32>

// WarmupLR, log warmup over W = 10 steps from 0 to 0.5: it = step - 1,
// clamped at 0; gamma = log(it + 1) / log(10) while it < 10, else 1.
// WLR-LABEL: func.func @step
// WLR-NEXT: %[[N:.*]] = dsc.load @optimizer.step
// WLR-NEXT: %[[ONE:.*]] = dsc.constant dense<1.000000e+00>
// WLR-NEXT: %[[IT:.*]] = dsc.sub %[[N]], %[[ONE]]
// WLR-NEXT: %[[ZERO:.*]] = dsc.constant dense<0.000000e+00>
// WLR-NEXT: %[[ITC:.*]] = dsc.maximum %[[IT]], %[[ZERO]]
// WLR-NEXT: %[[INV:.*]] = dsc.constant dense<0.434294492>
// WLR-NEXT: %[[ONE2:.*]] = dsc.constant dense<1.000000e+00>
// WLR-NEXT: %[[IT1:.*]] = dsc.add %[[ITC]], %[[ONE2]]
// WLR-NEXT: %[[LOG:.*]] = dsc.log %[[IT1]]
// WLR-NEXT: %[[WARM:.*]] = dsc.mul %[[INV]], %[[LOG]]
// WLR-NEXT: %[[W:.*]] = dsc.constant dense<1.000000e+01>
// WLR-NEXT: %[[IN:.*]] = dsc.compare lt, %[[ITC]], %[[W]]
// WLR-NEXT: %[[FLAT:.*]] = dsc.constant dense<1.000000e+00>
// WLR-NEXT: %[[GAMMA:.*]] = dsc.select %[[IN]], %[[WARM]], %[[FLAT]]
// WLR-NEXT: %[[MIN:.*]] = dsc.constant dense<0.000000e+00>
// WLR-NEXT: %[[DELTA:.*]] = dsc.constant dense<5.000000e-01>
// WLR-NEXT: %[[D:.*]] = dsc.mul %[[DELTA]], %[[GAMMA]]
// WLR-NEXT: %[[LR:.*]] = dsc.add %[[MIN]], %[[D]]
// WLR: %[[NEW:.*]] = dsc.sgd_update {{.*}} lr(%[[LR]] : tensor<f32>)
// WLR: dsc.store %[[NEW]] to @w
// WLR: return %{{.*}}, %[[LR]]

// WarmupDecayLR, linear: it / W, then (T - it) / max(1, T - W); AdamW's
// decay and step size follow the scheduled lr.
// DECAY-LABEL: func.func @step
// DECAY: %[[WARM:.*]] = dsc.div %[[ITC:.*]], %{{.*}}
// DECAY: %[[T:.*]] = dsc.constant dense<1.000000e+02>
// DECAY-NEXT: %[[LEFT:.*]] = dsc.sub %[[T]], %[[ITC]]
// DECAY-NEXT: %[[SPAN:.*]] = dsc.constant dense<9.000000e+01>
// DECAY-NEXT: %[[FRAC:.*]] = dsc.div %[[LEFT]], %[[SPAN]]
// DECAY-NEXT: %[[DEC:.*]] = dsc.maximum %{{.*}}, %[[FRAC]]
// DECAY-NEXT: %[[GAMMA:.*]] = dsc.select %{{.*}}, %[[WARM]], %[[DEC]]
// A scheduled lr: the update computes AdamW's decay factor from it (no
// constant_lr).
// DECAY: %[[LR:.*]] = dsc.add
// DECAY: dsc.adam_update {{.*}} lr(%[[LR]] : tensor<f32>) step(%{{.*}} : tensor<f32>) {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, decoupled, eps
// DECAY: return %{{.*}}, %[[LR]]

// WarmupCosineLR: W = max(2, 1); after warmup a cosine of the progress;
// the first step (it = -1) gets lr 0.
// COS-LABEL: func.func @step
// COS: %[[IT:.*]] = dsc.sub
// COS: %[[W:.*]] = dsc.constant dense<2.000000e+00>
// COS: %[[PI:.*]] = dsc.constant dense<3.14159274>
// COS-NEXT: %[[ANGLE:.*]] = dsc.mul %[[PI]], %{{.*}}
// COS-NEXT: %[[COS:.*]] = dsc.cos %[[ANGLE]]
// COS: %[[RATIO:.*]] = dsc.select
// COS: %[[STARTED:.*]] = dsc.compare ge, %[[IT]]
// COS: %[[SCALED:.*]] = dsc.mul %{{.*}}, %[[RATIO]]
// COS: %[[LR:.*]] = dsc.select %[[STARTED]], %[[SCALED]], %{{.*}}
// COS: return %{{.*}}, %[[LR]]

// RUN: dsc-opt %s --dsc-mixed-precision=precision=bf16 --split-input-file | FileCheck %s
// RUN: dsc-opt %s --dsc-mixed-precision=precision=fp16 --split-input-file | FileCheck %s --check-prefix=F16
// RUN: dsc-opt %s --dsc-mixed-precision=precision=fp32 --split-input-file | FileCheck %s --check-prefix=F32
// RUN: dsc-opt %s --dsc-mixed-precision="precision=bf16 master-weights=0" --split-input-file | FileCheck %s --check-prefix=NOMASTER

// DeepSpeed's states: each float parameter becomes 16-bit, loaded as such,
// beside its fp32 master weight (declared after it); a float buffer stays
// fp32 and gets its 16-bit copy where it is loaded. What is computed from
// them is 16-bit; a constant read by a 16-bit op is rebuilt (rounded to
// nearest even: 0.1 is 0x3DCD in bf16). The averaged loss adds up its
// 16-bit per-token losses in fp32, with an fp32 count.
// CHECK: dsc.state parameter @w : tensor<4x8xbf16>
// CHECK-NEXT: dsc.state master @w.master : tensor<4x8xf32>
// CHECK-NEXT: dsc.state parameter @b : tensor<4xbf16>
// CHECK-NEXT: dsc.state master @b.master : tensor<4xf32>
// CHECK-NEXT: dsc.state buffer @scale : tensor<4xf32>
// CHECK-NEXT: dsc.state buffer @count : tensor<i64>
// CHECK-LABEL: func.func @linear
// CHECK-SAME: -> (tensor<f32> {dsc.output = "loss"})
// CHECK: %[[W:.*]] = dsc.load @w : tensor<4x8xbf16>
// CHECK-NEXT: %[[B:.*]] = dsc.load @b : tensor<4xbf16>
// CHECK-NEXT: %[[SC:.*]] = dsc.load @scale : tensor<4xf32>
// CHECK-NEXT: %[[SC16:.*]] = dsc.convert %[[SC]] : tensor<4xf32> to tensor<4xbf16>
// CHECK: %[[Y0:.*]] = dsc.linear %[[X16:.*]], %[[W]], %[[B]] : tensor<2x8xbf16>, tensor<4x8xbf16>, tensor<4xbf16>
// CHECK-NEXT: %[[Y:.*]] = dsc.mul %[[Y0]], %[[SC16]] : tensor<2x4xbf16>, tensor<4xbf16>
// CHECK-NEXT: %[[C:.*]] = dsc.constant dense<1.000980e-01> : tensor<bf16>
// CHECK-NEXT: %[[S:.*]] = dsc.mul %[[Y]], %[[C]] : tensor<2x4xbf16>, tensor<bf16>
// CHECK-NEXT: %[[L:.*]] = dsc.cross_entropy %[[S]], %[[T:.*]] reduction = none : tensor<2x4xbf16>, tensor<2xi64>
// CHECK-NEXT: %[[L32:.*]] = dsc.convert %[[L]] : tensor<2xbf16> to tensor<2xf32>
// CHECK-NEXT: %[[SUM:.*]] = dsc.reduce_sum %[[L32]], dims = [0] : tensor<2xf32>
// CHECK: %[[KEEP:.*]] = dsc.convert %{{.*}} : tensor<2xi1> to tensor<2xf32>
// CHECK-NEXT: %[[N:.*]] = dsc.reduce_sum %[[KEEP]], dims = [0] : tensor<2xf32>
// CHECK-NEXT: %[[MEAN:.*]] = dsc.div %[[SUM]], %[[N]] : tensor<f32>, tensor<f32>
// CHECK-NEXT: return %[[MEAN]] : tensor<f32>
// F16: dsc.state parameter @w : tensor<4x8xf16>
// F16-NEXT: dsc.state master @w.master : tensor<4x8xf32>
// F16-LABEL: func.func @linear
// F16: dsc.load @w : tensor<4x8xf16>
// F16: dsc.convert %{{.*}} : tensor<4xf32> to tensor<4xf16>
// F16: dsc.constant dense<9.997550e-02> : tensor<f16>
// F16: dsc.cross_entropy %{{.*}} reduction = none : tensor<2x4xf16>, tensor<2xi64>
// F16: dsc.convert %{{.*}} : tensor<2xf16> to tensor<2xf32>
// A graph that is not trained (evaluation, gradients) reads the 16-bit
// parameters alone: no masters.
// NOMASTER: dsc.state parameter @w : tensor<4x8xbf16>
// NOMASTER-NEXT: dsc.state parameter @b : tensor<4xbf16>
// NOMASTER-NEXT: dsc.state buffer @scale : tensor<4xf32>
// NOMASTER-NOT: master
// NOMASTER-LABEL: func.func @linear
// NOMASTER: dsc.load @w : tensor<4x8xbf16>
// F32: dsc.state parameter @w : tensor<4x8xf32>
// F32-NOT: master
// F32-LABEL: func.func @linear
// F32: dsc.load @scale : tensor<4xf32>
// F32-NEXT: dsc.load @count : tensor<i64>
// F32-NEXT: dsc.convert %arg0 : tensor<2x8xbf16> to tensor<2x8xf32>
// F32-NEXT: dsc.linear %{{.*}} : tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>
// F32-NEXT: dsc.mul
// F32-NEXT: dsc.constant dense<1.000000e-01> : tensor<f32>
dsc.state parameter @w : tensor<4x8xf32>
dsc.state parameter @b : tensor<4xf32>
dsc.state buffer @scale : tensor<4xf32>
dsc.state buffer @count : tensor<i64>
func.func @linear(%x: tensor<2x8xbf16> {dsc.input = "x"}, %t: tensor<2xi64> {dsc.input = "t"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<4x8xf32>
  %b = dsc.load @b : tensor<4xf32>
  %sc = dsc.load @scale : tensor<4xf32>
  %n = dsc.load @count : tensor<i64>
  %xf = dsc.convert %x : tensor<2x8xbf16> to tensor<2x8xf32>
  %y0 = dsc.linear %xf, %w, %b : tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>
  %y = dsc.mul %y0, %sc : tensor<2x4xf32>, tensor<4xf32>
  %c = dsc.constant dense<0.1> : tensor<f32>
  %s = dsc.mul %y, %c : tensor<2x4xf32>, tensor<f32>
  %loss = dsc.cross_entropy %s, %t : tensor<2x4xf32>, tensor<2xi64>
  return %loss : tensor<f32>
}

// -----

// A tied parameter loaded twice: both uses share one 16-bit load, so its
// gradient is summed in 16 bits.
// CHECK-LABEL: func.func @tied
// CHECK: %[[E:.*]] = dsc.load @emb : tensor<8x4xbf16>
// CHECK-NEXT: %[[H:.*]] = dsc.embedding %[[E]], %{{.*}} : tensor<8x4xbf16>, tensor<3xi64>
// CHECK-NOT: dsc.load
// CHECK: dsc.linear %[[H]], %[[E]] : tensor<3x4xbf16>, tensor<8x4xbf16>

dsc.state parameter @emb : tensor<8x4xf32>
func.func @tied(%ids: tensor<3xi64> {dsc.input = "ids"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %e = dsc.load @emb : tensor<8x4xf32>
  %h = dsc.embedding %e, %ids : tensor<8x4xf32>, tensor<3xi64>
  %e2 = dsc.load @emb : tensor<8x4xf32>
  %logits = dsc.linear %h, %e2 : tensor<3x4xf32>, tensor<8x4xf32>
  %loss = dsc.cross_entropy %logits, %ids : tensor<3x8xf32>, tensor<3xi64>
  return %loss : tensor<f32>
}

// -----

// A summed loss (what --dsc-data-parallel makes of a mean) is summed in
// fp32: the data-parallel all-reduces and the division stay fp32.
// CHECK-LABEL: func.func @global_mean
// CHECK: %[[L:.*]] = dsc.cross_entropy %{{.*}} reduction = none : tensor<2x4xbf16>, tensor<2xi64>
// CHECK-NEXT: %[[L32:.*]] = dsc.convert %[[L]] : tensor<2xbf16> to tensor<2xf32>
// CHECK-NEXT: %[[SUM:.*]] = dsc.reduce_sum %[[L32]], dims = [0] : tensor<2xf32>
// CHECK-NEXT: %[[GS:.*]] = dsc.all_reduce %[[SUM]] : tensor<f32>
// CHECK: %[[GN:.*]] = dsc.all_reduce %{{.*}} : tensor<f32>
// CHECK-NEXT: %[[MEAN:.*]] = dsc.div %[[GS]], %[[GN]] : tensor<f32>, tensor<f32>
// CHECK-NEXT: return %[[MEAN]] : tensor<f32>
dsc.state parameter @w : tensor<4x8xf32>
func.func @global_mean(%x: tensor<2x8xf32> {dsc.input = "x"}, %t: tensor<2xi64> {dsc.input = "t"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<4x8xf32>
  %y = dsc.linear %x, %w : tensor<2x8xf32>, tensor<4x8xf32>
  %sum = dsc.cross_entropy %y, %t reduction = sum : tensor<2x4xf32>, tensor<2xi64>
  %gs = dsc.all_reduce %sum : tensor<f32>
  %ign = dsc.constant dense<-100> : tensor<i64>
  %keep = dsc.compare ne, %t, %ign : tensor<2xi64>, tensor<i64>
  %ones = dsc.convert %keep : tensor<2xi1> to tensor<2xf32>
  %n = dsc.reduce_sum %ones, dims = [0] : tensor<2xf32>
  %gn = dsc.all_reduce %n : tensor<f32>
  %loss = dsc.div %gs, %gn : tensor<f32>, tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Float inputs are converted on entry; a value made from integers (a mask
// converted to float) stays fp32 and is converted where a 16-bit op reads
// it; a non-float state is untouched; the output goes back to fp32.
// CHECK-LABEL: func.func @inputs
// CHECK-NEXT: %[[X:.*]] = dsc.convert %arg0 : tensor<4xf32> to tensor<4xbf16>
// CHECK-NEXT: %[[I:.*]] = dsc.load @ids : tensor<4xi64>
// CHECK-NEXT: %[[M:.*]] = dsc.convert %[[I]] : tensor<4xi64> to tensor<4xf32>
// CHECK-NEXT: %[[M16:.*]] = dsc.convert %[[M]] : tensor<4xf32> to tensor<4xbf16>
// CHECK-NEXT: %[[P:.*]] = dsc.mul %[[X]], %[[M16]] : tensor<4xbf16>, tensor<4xbf16>
// CHECK-NEXT: %[[S:.*]] = dsc.reduce_sum %[[P]], dims = [0] : tensor<4xbf16>
// CHECK-NEXT: %[[S32:.*]] = dsc.convert %[[S]] : tensor<bf16> to tensor<f32>
// CHECK-NEXT: return %[[S32]]
dsc.state buffer @ids : tensor<4xi64>
func.func @inputs(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %i = dsc.load @ids : tensor<4xi64>
  %m = dsc.convert %i : tensor<4xi64> to tensor<4xf32>
  %p = dsc.mul %x, %m : tensor<4xf32>, tensor<4xf32>
  %s = dsc.reduce_sum %p, dims = [0] : tensor<4xf32>
  return %s : tensor<f32>
}

// -----

// A parameter pinned to fp32 (dsc.keep_fp32: an MoE gate) keeps its type
// and gets no master; the op that reads it widens its 16-bit operand and
// computes in fp32, and what follows from it alone stays fp32. A
// rewrite's fill rule carries over to the master of a narrowed parameter.
// CHECK-LABEL: dsc.state parameter @gate {dsc.keep_fp32} : tensor<4x8xf32>
// CHECK-NOT: @gate.master
// CHECK: dsc.state parameter @w {init_from = "dense"} : tensor<8x8xbf16>
// CHECK-NEXT: dsc.state master @w.master {init_from = "dense"} : tensor<8x8xf32>
// CHECK: func.func @pinned
// CHECK: %[[X:.*]] = dsc.convert %{{.*}} : tensor<2x8xf32> to tensor<2x8xbf16>
// CHECK: %[[H:.*]] = dsc.linear %[[X]], %{{.*}} : tensor<2x8xbf16>, tensor<8x8xbf16>
// CHECK: %[[G:.*]] = dsc.load @gate : tensor<4x8xf32>
// CHECK: %[[HF:.*]] = dsc.convert %[[H]] : tensor<2x8xbf16> to tensor<2x8xf32>
// CHECK: %[[L:.*]] = dsc.linear %[[HF]], %[[G]] : tensor<2x8xf32>, tensor<4x8xf32>
// CHECK: dsc.softmax %[[L]], dim = 1 : tensor<2x4xf32>
// NOMASTER-LABEL: dsc.state parameter @gate {dsc.keep_fp32} : tensor<4x8xf32>
dsc.state parameter @gate {dsc.keep_fp32} : tensor<4x8xf32>
dsc.state parameter @w {init_from = "dense"} : tensor<8x8xf32>
func.func @pinned(%x: tensor<2x8xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<8x8xf32>
  %h = dsc.linear %x, %w : tensor<2x8xf32>, tensor<8x8xf32>
  %g = dsc.load @gate : tensor<4x8xf32>
  %l = dsc.linear %h, %g : tensor<2x8xf32>, tensor<4x8xf32>
  %p = dsc.softmax %l, dim = 1 : tensor<2x4xf32>
  %s = dsc.reduce_sum %p, dims = [0, 1] : tensor<2x4xf32>
  return %s : tensor<f32>
}

// RUN: dsc-opt %s --dsc-lower-to-runtime | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime --dsc-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s --check-prefix=CPP
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// ZeRO-Infinity's schedule of three host updates (sub-groups) whose
// states live on NVMe, two sub-groups ahead (dsc.nvme_buffer_count): once
// the loss is written (the step is sure to reach the update), the "nvme"
// stream reads sub-groups 0 and 1 into host buffers; each update waits for
// its read, updates the buffers in place and the stream writes them back
// after an event of "host"; sub-group 2 is read after sub-group 0's write,
// into the memory it leaves; the stream is drained at the end of the step.
// CHECK-DAG: %[[HOST:.*]] = dscrt.stream "host"
// CHECK-DAG: %[[NVME:.*]] = dscrt.stream "nvme"
// CHECK: dscrt.eval_exit
// CHECK-NEXT: %[[P0:.*]] = dscrt.alloc : memref<4xf32, #dscrt.host>
// CHECK-NEXT: dscrt.nvme_read 1 "w0.master" to %[[P0]] on %[[NVME]] : memref<4xf32, #dscrt.host>
// CHECK-NEXT: %[[M0:.*]] = dscrt.alloc
// CHECK-NEXT: dscrt.nvme_read 2 "w0.exp_avg" to %[[M0]]
// CHECK-NEXT: %[[V0:.*]] = dscrt.alloc
// CHECK-NEXT: dscrt.nvme_read 3 "w0.exp_avg_sq" to %[[V0]]
// CHECK-NEXT: %[[READ0:.*]] = dscrt.record %[[NVME]]
// CHECK-NEXT: dscrt.alloc
// CHECK-NEXT: dscrt.nvme_read 5 "w1.master"
// CHECK: dscrt.nvme_read 7 "w1.exp_avg_sq"
// CHECK-NEXT: %[[READ1:.*]] = dscrt.record %[[NVME]]
// CHECK-NOT: nvme_read
// CHECK: dscrt.wait %[[HOST]] for %[[READ0]]
// CHECK: dscrt.kernel on %[[HOST]] {{.*}}outs(%[[P0]], %[[M0]], %[[V0]], %{{.*}} : memref<4xf32, #dscrt.host>, memref<4xf32, #dscrt.host>, memref<4xf32, #dscrt.host>, memref<4xbf16, #dscrt.host>)
// CHECK: %[[UPDATED0:.*]] = dscrt.record %[[HOST]]
// CHECK-NEXT: dscrt.wait %[[NVME]] for %[[UPDATED0]]
// CHECK-NEXT: dscrt.nvme_write %[[P0]] to 1 "w0.master" on %[[NVME]] : memref<4xf32, #dscrt.host>
// CHECK-NEXT: dscrt.nvme_write %[[M0]] to 2 "w0.exp_avg" on %[[NVME]]
// CHECK-NEXT: dscrt.nvme_write %[[V0]] to 3 "w0.exp_avg_sq" on %[[NVME]]
// CHECK: dscrt.nvme_read 9 "w2.master"
// CHECK: dscrt.wait %[[HOST]] for %[[READ1]]
// CHECK: dscrt.kernel on %[[HOST]]
// CHECK: dscrt.nvme_write {{.*}} to 7 "w1.exp_avg_sq"
// CHECK-NOT: nvme_read
// CHECK: dscrt.nvme_write {{.*}} to 11 "w2.exp_avg_sq"
// CHECK: dscrt.synchronize %[[NVME]]

// The host arena holds the 8 buffers of copies for the whole step (256
// bytes each) and two sub-groups' NVMe buffers (6), not three: sub-group
// 2's buffers take sub-group 0's memory.
// PLAN: func.func @step() attributes {dscrt.arena_bytes = {{[0-9]+}} : i64, dscrt.host_arena_bytes = 3584 : i64}

// The state table records the tier; the step asks the runtime for each
// read and write; the nvme stream has a thread of its own.
// CPP: dsc::rt::StateRole::Master, 0, nullptr, int32_t(dsc::rt::CommGroup::World), nullptr, 0.00000000000000000e+00, 0ull, dsc::rt::MemoryTier::Nvme}
// CPP: {"nvme", true, false}
// CPP: ctx->nvmeRead(1, {{.*}}, 16, {{.*}});
// CPP: ctx->nvmeWrite(1, {{.*}}, 16, {{.*}});

// On CUDA the reads and writes are the same runtime calls (host tasks of
// the CUDA stream "nvme", into and out of the pinned host arena), each
// host update a host task of "host" between them.
// CUDA: //--- step.cu
// CUDA: {"nvme", false, false}
// CUDA: ctx->nvmeRead(1, v[[M:[0-9]+]], 16, s[[NVME:[0-9]+]]);
// CUDA: auto e[[READ:[0-9]+]] = s[[NVME]].recordEvent();
// CUDA: s[[HOST:[0-9]+]].wait(*e[[READ]]);
// CUDA: s[[HOST]].enqueue([=] { void *const buffers[] = {const_cast<void *>(static_cast<const void *>(v[[M]])), {{.*}}_host_part(buffers); }, "kernel{{[0-9]+}} (dsc.adam_update) on the host");
// CUDA-NEXT: auto e[[UPDATED:[0-9]+]] = s[[HOST]].recordEvent();
// CUDA-NEXT: s[[NVME]].wait(*e[[UPDATED]]);
// CUDA-NEXT: ctx->nvmeWrite(1, v[[M]], 16, s[[NVME]]);
// CUDA: //--- host.cpp
// CUDA-COUNT-3: _host_part(void *const *buffers) {
module attributes {dsc.nvme_buffer_count = 2 : i64} {
dsc.state parameter @w0 : tensor<4xbf16>
dsc.state master @"w0.master" on nvme : tensor<4xf32>
dsc.state optimizer @"w0.exp_avg" on nvme : tensor<4xf32>
dsc.state optimizer @"w0.exp_avg_sq" on nvme : tensor<4xf32>
dsc.state parameter @w1 : tensor<4xbf16>
dsc.state master @"w1.master" on nvme : tensor<4xf32>
dsc.state optimizer @"w1.exp_avg" on nvme : tensor<4xf32>
dsc.state optimizer @"w1.exp_avg_sq" on nvme : tensor<4xf32>
dsc.state parameter @w2 : tensor<4xbf16>
dsc.state master @"w2.master" on nvme : tensor<4xf32>
dsc.state optimizer @"w2.exp_avg" on nvme : tensor<4xf32>
dsc.state optimizer @"w2.exp_avg_sq" on nvme : tensor<4xf32>
func.func @forward(%x: tensor<4xbf16> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %s = dsc.sum_squares(%x : tensor<4xbf16>) : tensor<f32>
  %lr = dsc.constant dense<0.1> : tensor<f32>
  %lrh = dsc.transfer %lr to host : tensor<f32>
  %one = dsc.constant dense<1.0> : tensor<f32>
  %oneh = dsc.transfer %one to host : tensor<f32>
  %w0 = dsc.load @w0 : tensor<4xbf16>
  %g0 = dsc.mul %x, %w0 : tensor<4xbf16>, tensor<4xbf16>
  %gh0 = dsc.transfer %g0 to host : tensor<4xbf16>
  %w1 = dsc.load @w1 : tensor<4xbf16>
  %g1 = dsc.mul %x, %w1 : tensor<4xbf16>, tensor<4xbf16>
  %gh1 = dsc.transfer %g1 to host : tensor<4xbf16>
  %w2 = dsc.load @w2 : tensor<4xbf16>
  %g2 = dsc.mul %x, %w2 : tensor<4xbf16>, tensor<4xbf16>
  %gh2 = dsc.transfer %g2 to host : tensor<4xbf16>
  %p0 = dsc.load @"w0.master" : tensor<4xf32>
  %m0 = dsc.load @"w0.exp_avg" : tensor<4xf32>
  %v0 = dsc.load @"w0.exp_avg_sq" : tensor<4xf32>
  %np0, %nm0, %nv0, %nc0 = dsc.adam_update params(%p0 : tensor<4xf32>) grads(%gh0 : tensor<4xbf16>)
      exp_avgs(%m0 : tensor<4xf32>) exp_avg_sqs(%v0 : tensor<4xf32>) copies()
      lr(%lrh : tensor<f32>) step(%oneh : tensor<f32>)
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0}
      -> (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>) copies(tensor<4xbf16>)
  %back0 = dsc.transfer %nc0 to device : tensor<4xbf16>
  dsc.store %np0 to @"w0.master" : tensor<4xf32>
  dsc.store %nm0 to @"w0.exp_avg" : tensor<4xf32>
  dsc.store %nv0 to @"w0.exp_avg_sq" : tensor<4xf32>
  dsc.store %back0 to @w0 : tensor<4xbf16>
  %p1 = dsc.load @"w1.master" : tensor<4xf32>
  %m1 = dsc.load @"w1.exp_avg" : tensor<4xf32>
  %v1 = dsc.load @"w1.exp_avg_sq" : tensor<4xf32>
  %np1, %nm1, %nv1, %nc1 = dsc.adam_update params(%p1 : tensor<4xf32>) grads(%gh1 : tensor<4xbf16>)
      exp_avgs(%m1 : tensor<4xf32>) exp_avg_sqs(%v1 : tensor<4xf32>) copies()
      lr(%lrh : tensor<f32>) step(%oneh : tensor<f32>)
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0}
      -> (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>) copies(tensor<4xbf16>)
  %back1 = dsc.transfer %nc1 to device : tensor<4xbf16>
  dsc.store %np1 to @"w1.master" : tensor<4xf32>
  dsc.store %nm1 to @"w1.exp_avg" : tensor<4xf32>
  dsc.store %nv1 to @"w1.exp_avg_sq" : tensor<4xf32>
  dsc.store %back1 to @w1 : tensor<4xbf16>
  %p2 = dsc.load @"w2.master" : tensor<4xf32>
  %m2 = dsc.load @"w2.exp_avg" : tensor<4xf32>
  %v2 = dsc.load @"w2.exp_avg_sq" : tensor<4xf32>
  %np2, %nm2, %nv2, %nc2 = dsc.adam_update params(%p2 : tensor<4xf32>) grads(%gh2 : tensor<4xbf16>)
      exp_avgs(%m2 : tensor<4xf32>) exp_avg_sqs(%v2 : tensor<4xf32>) copies()
      lr(%lrh : tensor<f32>) step(%oneh : tensor<f32>)
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0}
      -> (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>) copies(tensor<4xbf16>)
  %back2 = dsc.transfer %nc2 to device : tensor<4xbf16>
  dsc.store %np2 to @"w2.master" : tensor<4xf32>
  dsc.store %nm2 to @"w2.exp_avg" : tensor<4xf32>
  dsc.store %nv2 to @"w2.exp_avg_sq" : tensor<4xf32>
  dsc.store %back2 to @w2 : tensor<4xbf16>
  return %s : tensor<f32>
}
}

// RUN: dsc-opt %s --dsc-lower-to-runtime | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime --dsc-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s --check-prefix=CPP
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// A host update (ZeRO-Offload) of one parameter shard: the gradient is
// copied to the host on "d2h" after compute wrote it, the update runs on
// the "host" stream once that copy has (one wait for the latest copy
// covers the earlier ones; compute waits for all but the last two copies
// before it reuses their device buffers), in place on the host states, and
// its new value goes back on "h2d" after the update (and after compute's
// work so far), where compute waits for it before storing it.
// CHECK: %[[COMPUTE:.*]] = dscrt.stream "compute"
// CHECK-DAG: %[[H2D:.*]] = dscrt.stream "h2d"
// CHECK-DAG: %[[HOST:.*]] = dscrt.stream "host"
// CHECK-DAG: %[[D2H:.*]] = dscrt.stream "d2h"
// CHECK: dscrt.eval_exit
// CHECK-NEXT: %[[G:.*]] = dscrt.alloc : memref<4xbf16>
// CHECK-NEXT: dscrt.kernel on %[[COMPUTE]] {{.*}} outs(%[[G]] : memref<4xbf16>)
// CHECK: %[[W:.*]] = dscrt.record %[[COMPUTE]]
// CHECK-NEXT: dscrt.wait %[[D2H]] for %[[W]]
// CHECK-NEXT: %[[GH:.*]] = dscrt.alloc : memref<4xbf16, #dscrt.host>
// CHECK-NEXT: dscrt.copy %[[G]] to %[[GH]] on %[[D2H]] : memref<4xbf16> to memref<4xbf16, #dscrt.host>
// CHECK-NEXT: %[[COPIED:.*]] = dscrt.record %[[D2H]]
// CHECK: dscrt.wait %[[COMPUTE]] for %[[COPIED]]
// CHECK: dscrt.wait %[[HOST]] for
// CHECK: %[[P:.*]] = dscrt.state 1 "w.master" : memref<4xf32, #dscrt.host>
// CHECK: dscrt.kernel on %[[HOST]] ins({{.*}}%[[GH]]{{.*}}) outs(%[[P]], {{.*}} : memref<4xf32, #dscrt.host>, {{.*}}memref<4xbf16, #dscrt.host>)
// CHECK: %[[UPDATED:.*]] = dscrt.record %[[HOST]]
// CHECK-NEXT: dscrt.wait %[[H2D]] for %[[UPDATED]]
// CHECK-NEXT: %[[C:.*]] = dscrt.record %[[COMPUTE]]
// CHECK-NEXT: dscrt.wait %[[H2D]] for %[[C]]
// CHECK-NEXT: %[[BACK:.*]] = dscrt.alloc : memref<4xbf16>
// CHECK-NEXT: dscrt.copy %{{.*}} to %[[BACK]] on %[[H2D]] : memref<4xbf16, #dscrt.host> to memref<4xbf16>
// CHECK-NEXT: %[[ARRIVED:.*]] = dscrt.record %[[H2D]]
// CHECK: dscrt.wait %[[COMPUTE]] for %[[ARRIVED]]
// CHECK: dscrt.kernel on %[[COMPUTE]] ins(%[[BACK]] : memref<4xbf16>) outs(%{{.*}} : memref<4xbf16>)
// CHECK-DAG: dscrt.synchronize %[[D2H]]
// CHECK-DAG: dscrt.synchronize %[[HOST]]
// CHECK-DAG: dscrt.synchronize %[[H2D]]

// Host buffers are planned in the host arena, each for the whole step: the
// gradient, the two scalars and the 16-bit result, 256 bytes each.
// PLAN: func.func @step() attributes {dscrt.arena_bytes = {{[0-9]+}} : i64, dscrt.host_arena_bytes = 1024 : i64}

// The state table records the tier; host buffers are in the host arena;
// copies between the memories are counted; the copy and host streams have
// threads of their own.
// CPP: dsc::rt::StateRole::Master, 0, nullptr, int32_t(dsc::rt::CommGroup::World), nullptr, 0.00000000000000000e+00, 0ull, dsc::rt::MemoryTier::Host}
// CPP: {"compute", false, false}
// CPP-DAG: {"d2h", true, false}
// CPP-DAG: {"host", true, false}
// CPP-DAG: {"h2d", true, false}
// CPP: reinterpret_cast<dsc_bf16 *>(host_arena + 0)
// CPP: ctx->countTransfer(dsc::rt::TransferDirection::DeviceToHost, 4 * sizeof(*
// CPP: ctx->countTransfer(dsc::rt::TransferDirection::HostToDevice, 4 * sizeof(*

// On CUDA the artifact is two units: the step (nvcc) declares the host
// kernel's entry; the copies are cudaMemcpyAsync on the copy streams,
// ordered by events (no synchronization before the update); the update is
// a host task of the "host" stream (cudaLaunchHostFunc) that calls the
// entry, which the host unit defines over the CPU target's kernel (the
// kernel library's CPU AdamW), compiled by the host compiler.
// CUDA: //--- step.cu
// CUDA: #include "dsc/runtime/GeneratedCode.cuh"
// CUDA: } // namespace
// CUDA-NEXT: // The host kernels (ZeRO-Offload), compiled in the unit host.cpp.
// CUDA-NEXT: __attribute__((visibility("hidden"))) void kernel[[K:[0-9]+]]_host_part(void *const *buffers);
// CUDA-NOT: dsc_kernels::adamUpdate
// CUDA: dsc_check(cudaMemcpyAsync(v[[GH:[0-9]+]], v{{[0-9]+}}, 4 * sizeof(*v[[GH]]), cudaMemcpyDeviceToHost, s[[D2H:[0-9]+]]_h), "device to host copy");
// CUDA-NEXT: auto e[[COPIED:[0-9]+]] = s[[D2H]].recordEvent();
// CUDA-NOT: synchronize
// CUDA: s[[HOST:[0-9]+]].enqueue([=] { void *const buffers[] = {{[{]}}{{.*}}static_cast<const void *>(v[[GH]])){{.*}}; kernel[[K]]_host_part(buffers); }, "kernel[[K]] (dsc.adam_update) on the host");
// CUDA-NEXT: auto e[[UPDATED:[0-9]+]] = s[[HOST]].recordEvent();
// CUDA-NEXT: s[[H2D:[0-9]+]].wait(*e[[UPDATED]]);
// CUDA: cudaMemcpyHostToDevice, s[[H2D]]_h), "host to device copy");
// CUDA: s[[HOST]].synchronize();
// CUDA: //--- host.cpp
// CUDA: #include "dsc/runtime/GeneratedCode.h"
// CUDA: dsc_kernels::adamUpdate(stream,
// CUDA: __attribute__((visibility("hidden"))) void kernel[[K]]_host_part(void *const *buffers) {
// CUDA-NEXT: kernel[[K]](dsc_stream_t{}, static_cast<const float *>(buffers[0]), static_cast<const dsc_bf16 *>(buffers[1]),
dsc.state parameter @w : tensor<4xbf16>
dsc.state master @"w.master" on host : tensor<4xf32>
dsc.state optimizer @"w.exp_avg" on host : tensor<4xf32>
dsc.state optimizer @"w.exp_avg_sq" on host : tensor<4xf32>
func.func @forward(%x: tensor<4xbf16> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<4xbf16>
  %y = dsc.mul %x, %w : tensor<4xbf16>, tensor<4xbf16>
  %s = dsc.sum_squares(%y : tensor<4xbf16>) : tensor<f32>
  %g = dsc.add %y, %x : tensor<4xbf16>, tensor<4xbf16>
  %gh = dsc.transfer %g to host : tensor<4xbf16>
  %lr = dsc.constant dense<0.1> : tensor<f32>
  %lrh = dsc.transfer %lr to host : tensor<f32>
  %one = dsc.constant dense<1.0> : tensor<f32>
  %oneh = dsc.transfer %one to host : tensor<f32>
  %p = dsc.load @"w.master" : tensor<4xf32>
  %m = dsc.load @"w.exp_avg" : tensor<4xf32>
  %v = dsc.load @"w.exp_avg_sq" : tensor<4xf32>
  %np, %nm, %nv, %nc = dsc.adam_update params(%p : tensor<4xf32>) grads(%gh : tensor<4xbf16>)
      exp_avgs(%m : tensor<4xf32>) exp_avg_sqs(%v : tensor<4xf32>) copies()
      lr(%lrh : tensor<f32>) step(%oneh : tensor<f32>)
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0}
      -> (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>) copies(tensor<4xbf16>)
  %back = dsc.transfer %nc to device : tensor<4xbf16>
  dsc.store %np to @"w.master" : tensor<4xf32>
  dsc.store %nm to @"w.exp_avg" : tensor<4xf32>
  dsc.store %nv to @"w.exp_avg_sq" : tensor<4xf32>
  dsc.store %back to @w : tensor<4xbf16>
  return %s : tensor<f32>
}

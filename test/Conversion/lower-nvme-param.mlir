// RUN: dsc-opt %s --world-size=2 --optimizer=sgd --zero-stage=3 --zero-persistence-threshold=0 --offload-param=nvme --offload-param-buffer-count=2 | dsc-opt --dsc-lower-to-runtime | FileCheck %s
// RUN: dsc-opt %s --world-size=2 --optimizer=sgd --zero-stage=3 --zero-persistence-threshold=0 --offload-param=nvme --offload-param-buffer-count=1 | dsc-opt --dsc-lower-to-runtime | FileCheck %s --check-prefix=DEPTH1

// ZeRO-Infinity's parameter schedule (offload_param.device: nvme) on four
// parameters read in a chain. Each load of a partition is a read from the
// rank's file on the "nvme" stream into a host buffer, issued
// offload_param.buffer_count loads ahead (here 2): w0 and w1 are read
// before anything else, w2 only once w0's copy to the device is queued on
// "h2d" (which waits for w0's read), and so on. The device update's new
// partitions go back to the host on "d2h" and are written to the file
// after the host stream's event; nothing else writes the file.
// CHECK-DAG: %[[H2D:.*]] = dscrt.stream "h2d"
// CHECK-DAG: %[[NVME:.*]] = dscrt.stream "nvme"
// CHECK: %[[B0:.*]] = dscrt.alloc : memref<8xf32, #dscrt.host>
// CHECK-NEXT: dscrt.nvme_read 0 "w0" to %[[B0]] on %[[NVME]]
// CHECK-NEXT: %[[R0:.*]] = dscrt.record %[[NVME]]
// CHECK-NEXT: %[[B1:.*]] = dscrt.alloc : memref<8xf32, #dscrt.host>
// CHECK-NEXT: dscrt.nvme_read 1 "w1" to %[[B1]] on %[[NVME]]
// CHECK-NEXT: %[[R1:.*]] = dscrt.record %[[NVME]]
// CHECK-NEXT: dscrt.wait %[[H2D]] for %[[R0]]
// CHECK: dscrt.copy %[[B0]] to %{{.*}} on %[[H2D]] : memref<8xf32, #dscrt.host> to memref<8xf32>
// CHECK-NOT: dscrt.copy
// CHECK: dscrt.nvme_read 2 "w2"
// CHECK: dscrt.wait %[[H2D]] for %[[R1]]
// CHECK: dscrt.copy %[[B1]] to %{{.*}} on %[[H2D]]
// CHECK-NOT: dscrt.copy
// CHECK: dscrt.nvme_read 3 "w3"
// The backward reads them again, last first.
// CHECK: dscrt.nvme_read 3 "w3"
// CHECK: dscrt.nvme_read 2 "w2"
// CHECK: dscrt.nvme_read 1 "w1"
// CHECK: dscrt.nvme_read 0 "w0"
// After the update: copied to the host, then written.
// CHECK: dscrt.copy %{{.*}} to %[[N0:.*]] on %{{.*}} : memref<8xf32> to memref<8xf32, #dscrt.host>
// CHECK: dscrt.nvme_write %[[N0]] to 0 "w0" on %[[NVME]]
// CHECK: dscrt.nvme_write %{{.*}} to 1 "w1" on %[[NVME]]
// CHECK: dscrt.nvme_write %{{.*}} to 2 "w2" on %[[NVME]]
// CHECK: dscrt.nvme_write %{{.*}} to 3 "w3" on %[[NVME]]
// CHECK-NOT: dscrt.nvme_write

// One buffer: each read waits for the copy of the one before.
// DEPTH1: dscrt.nvme_read 0 "w0"
// DEPTH1-NOT: dscrt.nvme_read
// DEPTH1: dscrt.copy {{.*}} memref<8xf32, #dscrt.host> to memref<8xf32>
// DEPTH1-NEXT: dscrt.record
// DEPTH1-NOT: dscrt.copy
// DEPTH1: dscrt.nvme_read 1 "w1"

dsc.state parameter @w0 : tensor<4x4xf32>
dsc.state parameter @w1 : tensor<4x4xf32>
dsc.state parameter @w2 : tensor<4x4xf32>
dsc.state parameter @w3 : tensor<4x4xf32>
func.func @forward(%x: tensor<2x4xf32> {dsc.input = "x"}, %ids: tensor<2xi64> {dsc.input = "ids"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %w0 = dsc.load @w0 : tensor<4x4xf32>
  %h0 = dsc.matmul %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %w1 = dsc.load @w1 : tensor<4x4xf32>
  %h1 = dsc.matmul %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %w2 = dsc.load @w2 : tensor<4x4xf32>
  %h2 = dsc.matmul %h1, %w2 : tensor<2x4xf32>, tensor<4x4xf32>
  %w3 = dsc.load @w3 : tensor<4x4xf32>
  %h3 = dsc.matmul %h2, %w3 : tensor<2x4xf32>, tensor<4x4xf32>
  %loss = dsc.cross_entropy %h3, %ids : tensor<2x4xf32>, tensor<2xi64>
  return %loss : tensor<f32>
}

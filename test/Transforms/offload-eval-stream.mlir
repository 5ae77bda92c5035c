// RUN: dsc-opt %s --step=eval --offload-param=cpu | FileCheck %s
// RUN: dsc-opt %s --step=eval --offload-param=nvme | FileCheck %s --check-prefix=NVME
// RUN: dsc-opt %s --step=eval --offload-param=nvme | dsc-opt --dsc-lower-to-runtime | FileCheck %s --check-prefix=LOWERED

// ZeRO-Inference: an evaluation step with every parameter on the host
// streams them to the device one block ahead. The blocks are h.0, h.1 and
// h.2 (by their state names) and the embedding alone; each block's loads
// and copies move to just before the first reader of the block before
// it, so block k + 1 is copied while block k computes: h.0's before the
// embedding, h.1's before h.0's linear, h.2's before h.1's. The tied
// embedding's second use reads the same copy.
// CHECK: dsc.state parameter @emb on host : tensor<8x4xf32>
// CHECK: dsc.state parameter @h.2.b on host : tensor<4xf32>
// CHECK-LABEL: func.func @forward
// CHECK-NEXT: %[[E:.*]] = dsc.load @emb
// CHECK-NEXT: %[[ED:.*]] = dsc.transfer %[[E]] to device
// CHECK-NEXT: %[[W0:.*]] = dsc.load @h.0.w
// CHECK-NEXT: %[[W0D:.*]] = dsc.transfer %[[W0]] to device
// CHECK-NEXT: %[[B0:.*]] = dsc.load @h.0.b
// CHECK-NEXT: %[[B0D:.*]] = dsc.transfer %[[B0]] to device
// CHECK-NEXT: %[[X:.*]] = dsc.embedding %[[ED]]
// CHECK-NEXT: dsc.load @h.1.w
// CHECK-NEXT: dsc.transfer
// CHECK-NEXT: dsc.load @h.1.b
// CHECK-NEXT: dsc.transfer
// CHECK-NEXT: %[[Y0:.*]] = dsc.linear %[[X]], %[[W0D]], %[[B0D]]
// CHECK-NEXT: dsc.load @h.2.w
// CHECK-NEXT: dsc.transfer
// CHECK-NEXT: dsc.load @h.2.b
// CHECK-NEXT: dsc.transfer
// CHECK-NEXT: %[[Y1:.*]] = dsc.linear %[[Y0]]
// CHECK-NEXT: %[[Y2:.*]] = dsc.linear %[[Y1]]
// CHECK-NEXT: dsc.matmul %[[Y2]], %[[ED]] transpose_rhs
// CHECK-NOT: dsc.load

// The same placement with the parameters in the rank's NVMe file.
// NVME: dsc.state parameter @emb on nvme : tensor<8x4xf32>
// NVME: dsc.state parameter @h.2.b on nvme : tensor<4xf32>
// NVME-LABEL: func.func @forward
// NVME: dsc.load @h.1.w
// NVME: dsc.linear
// NVME: dsc.load @h.2.w

// Lowered, the file's reads run offload_param.buffer_count (default 5)
// loads ahead, each block's copies to the device before the previous
// block's kernel.
// LOWERED: dscrt.nvme_read 0 "emb"
// LOWERED-NEXT: dscrt.record
// LOWERED: dscrt.nvme_read 4 "h.1.b"
// LOWERED-NOT: dscrt.nvme_read
// LOWERED: dscrt.copy {{.*}} : memref<8x4xf32, #dscrt.host> to memref<8x4xf32>
// LOWERED: dscrt.nvme_read 5 "h.2.w"
// LOWERED: dsc.embedding
// LOWERED: dscrt.copy {{.*}} : memref<4x4xf32, #dscrt.host> to memref<4x4xf32>
// LOWERED: dscrt.copy {{.*}} : memref<4xf32, #dscrt.host> to memref<4xf32>
// LOWERED: dsc.linear
// LOWERED: dsc.linear
// LOWERED: dsc.linear

dsc.state parameter @emb : tensor<8x4xf32>
dsc.state parameter @h.0.w : tensor<4x4xf32>
dsc.state parameter @h.0.b : tensor<4xf32>
dsc.state parameter @h.1.w : tensor<4x4xf32>
dsc.state parameter @h.1.b : tensor<4xf32>
dsc.state parameter @h.2.w : tensor<4x4xf32>
dsc.state parameter @h.2.b : tensor<4xf32>
func.func @forward(%ids: tensor<2xi64> {dsc.input = "ids"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %e = dsc.load @emb : tensor<8x4xf32>
  %x = dsc.embedding %e, %ids : tensor<8x4xf32>, tensor<2xi64>
  %w0 = dsc.load @h.0.w : tensor<4x4xf32>
  %b0 = dsc.load @h.0.b : tensor<4xf32>
  %y0 = dsc.linear %x, %w0, %b0 : tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>
  %w1 = dsc.load @h.1.w : tensor<4x4xf32>
  %b1 = dsc.load @h.1.b : tensor<4xf32>
  %y1 = dsc.linear %y0, %w1, %b1 : tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>
  %w2 = dsc.load @h.2.w : tensor<4x4xf32>
  %b2 = dsc.load @h.2.b : tensor<4xf32>
  %y2 = dsc.linear %y1, %w2, %b2 : tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>
  %e2 = dsc.load @emb : tensor<8x4xf32>
  %logits = dsc.matmul %y2, %e2 transpose_rhs : tensor<2x4xf32>, tensor<8x4xf32>
  %loss = dsc.cross_entropy %logits, %ids : tensor<2x8xf32>, tensor<2xi64>
  return %loss : tensor<f32>
}

// RUN: dsc-opt %s --dsc-plan-memory=print=true 2>&1 | FileCheck %s

// x -> a -> b -> c -> d: each buffer dies after its user, so two 1 KiB
// slots serve all five; the view of %b keeps %b alive until the kernel using it.
// CHECK: dsc-plan-memory: @step: 5 buffers, arena 2048 bytes, live-bytes bound 2048 bytes
// CHECK-LABEL: func.func @step() attributes {dscrt.arena_bytes = 2048 : i64}
// CHECK: %[[X:.*]] = dscrt.buffer [[OA:[0-9]+]] : memref<256xf32>
// CHECK: %[[A:.*]] = dscrt.buffer [[OB:[0-9]+]] : memref<256xf32>
// CHECK: %[[B:.*]] = dscrt.buffer [[OA]] : memref<256xf32>
// CHECK: %[[C:.*]] = dscrt.buffer [[OB]] : memref<256xf32>
// CHECK: %[[D:.*]] = dscrt.buffer [[OA]] : memref<256xf32>
// CHECK-NOT: dscrt.alloc
func.func @step() {
  %s = dscrt.stream "compute"
  %x = dscrt.alloc : memref<256xf32>
  %a = dscrt.alloc : memref<256xf32>
  dscrt.kernel on %s ins(%x : memref<256xf32>) outs(%a : memref<256xf32>) {
  ^bb0(%t: tensor<256xf32>):
    %r = dsc.exp %t : tensor<256xf32>
    dscrt.yield %r : tensor<256xf32>
  }
  %b = dscrt.alloc : memref<256xf32>
  dscrt.kernel on %s ins(%a : memref<256xf32>) outs(%b : memref<256xf32>) {
  ^bb0(%t: tensor<256xf32>):
    %r = dsc.exp %t : tensor<256xf32>
    dscrt.yield %r : tensor<256xf32>
  }
  %bv = dscrt.view %b : memref<256xf32> to memref<16x16xf32>
  %c = dscrt.alloc : memref<256xf32>
  %cv = dscrt.view %c : memref<256xf32> to memref<16x16xf32>
  dscrt.kernel on %s ins(%bv : memref<16x16xf32>) outs(%cv : memref<16x16xf32>) {
  ^bb0(%t: tensor<16x16xf32>):
    %r = dsc.exp %t : tensor<16x16xf32>
    dscrt.yield %r : tensor<16x16xf32>
  }
  %d = dscrt.alloc : memref<256xf32>
  dscrt.kernel on %s ins(%c : memref<256xf32>) outs(%d : memref<256xf32>) {
  ^bb0(%t: tensor<256xf32>):
    %r = dsc.exp %t : tensor<256xf32>
    dscrt.yield %r : tensor<256xf32>
  }
  %y = dscrt.output 0 "y" : memref<256xf32, #dscrt.host>
  dscrt.copy %d to %y on %s : memref<256xf32> to memref<256xf32, #dscrt.host>
  dscrt.synchronize %s
  return
}

// RUN: dsc-opt %s --split-input-file --dsc-bucket-collectives | FileCheck %s
// RUN: dsc-opt %s --split-input-file --dsc-bucket-collectives=reduce-bucket-size=11 | FileCheck %s --check-prefix=SMALL
// RUN: dsc-opt %s --split-input-file --dsc-bucket-collectives="reduce-bucket-size=0 allgather-bucket-size=0" | FileCheck %s --check-prefix=OFF

// Two reduce-scatters (W = 2) of 8 and 4 elements: each rank's shard of
// each member is a row of [W, S_i]; the rows are concatenated, so rank r
// receives its shard of the first member, then of the second.
// CHECK-LABEL: func.func @reduce_scatter
// CHECK:      %[[A:.*]] = dsc.exp
// CHECK:      %[[B:.*]] = dsc.tanh
// CHECK-NEXT: %[[RA:.*]] = dsc.reshape %[[A]] : tensor<8xf32> -> tensor<2x4xf32>
// CHECK-NEXT: %[[RB:.*]] = dsc.reshape %[[B]] : tensor<4xf32> -> tensor<2x2xf32>
// CHECK-NEXT: %[[C:.*]] = dsc.concat(%[[RA]], %[[RB]]), dim = 1 : tensor<2x4xf32>, tensor<2x2xf32>
// CHECK-NEXT: %[[F:.*]] = dsc.reshape %[[C]] : tensor<2x6xf32> -> tensor<12xf32>
// CHECK-NEXT: %[[S:.*]] = dsc.reduce_scatter %[[F]] {dsc.bucket = 2 : i64} : tensor<12xf32> -> tensor<6xf32>
// CHECK-NEXT: %[[SA:.*]] = dsc.slice %[[S]], dim = 0, start = 0, end = 4, step = 1 : tensor<6xf32>
// CHECK-NEXT: %[[SB:.*]] = dsc.slice %[[S]], dim = 0, start = 4, end = 6, step = 1 : tensor<6xf32>
// CHECK-NEXT: dsc.add %[[SA]], %[[SA]]
// CHECK-NEXT: dsc.add %[[SB]], %[[SB]]
// CHECK-NOT:  dsc.reduce_scatter
// A bucket of 11 elements holds the first (8) but not both (8 + 4): no
// merge.
// SMALL-LABEL: func.func @reduce_scatter
// SMALL-NOT:   dsc.bucket
// SMALL-COUNT-2: dsc.reduce_scatter
// OFF-LABEL:   func.func @reduce_scatter
// OFF-NOT:     dsc.bucket
// OFF-COUNT-2: dsc.reduce_scatter
module attributes {dsc.world_size = 2 : i64} {
  func.func @reduce_scatter(%x: tensor<8xf32> {dsc.input = "x"}, %y: tensor<4xf32> {dsc.input = "y"})
      -> (tensor<4xf32> {dsc.output = "a"}, tensor<2xf32> {dsc.output = "b"}) {
    %a = dsc.exp %x : tensor<8xf32>
    %sa = dsc.reduce_scatter %a : tensor<8xf32> -> tensor<4xf32>
    %b = dsc.tanh %y : tensor<4xf32>
    %sb = dsc.reduce_scatter %b : tensor<4xf32> -> tensor<2xf32>
    %oa = dsc.add %sa, %sa : tensor<4xf32>, tensor<4xf32>
    %ob = dsc.add %sb, %sb : tensor<2xf32>, tensor<2xf32>
    return %oa, %ob : tensor<4xf32>, tensor<2xf32>
  }
}

// -----

// Stage-1/2 updates: each gathered shard's reshape and store wait for the
// bucket and move after it; rank r's shard of member i is column block i of
// row r of the gathered [W, sum S].
// CHECK-LABEL: func.func @all_gather
// CHECK:      %[[U:.*]] = dsc.neg
// CHECK:      %[[V:.*]] = dsc.neg
// CHECK-NEXT: %[[P:.*]] = dsc.concat(%[[U]], %[[V]]), dim = 0 : tensor<3xf32>, tensor<2xf32>
// CHECK-NEXT: %[[G:.*]] = dsc.all_gather %[[P]] {dsc.bucket = 2 : i64} : tensor<5xf32> -> tensor<10xf32>
// CHECK-NEXT: %[[R:.*]] = dsc.reshape %[[G]] : tensor<10xf32> -> tensor<2x5xf32>
// CHECK-NEXT: %[[CU:.*]] = dsc.slice %[[R]], dim = 1, start = 0, end = 3, step = 1 : tensor<2x5xf32>
// CHECK-NEXT: %[[WU:.*]] = dsc.reshape %[[CU]] : tensor<2x3xf32> -> tensor<6xf32>
// CHECK-NEXT: %[[CV:.*]] = dsc.slice %[[R]], dim = 1, start = 3, end = 5, step = 1 : tensor<2x5xf32>
// CHECK-NEXT: %[[WV:.*]] = dsc.reshape %[[CV]] : tensor<2x2xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[SU:.*]] = dsc.reshape %[[WU]] : tensor<6xf32> -> tensor<2x3xf32>
// CHECK-NEXT: dsc.store %[[SU]] to @u
// CHECK-NEXT: %[[SV:.*]] = dsc.slice %[[WV]]
// CHECK-NEXT: %[[SV2:.*]] = dsc.reshape %[[SV]] : tensor<3xf32> -> tensor<3x1xf32>
// OFF-LABEL:   func.func @all_gather
// OFF-COUNT-2: dsc.all_gather
module attributes {dsc.world_size = 2 : i64} {
  dsc.state parameter @u : tensor<2x3xf32>
  dsc.state parameter @v : tensor<3x1xf32>
  func.func @all_gather(%x: tensor<3xf32> {dsc.input = "x"}, %y: tensor<2xf32> {dsc.input = "y"}) {
    %u = dsc.neg %x : tensor<3xf32>
    %gu = dsc.all_gather %u : tensor<3xf32> -> tensor<6xf32>
    %wu = dsc.reshape %gu : tensor<6xf32> -> tensor<2x3xf32>
    dsc.store %wu to @u : tensor<2x3xf32>
    %v = dsc.neg %y : tensor<2xf32>
    %gv = dsc.all_gather %v : tensor<2xf32> -> tensor<4xf32>
    %sv = dsc.slice %gv, dim = 0, start = 0, end = 3, step = 1 : tensor<4xf32>
    %wv = dsc.reshape %sv : tensor<3xf32> -> tensor<3x1xf32>
    dsc.store %wv to @v : tensor<3x1xf32>
    return
  }
}

// -----

// All-reduces of any shape, scalars included, flattened into one; the
// second member's result is read by compute before the third: the bucket
// ends there (compute never waits for a bucket).
// CHECK-LABEL: func.func @all_reduce
// CHECK:      %[[FA:.*]] = dsc.reshape %{{.*}} : tensor<2x2xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[FB:.*]] = dsc.reshape %{{.*}} : tensor<f32> -> tensor<1xf32>
// CHECK-NEXT: %[[P:.*]] = dsc.concat(%[[FA]], %[[FB]]), dim = 0 : tensor<4xf32>, tensor<1xf32>
// CHECK-NEXT: %[[S:.*]] = dsc.all_reduce %[[P]] {dsc.bucket = 2 : i64} : tensor<5xf32>
// CHECK-NEXT: dsc.slice %[[S]], dim = 0, start = 0, end = 4
// CHECK-NEXT: dsc.reshape %{{.*}} : tensor<4xf32> -> tensor<2x2xf32>
// CHECK-NEXT: dsc.slice %[[S]], dim = 0, start = 4, end = 5
// CHECK-NEXT: dsc.reshape %{{.*}} : tensor<1xf32> -> tensor<f32>
// CHECK-NEXT: dsc.exp
// CHECK-NEXT: dsc.all_reduce %{{.*}} : tensor<3xf32>
module attributes {dsc.world_size = 2 : i64} {
  func.func @all_reduce(%x: tensor<2x2xf32> {dsc.input = "x"}, %y: tensor<f32> {dsc.input = "y"}, %z: tensor<3xf32> {dsc.input = "z"})
      -> (tensor<2x2xf32> {dsc.output = "a"}, tensor<f32> {dsc.output = "b"}, tensor<3xf32> {dsc.output = "c"}) {
    %a = dsc.all_reduce %x : tensor<2x2xf32>
    %b = dsc.all_reduce %y : tensor<f32>
    %e = dsc.exp %b : tensor<f32>
    %c = dsc.all_reduce %z : tensor<3xf32>
    return %a, %e, %c : tensor<2x2xf32>, tensor<f32>, tensor<3xf32>
  }
}

// -----

// Different element types do not share a bucket.
// CHECK-LABEL: func.func @types
// CHECK-NOT:   dsc.bucket
// CHECK-COUNT-2: dsc.all_reduce
module attributes {dsc.world_size = 2 : i64} {
  func.func @types(%x: tensor<4xf32> {dsc.input = "x"}, %y: tensor<4xbf16> {dsc.input = "y"})
      -> (tensor<4xf32> {dsc.output = "a"}, tensor<4xbf16> {dsc.output = "b"}) {
    %a = dsc.all_reduce %x : tensor<4xf32>
    %b = dsc.all_reduce %y : tensor<4xbf16>
    return %a, %b : tensor<4xf32>, tensor<4xbf16>
  }
}

// RUN: dsc-opt %s --dsc-zero=stage=1 --split-input-file -verify-diagnostics

// An expert's state that ZeRO partitioned over its expert-data group
// already is refused, located, like any other partitioned state.
module attributes {dsc.world_size = 4 : i64, dsc.expert_parallel_size = 2 : i64} {
  dsc.state parameter @e {partition_of = array<i64: 4, 3>, partition_group = 1 : i32} : tensor<2x3xf32>
  // expected-error @+1 {{is partitioned already; run --dsc-zero once}}
  dsc.state optimizer @e.exp_avg {partition_of = array<i64: 4, 3>, partition_group = 2 : i32} : tensor<3xf32>
}

// -----

// Expert groups that do not divide the ranks have no expert-data group
// to partition the experts over.
// expected-error @+1 {{'builtin.module' op dsc.expert_parallel_size 3 does not divide dsc.world_size 4}}
module attributes {dsc.world_size = 4 : i64, dsc.expert_parallel_size = 3 : i64} {
  dsc.state optimizer @m : tensor<4xf32>
}

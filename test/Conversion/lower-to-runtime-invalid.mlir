// RUN: dsc-opt %s --dsc-lower-to-runtime --split-input-file -verify-diagnostics

// expected-error @+1 {{expected one graph function to lower, found 2}}
module {
  func.func @a() { return }
  func.func @b() { return }
}

// -----

func.func @forward(%x: tensor<4xf32> {dsc.input = "x"}) -> tensor<4xf32> {
  %c = arith.constant dense<1.0> : tensor<4xf32>
  // expected-error @-1 {{cannot lower 'arith.constant' to the runtime}}
  return %c : tensor<4xf32>
}

// -----

// expected-error @+1 {{graph input #0 must be a statically shaped tensor, got 'i32'}}
func.func @forward(%x: i32) {
  return
}

// -----

// expected-error @+1 {{graph output #0 must be a statically shaped tensor, got 'i32'}}
func.func @forward(%x: tensor<4xf32>) -> i32 {
  %c = arith.constant 0 : i32
  return %c : i32
}

// -----

// expected-error @+1 {{the graph must be one block to lower, it has 2}}
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
^bb1:
  return %x : tensor<4xf32>
}

// -----

// A store writes the state in place: reading the old value after it is an
// error, not a silent read of the new one.
dsc.state parameter @w : tensor<4xf32>
func.func @read_after_store(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<4xf32> {dsc.output = "y"}) {
  %w = dsc.load @w : tensor<4xf32>
  dsc.store %x to @w : tensor<4xf32>
  // expected-error @+1 {{reads the old value of @w after the dsc.store that overwrites it}}
  %y = dsc.relu %w : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dsc.state parameter @w : tensor<4xf32>
func.func @load_after_store(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<4xf32> {dsc.output = "y"}) {
  dsc.store %x to @w : tensor<4xf32>
  // expected-error @+1 {{reads @w after it is stored; move the load before the dsc.store}}
  %w = dsc.load @w : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

// Memory tiers (ZeRO-Offload): an op reads one tier only, a collective the
// device's, and a store writes its state's tier.
dsc.state optimizer @m on host : tensor<4xf32>
func.func @mixed_tiers(%x: tensor<4xf32> {dsc.input = "x"}) -> tensor<4xf32> {
  %m = dsc.load @m : tensor<4xf32>
  // expected-error @+1 {{'dsc.add' op reads tensors on the host and on the device; copy them to one tier with dsc.transfer}}
  %s = dsc.add %m, %x : tensor<4xf32>, tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

dsc.state optimizer @m on host : tensor<4xf32>
func.func @host_to_collective(%x: tensor<4xf32> {dsc.input = "x"}) -> tensor<4xf32> {
  %m = dsc.load @m : tensor<4xf32>
  // expected-error @+1 {{'dsc.all_reduce' op reads a host tensor, but runs on the device}}
  %s = dsc.all_reduce %m : tensor<4xf32>
  %d = dsc.transfer %s to device : tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

dsc.state optimizer @m on host : tensor<4xf32>
func.func @store_device_into_host(%x: tensor<4xf32> {dsc.input = "x"}) -> tensor<4xf32> {
  %y = dsc.add %x, %x : tensor<4xf32>, tensor<4xf32>
  // expected-error @+1 {{'dsc.store' op stores a device tensor into @m, which lives on the host; copy it with dsc.transfer}}
  dsc.store %y to @m : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @transfer_to_where_it_is(%x: tensor<4xf32> {dsc.input = "x"}) -> tensor<4xf32> {
  // expected-error @+1 {{'dsc.transfer' op moves a tensor to the device, where it already is}}
  %d = dsc.transfer %x to device : tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

// A load of an NVMe state yields a host tensor (ZeRO-Infinity).
dsc.state optimizer @m on nvme : tensor<4xf32>
func.func @nvme_on_device(%x: tensor<4xf32> {dsc.input = "x"}) -> tensor<4xf32> {
  %m = dsc.load @m : tensor<4xf32>
  // expected-error @+1 {{'dsc.add' op reads tensors on the host and on the device; copy them to one tier with dsc.transfer}}
  %s = dsc.add %m, %x : tensor<4xf32>, tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Its host buffer lives from its read to its write: one update reads it.
dsc.state optimizer @m on nvme : tensor<4xf32>
func.func @nvme_not_an_update(%x: tensor<4xf32> {dsc.input = "x"}) -> tensor<4xf32> {
  // expected-error @+1 {{'dsc.load' op reads @m, a state on nvme: only one optimizer update may read it (its host buffer lives from its read to its write)}}
  %m = dsc.load @m : tensor<4xf32>
  %s = dsc.add %m, %m : tensor<4xf32>, tensor<4xf32>
  %d = dsc.transfer %s to device : tensor<4xf32>
  return %d : tensor<4xf32>
}

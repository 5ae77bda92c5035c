// RUN: dsc-opt %s -split-input-file -verify-diagnostics

func.func @unaligned() attributes {dscrt.arena_bytes = 1024 : i64} {
  // expected-error @+1 {{'dscrt.buffer' op offset 100 must be a non-negative multiple of 256}}
  %b = dscrt.buffer 100 : memref<4xf32>
  return
}

// -----

func.func @past_arena() attributes {dscrt.arena_bytes = 512 : i64} {
  // expected-error @+1 {{'dscrt.buffer' op [256, 768) extends past the arena of 512 bytes}}
  %b = dscrt.buffer 256 : memref<128xf32>
  return
}

// -----

func.func @no_arena() {
  // expected-error @+1 {{'dscrt.buffer' op needs a 'dscrt.arena_bytes' on its function}}
  %b = dscrt.buffer 0 : memref<4xf32>
  return
}

// -----

func.func @constant_type() {
  // expected-error @+1 {{'dscrt.constant' op value of type 'tensor<2xf32>' does not fit the buffer 'memref<3xf32>'}}
  %c = dscrt.constant dense<1.0> : tensor<2xf32> : memref<3xf32>
  return
}

// -----

func.func @view_count(%x: memref<4xf32>) {
  // expected-error @+1 {{'dscrt.view' op cannot view 'memref<4xf32>' as 'memref<5xf32>' (element type and count must match)}}
  %v = dscrt.view %x : memref<4xf32> to memref<5xf32>
  return
}

// -----

func.func @view_space(%x: memref<2x2xf32, #dscrt.host>) {
  // expected-error @+1 {{'dscrt.view' op cannot view 'memref<2x2xf32, #dscrt.host>' as 'memref<4xf32>' (a view stays in its buffer's memory)}}
  %v = dscrt.view %x : memref<2x2xf32, #dscrt.host> to memref<4xf32>
  return
}

// -----

func.func @kernel_args(%s: !dscrt.stream, %x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{'dscrt.kernel' op body argument 'tensor<8xf32>' does not match input 'memref<4xf32>'}}
  dscrt.kernel on %s ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: tensor<8xf32>):
    dscrt.yield %a : tensor<8xf32>
  }
  return
}

// -----

func.func @kernel_arity(%s: !dscrt.stream, %x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{'dscrt.kernel' op body has 0 arguments for 1 inputs}}
  dscrt.kernel on %s ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0:
    %c = dsc.constant dense<1.0> : tensor<4xf32>
    dscrt.yield %c : tensor<4xf32>
  }
  return
}

// -----

func.func @kernel_yield_count(%s: !dscrt.stream, %x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{'dscrt.kernel' op yields 2 values for 1 outputs}}
  dscrt.kernel on %s ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    dscrt.yield %a, %a : tensor<4xf32>, tensor<4xf32>
  }
  return
}

// -----

func.func @kernel_yield_type(%s: !dscrt.stream, %x: memref<4xf32>, %y: memref<4xi64>) {
  // expected-error @+1 {{'dscrt.kernel' op yields 'tensor<4xf32>' into output 'memref<4xi64>'}}
  dscrt.kernel on %s ins(%x : memref<4xf32>) outs(%y : memref<4xi64>) {
  ^bb0(%a: tensor<4xf32>):
    dscrt.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @dynamic(%x: memref<?xf32>) {
  // expected-error @+1 {{'dscrt.view' op operand #0 must be statically shaped memref}}
  %v = dscrt.view %x : memref<?xf32> to memref<4xf32>
  return
}

// -----

func.func @exit_before_output() {
  // expected-error @+1 {{'dscrt.eval_exit' op must follow every dscrt.output: an evaluation step would return before writing it}}
  dscrt.eval_exit
  %l = dscrt.output 0 "loss" : memref<f32, #dscrt.host>
  return
}

// -----

func.func @exit_before_output_copy(%c: memref<f32>) {
  %s = dscrt.stream "compute"
  %l = dscrt.output 0 "loss" : memref<f32, #dscrt.host>
  // expected-error @+1 {{'dscrt.eval_exit' op must follow the dscrt.copy filling every dscrt.output: an evaluation step would return before writing it}}
  dscrt.eval_exit
  dscrt.copy %c to %l on %s : memref<f32> to memref<f32, #dscrt.host>
  return
}

// -----

func.func @input_in_device_memory() {
  // expected-error @+1 {{'dscrt.input' op result #0 must be statically shaped memref in host memory (#dscrt.host)}}
  %t = dscrt.input 0 "tokens" : memref<2x8xi64>
  return
}

// -----

func.func @micro_step_exit_before_eval_exit() {
  // expected-error @+1 {{'dscrt.micro_step_exit' op is followed by a 'dscrt.eval_exit': a step has one micro_step_exit, after its eval_exit}}
  dscrt.micro_step_exit
  dscrt.eval_exit
  return
}

// -----

func.func @micro_step_exit_twice() {
  // expected-error @+1 {{'dscrt.micro_step_exit' op is followed by a 'dscrt.micro_step_exit': a step has one micro_step_exit, after its eval_exit}}
  dscrt.micro_step_exit
  dscrt.micro_step_exit
  return
}

// -----

func.func @exit_twice() {
  // expected-error @+1 {{'dscrt.eval_exit' op appears twice in the step}}
  dscrt.eval_exit
  dscrt.eval_exit
  return
}

// -----

func.func @kernel_on_host_and_device_memory(%s: !dscrt.stream, %x: memref<4xf32, #dscrt.host>, %y: memref<4xf32>) {
  // expected-error @+1 {{'dscrt.kernel' op reads or writes buffers in host and in device memory; a kernel runs on one of them}}
  dscrt.kernel on %s ins(%x : memref<4xf32, #dscrt.host>) outs(%y : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    dscrt.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @copy_shape(%s: !dscrt.stream, %x: memref<2x8xi64, #dscrt.host>, %y: memref<16xi64>) {
  // expected-error @+1 {{'dscrt.copy' op cannot copy 'memref<2x8xi64, #dscrt.host>' to 'memref<16xi64>' (shape and element type must match)}}
  dscrt.copy %x to %y on %s : memref<2x8xi64, #dscrt.host> to memref<16xi64>
  return
}

// -----

func.func @copy_type(%s: !dscrt.stream, %x: memref<4xf32>, %y: memref<4xf64, #dscrt.host>) {
  // expected-error @+1 {{'dscrt.copy' op cannot copy 'memref<4xf32>' to 'memref<4xf64, #dscrt.host>' (shape and element type must match)}}
  dscrt.copy %x to %y on %s : memref<4xf32> to memref<4xf64, #dscrt.host>
  return
}

// -----

func.func @copy_onto_itself(%s: !dscrt.stream, %x: memref<4xf32>) {
  // expected-error @+1 {{'dscrt.copy' op copies a buffer onto itself}}
  dscrt.copy %x to %x on %s : memref<4xf32> to memref<4xf32>
  return
}

// -----

func.func @stream_twice() {
  %a = dscrt.stream "compute"
  // expected-error @+1 {{'dscrt.stream' op 'compute' names a stream already created in this block}}
  %b = dscrt.stream "compute"
  return
}

// -----

func.func @stream_unnamed() {
  // expected-error @+1 {{'dscrt.stream' op needs a name}}
  %a = dscrt.stream ""
  return
}

// -----

func.func @wait_own_event() {
  %a = dscrt.stream "compute"
  %e = dscrt.record %a
  // expected-error @+1 {{'dscrt.wait' op stream 'compute' waits for an event of its own}}
  dscrt.wait %a for %e
  return
}

// -----

func.func @wait_unrecorded(%e: !dscrt.event) {
  %a = dscrt.stream "compute"
  // expected-error @+1 {{'dscrt.wait' op waits for an event not recorded earlier in the same block}}
  dscrt.wait %a for %e
  return
}

// -----

func.func @wait_other_block(%x: memref<4xf32>, %y: memref<4xf32>) {
  %a = dscrt.stream "compute"
  %b = dscrt.stream "comm"
  %e = dscrt.record %a
  dscrt.kernel on %a ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%v: tensor<4xf32>):
    // expected-error @+1 {{'dscrt.wait' op waits for an event not recorded earlier in the same block}}
    dscrt.wait %b for %e
    dscrt.yield %v : tensor<4xf32>
  }
  return
}

// -----

func.func @collectives_on_two_streams(%x: memref<4xf32>) {
  %a = dscrt.stream "comm"
  %b = dscrt.stream "comm2"
  // expected-note @+1 {{the first collective}}
  dscrt.all_reduce %x on %a {sequence = 0 : i64} : memref<4xf32>
  // expected-error @+1 {{'dscrt.all_reduce' op runs on stream 'comm2', but the first collective of the block runs on 'comm': collectives run on one stream}}
  dscrt.all_reduce %x on %b {sequence = 1 : i64} : memref<4xf32>
  return
}

// -----

func.func @collective_beside_kernels(%x: memref<4xf32>, %y: memref<4xf32>) {
  %a = dscrt.stream "compute"
  // expected-note @+1 {{the 'dscrt.kernel'}}
  dscrt.kernel on %a ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%v: tensor<4xf32>):
    dscrt.yield %v : tensor<4xf32>
  }
  // expected-error @+1 {{'dscrt.all_reduce' op runs on stream 'compute', which also runs a 'dscrt.kernel': collectives have a stream of their own}}
  dscrt.all_reduce %y on %a {sequence = 0 : i64} : memref<4xf32>
  return
}

// -----

func.func @bad_memory_space() {
  // expected-error @+1 {{unknown attribute `device` in dialect `dscrt`}}
  %t = dscrt.input 0 "tokens" : memref<2x8xi64, #dscrt.device>
  return
}

// -----

module attributes {dsc.world_size = 2 : i64} {
  func.func @all_gather_ratio(%x: memref<8xf32>, %y: memref<24xf32>) {
    %comm = dscrt.stream "comm"
    // expected-error @+1 {{'dscrt.all_gather' op relates a whole of 24 elements to shards of 8 over 2 ranks: the whole must be the shards of every rank}}
    dscrt.all_gather %x to %y on %comm {sequence = 0 : i64} : memref<8xf32> to memref<24xf32>
    return
  }
}

// -----

func.func @reduce_scatter_types(%x: memref<8xf32>, %y: memref<4xf64>) {
  %comm = dscrt.stream "comm"
  // expected-error @+1 {{'dscrt.reduce_scatter' op moves 'f64' to 'f32': element types differ}}
  dscrt.reduce_scatter %x to %y on %comm {sequence = 0 : i64} : memref<8xf32> to memref<4xf64>
  return
}

// -----

func.func @copy_shard_ratio(%x: memref<8xf32>, %y: memref<3xf32>) {
  %compute = dscrt.stream "compute"
  // expected-error @+1 {{'dscrt.copy_shard' op relates a whole of 8 elements to shards of 3: the whole must be the shards of every rank}}
  dscrt.copy_shard %x to %y on %compute : memref<8xf32> to memref<3xf32>
  return
}

// -----

func.func @all_gather_beside_copies(%x: memref<4xf32>, %y: memref<8xf32>, %z: memref<4xf32>) {
  %a = dscrt.stream "compute"
  // expected-error @+1 {{'dscrt.all_gather' op runs on stream 'compute', which also runs a 'dscrt.copy_shard': collectives have a stream of their own}}
  dscrt.all_gather %x to %y on %a {sequence = 0 : i64} : memref<4xf32> to memref<8xf32>
  // expected-note @+1 {{the 'dscrt.copy_shard'}}
  dscrt.copy_shard %y to %z on %a : memref<8xf32> to memref<4xf32>
  return
}

// -----

func.func @library_unknown(%x: memref<4xf32>, %y: memref<4xf32>) {
  %s = dscrt.stream "compute"
  // expected-error @+1 {{'dscrt.kernel' op names 'fft', which is not a kernel of the library}}
  dscrt.kernel "fft" on %s ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    dscrt.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @library_wrong_body(%x: memref<4xf32>, %y: memref<4xf32>) {
  %s = dscrt.stream "compute"
  // expected-error @+1 {{'dscrt.kernel' op names library kernel 'gemm', but its body is computed by 'copy'}}
  dscrt.kernel "gemm" on %s ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    dscrt.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @library_optimizer_wrong_kind(%p: memref<4xf32>, %g: memref<4xf32>, %lr: memref<f32>, %q: memref<4xf32>) {
  %s = dscrt.stream "compute"
  // expected-error @+1 {{'dscrt.kernel' op names library kernel 'adam_update', but its body is computed by 'sgd_update'}}
  dscrt.kernel "adam_update" on %s ins(%p, %g, %lr : memref<4xf32>, memref<4xf32>, memref<f32>) outs(%q : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<f32>):
    %n = dsc.sgd_update params(%a : tensor<4xf32>) grads(%b : tensor<4xf32>)
        momentum_buffers() copies() lr(%c : tensor<f32>)
        {momentum = 0.0, weight_decay = 0.0} -> (tensor<4xf32>)
    dscrt.yield %n : tensor<4xf32>
  }
  return
}

// -----

func.func @library_not_for_chains(%x: memref<4xf32>, %y: memref<4xf32>) {
  %s = dscrt.stream "compute"
  // expected-error @+1 {{'dscrt.kernel' op names library kernel 'copy', but its body is computed by no library kernel}}
  dscrt.kernel "copy" on %s ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %t = dsc.tanh %a : tensor<4xf32>
    dscrt.yield %t : tensor<4xf32>
  }
  return
}

// -----

func.func @library_row_for_a_copy(%x: memref<4xf32>, %y: memref<4xf32>) {
  %s = dscrt.stream "compute"
  // expected-error @+1 {{'dscrt.kernel' op names library kernel 'row', but its body is computed by 'copy'}}
  dscrt.kernel "row" on %s ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    dscrt.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @library_classifier_reduced(%x: memref<4x8xf32>, %t: memref<4xi64>, %y: memref<f32>) {
  %s = dscrt.stream "compute"
  // expected-error @+1 {{'dscrt.kernel' op names library kernel 'classifier', but its body is computed by no library kernel}}
  dscrt.kernel "classifier" on %s ins(%x, %t : memref<4x8xf32>, memref<4xi64>) outs(%y : memref<f32>) {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<4xi64>):
    %l = dsc.cross_entropy %a, %b : tensor<4x8xf32>, tensor<4xi64>
    dscrt.yield %l : tensor<f32>
  }
  return
}

// -----

func.func @host_buffer_past_host_arena() attributes {dscrt.arena_bytes = 1024 : i64, dscrt.host_arena_bytes = 256 : i64} {
  // expected-error @+1 {{'dscrt.buffer' op [256, 272) extends past the host arena of 256 bytes}}
  %b = dscrt.buffer 256 : memref<4xf32, #dscrt.host>
  return
}

// -----

func.func @host_buffer_without_host_arena() attributes {dscrt.arena_bytes = 1024 : i64} {
  // expected-error @+1 {{'dscrt.buffer' op needs a 'dscrt.host_arena_bytes' on its function}}
  %b = dscrt.buffer 0 : memref<4xf32, #dscrt.host>
  return
}

// -----

module attributes {dsc.world_size = 2 : i64} {
  func.func @transfer_without_stages(%act: memref<2x8xf32>) {
    %comm = dscrt.stream "comm"
    // expected-error @+1 {{'dscrt.pipeline_send' op moves data between pipeline stages, but the module has none}}
    dscrt.pipeline_send %act to next on %comm {micro_batch = 0 : i64, sequence = 0 : i64} : memref<2x8xf32>
    return
  }
}

// -----

module attributes {dsc.pipeline_parallel_size = 2 : i64, dsc.world_size = 2 : i64} {
  func.func @negative_micro_batch(%act: memref<2x8xf32>) {
    %comm = dscrt.stream "comm"
    // expected-error @+1 {{'dscrt.pipeline_recv' op micro_batch -1 is negative}}
    dscrt.pipeline_recv %act from previous on %comm {micro_batch = -1 : i64, sequence = 0 : i64} : memref<2x8xf32>
    return
  }
}

// -----

module attributes {dsc.pipeline_parallel_size = 2 : i64, dsc.world_size = 2 : i64} {
  func.func @transfer_on_compute(%act: memref<2x8xf32>, %out: memref<2x8xf32>) {
    %compute = dscrt.stream "compute"
    // expected-note @+1 {{the 'dscrt.kernel'}}
    dscrt.kernel on %compute ins(%act : memref<2x8xf32>) outs(%out : memref<2x8xf32>) {
    ^bb0(%x: tensor<2x8xf32>):
      dscrt.yield %x : tensor<2x8xf32>
    }
    // expected-error @+1 {{'dscrt.pipeline_send' op runs on stream 'compute', which also runs a 'dscrt.kernel': collectives have a stream of their own}}
    dscrt.pipeline_send %out to next on %compute {micro_batch = 0 : i64, sequence = 0 : i64} : memref<2x8xf32>
    return
  }
}

// -----

func.func @all_to_all_beside_nvme_writes(%x: memref<4xf32>, %h: memref<4xf32, #dscrt.host>) {
  %a = dscrt.stream "nvme"
  // expected-error @+1 {{'dscrt.all_to_all' op runs on stream 'nvme', which also runs a 'dscrt.nvme_write': collectives have a stream of their own}}
  dscrt.all_to_all %x on %a {sequence = 0 : i64} : memref<4xf32>
  // expected-note @+1 {{the 'dscrt.nvme_write'}}
  dscrt.nvme_write %h to 0 "w" on %a : memref<4xf32, #dscrt.host>
  return
}

// -----

func.func @pipeline_recv_on_a_second_stream(%x: memref<4xf32>) {
  %a = dscrt.stream "comm"
  %b = dscrt.stream "comm2"
  // expected-note @+1 {{the first collective}}
  dscrt.all_to_all %x on %a {sequence = 0 : i64} : memref<4xf32>
  // expected-error @+1 {{'dscrt.pipeline_recv' op runs on stream 'comm2', but the first collective of the block runs on 'comm': collectives run on one stream}}
  dscrt.pipeline_recv %x from previous on %b {micro_batch = 0 : i64, sequence = 1 : i64} : memref<4xf32>
  return
}

// -----

func.func @step_key_negative_offset() {
  // expected-error @+1 {{'dscrt.step_key' op sample_offset must be >= 0, got -1}}
  %k = dscrt.step_key sample_offset = -1 : memref<4xi64, #dscrt.host>
  return
}

//===- DSCEnums.td - dsc enumerations ----------------------*- tablegen -*-===//

#ifndef DSC_DIALECT_DSC_IR_DSCENUMS_TD
#define DSC_DIALECT_DSC_IR_DSCENUMS_TD

include "mlir/IR/EnumAttr.td"

def DSC_StateRole : I32EnumAttr<"StateRole", "role of a named model tensor", [
    I32EnumAttrCase<"parameter", 0>,
    I32EnumAttrCase<"buffer", 1>,
    // Optimizer state (exp_avg, momentum, the step count): starts at zero
    // when a weights file does not carry it; checkpoints do.
    I32EnumAttrCase<"optimizer", 2>,
    // Accumulated gradients (gradient accumulation over micro-batches):
    // start at zero like optimizer state; ZeRO stage 2 partitions them.
    I32EnumAttrCase<"gradient", 3>,
    // Mixed precision's fp32 master weight of parameter `X`, named
    // `X.master` (--dsc-mixed-precision): the optimizer updates it and
    // stores its rounding into the 16-bit parameter. A weights file without
    // it gives it the fp32 weight `X`.
    I32EnumAttrCase<"master", 4>,
    // A frozen model's weight (--dsc-distill's teacher), named
    // `teacher.<its own name>`: read by the forward only, never stored, no
    // gradient, no optimizer state; dsc-run loads it from the teacher's own
    // weights file (--teacher-weights) under its own name.
    I32EnumAttrCase<"teacher", 5>,
  ]> {
  let cppNamespace = "::mlir::dsc";
}

// Where a state lives (ZeRO-Offload, --dsc-offload): device memory, where
// kernels and collectives run; pinned host memory, where only the
// optimizer's host update reads and writes it; or NVMe (ZeRO-Infinity), a
// per-rank file the runtime reads into host buffers before that update and
// writes back after it. Tensors live on the device or the host only: a
// load of an NVMe state yields a host tensor.
def DSC_MemoryTier : I32EnumAttr<"MemoryTier", "where a state lives", [
    I32EnumAttrCase<"device", 0>,
    I32EnumAttrCase<"host", 1>,
    I32EnumAttrCase<"nvme", 2>,
  ]> {
  let cppNamespace = "::mlir::dsc";
}

def DSC_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "form of gelu: exact (erf) or the tanh approximation", [
    I32EnumAttrCase<"erf", 0>,
    I32EnumAttrCase<"tanh", 1>,
  ]> {
  let cppNamespace = "::mlir::dsc";
}

def DSC_ComparisonDirection : I32EnumAttr<"ComparisonDirection",
    "elementwise comparison", [
    I32EnumAttrCase<"eq", 0>,
    I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>,
    I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>,
    I32EnumAttrCase<"ge", 5>,
  ]> {
  let cppNamespace = "::mlir::dsc";
}

def DSC_LossReduction : I32EnumAttr<"LossReduction",
    "how a per-element loss is reduced (PyTorch's `reduction`)", [
    I32EnumAttrCase<"mean", 0>,
    I32EnumAttrCase<"sum", 1>,
    I32EnumAttrCase<"none", 2>,
  ]> {
  let cppNamespace = "::mlir::dsc";
}

// The ranks a collective runs over. With the module's expert-parallel size
// P (`dsc.expert_parallel_size`, 1 when absent) and world size W, rank r's
// expert group is the P consecutive ranks of r / P (r's index r % P): the
// ranks that share the experts of a layer between them; its expert-data
// group is the W / P ranks with the same r % P (index r / P): the replicas
// of the same experts, over which their gradients are summed.
//
// With the module's tensor-parallel size T (`dsc.tensor_parallel_size`, 1
// when absent), Megatron's layout puts the tensor group innermost: rank r's
// tensor group is the T consecutive ranks of r / T (index r % T), the ranks
// that split each layer's weights between them; its data group is the W / T
// ranks with the same r % T (index r / T), over which the gradients of the
// (split or replicated) parameters are summed and the loss is averaged.
//
// With both (DeepSpeed-TED: experts under tensor parallelism, P * T dividing
// W) the expert groups run along the data dimension: with t = r % T and
// d = r / T, r's expert group is the P ranks (d / P * P + k) * T + t (index
// d % P) and its expert-data group the W / (P * T) ranks
// (d % P + k * P) * T + t (index d / P); with T = 1 the layout above.
def DSC_CollectiveGroup : I32EnumAttr<"CollectiveGroup",
    "the ranks a collective runs over", [
    I32EnumAttrCase<"world", 0>,
    I32EnumAttrCase<"expert", 1>,
    I32EnumAttrCase<"expert_data", 2>,
    I32EnumAttrCase<"tensor", 3>,
    I32EnumAttrCase<"data", 4>,
    // The P stages of one pipeline (same tensor and data index): its ranks
    // pass activations and their gradients to their neighbours.
    I32EnumAttrCase<"pipeline", 5>,
  ]> {
  let cppNamespace = "::mlir::dsc";
}

def DSC_PipelinePeer : I32EnumAttr<"PipelinePeer",
    "the neighbour of a pipeline stage that a point-to-point transfer is with", [
    I32EnumAttrCase<"next", 0>,
    I32EnumAttrCase<"previous", 1>,
  ]> {
  let cppNamespace = "::mlir::dsc";
}

#endif // DSC_DIALECT_DSC_IR_DSCENUMS_TD

//===- MemoryTiers.h - where each tensor of a graph lives -------*- C++ -*-===//
//
// ZeRO-Offload keeps optimizer state in host memory (`dsc.state ... on
// host`) and moves tensors between tiers with `dsc.transfer`. Every other
// op computes where its operands are, so the tier of each tensor follows
// from the graph; the offload pass and the lowering ask it here, in one
// forward walk, and both check that no op mixes tiers.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_DIALECT_DSC_IR_MEMORYTIERS_H
#define DSC_DIALECT_DSC_IR_MEMORYTIERS_H

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "llvm/ADT/DenseMap.h"

namespace mlir::dsc {

/// Module attribute of parameters on NVMe (`--dsc-offload=param=nvme`): the
/// loads read ahead of their use (DeepSpeed's offload_param.buffer_count).
inline constexpr llvm::StringLiteral kNvmeParamBufferCountAttrName =
    "dsc.nvme_param_buffer_count";

/// The tier of every tensor of a graph body.
class MemoryTiers {
public:
  /// Walks `body` in order. Fails, with an error at the first op that
  /// breaks a rule, when an op reads tensors of both tiers, a collective
  /// reads a host tensor, a `dsc.transfer` moves a tensor to the tier it is
  /// on, or a `dsc.store` writes a tensor of another tier than its state's.
  static FailureOr<MemoryTiers> compute(Block &body);

  MemoryTier of(Value value) const {
    return onHost.contains(value) ? MemoryTier::host : MemoryTier::device;
  }
  bool isHost(Operation *op) const { return hostOps.contains(op); }

private:
  llvm::DenseSet<Value> onHost;
  /// Ops that read or write host tensors (not the transfers): they run on
  /// the host CPU.
  llvm::DenseSet<Operation *> hostOps;
};

} // namespace mlir::dsc

#endif // DSC_DIALECT_DSC_IR_MEMORYTIERS_H

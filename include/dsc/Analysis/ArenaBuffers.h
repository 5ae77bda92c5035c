//===- ArenaBuffers.h - the buffers of a lowered step and their lives -*- C++ -*-===//
//
// The buffers (dscrt.alloc) of a step lowered by --dsc-lower-to-runtime,
// each with the live range the memory plan gives it: from its allocation to
// its last use through any view and, for a buffer a collective reads or
// writes, to the first wait for that collective's stream (the collective
// runs on another stream, so its buffers are busy until compute waits for
// it). --dsc-plan-memory places them (BufferPlan.h); the step report reads
// which of them fill the arena at its busiest point.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_ANALYSIS_ARENABUFFERS_H
#define DSC_ANALYSIS_ARENABUFFERS_H

#include "dsc/Analysis/BufferPlan.h"
#include "dsc/Dialect/DSCRT/IR/DSCRTDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace mlir::dsc {

/// The runtime allocator's granularity, which the plan rounds buffers to.
inline constexpr int64_t kArenaAlignment = 256;

struct ArenaBuffer {
  dscrt::AllocOp alloc;
  /// Positions are indices of the ops of the function's body.
  BufferRequest request;
};

/// Every dscrt.alloc of `func`'s body in device memory (with `host`: in
/// host memory, #dscrt.host, each alive for the whole step) with its live
/// range. Fails, with an error at the allocation, where a buffer's size
/// overflows int64.
FailureOr<SmallVector<ArenaBuffer>> collectArenaBuffers(func::FuncOp func,
                                                        bool host = false);

/// Buffers alive together, of one type, written by one kind of op and last
/// read by one kind of op: "bf16 12288x49152 written by dsc.matmul, last
/// read by dscrt.reduce_scatter" is a weight gradient waiting for its
/// reduction.
struct LiveBufferGroup {
  std::string type;       // element type and shape: "bf16 12288x49152"
  std::string writer;     // the op that first writes them
  std::string lastReader; // the op that last uses them
  int64_t buffers = 0;
  int64_t bytes = 0;      // together, each rounded to kArenaAlignment
  int64_t firstUse = 0;   // the earliest allocation among them
  int64_t lastUse = 0;    // the latest end of life among them
};

/// What is alive where the plan's live bytes peak.
struct ArenaPeak {
  int64_t position = 0;  // the op index of the busiest point
  int64_t positions = 0; // ops in the step
  int64_t liveBytes = 0; // the plan's maxLiveBytes
  std::vector<LiveBufferGroup> groups; // most bytes first
};

/// The buffers of `buffers` alive at `plan.busiestPosition`, grouped.
ArenaPeak describeBusiestPoint(func::FuncOp func,
                               ArrayRef<ArenaBuffer> buffers,
                               const BufferPlan &plan);

} // namespace mlir::dsc

#endif // DSC_ANALYSIS_ARENABUFFERS_H

//===- CommTypes.h - element types, reductions, collective kinds -*- C++
//-*-===//
//
// The small vocabulary shared by the communicator, its byte counters and its
// watchdog. CommDType is the comm component's own element-type enum; when the
// io component's tensor dtype lands, a one-line mapping converts between the
// two (the names below are the safetensors spellings, lower-cased).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_COMMTYPES_H
#define DSC_RUNTIME_COMMTYPES_H

#include <cstddef>
#include <cstdint>

namespace dsc::rt {

/// Element types a collective can move or reduce.
enum class CommDType : std::uint8_t { F32, F64, I32, I64, BF16, F16 };

/// Reductions of allReduce and reduceScatter.
enum class ReduceOp : std::uint8_t { Sum, Max };

/// Every collective the communicator issues; Count is the number of kinds.
enum class CollectiveKind : std::uint8_t {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Barrier,
  AllToAll,
  Send, // point to point: a pipeline stage's message to a neighbour
  Recv,
  Count
};

constexpr std::size_t kCollectiveKindCount =
    static_cast<std::size_t>(CollectiveKind::Count);

/// Bytes of one element.
std::size_t byteSize(CommDType dtype);

/// "f32", "f64", "i32", "i64", "bf16", "f16".
const char *name(CommDType dtype);

/// "sum", "max".
const char *name(ReduceOp op);

/// "allReduce", "allGather", ... (the method names of Communicator).
const char *name(CollectiveKind kind);

} // namespace dsc::rt

#endif // DSC_RUNTIME_COMMTYPES_H

//===- MpiBf16Ops.h - MPI user operations for bf16 --------------*- C++ -*-===//
//
// Sum and max over bf16 elements carried as MPI_UINT16_T. Private to the
// comm component.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_LIB_COMM_MPIBF16OPS_H
#define DSC_RUNTIME_LIB_COMM_MPIBF16OPS_H

#include <mpi.h>

namespace dsc::rt {

/// MPI_User_function: inout[i] = bf16(float(in[i]) + float(inout[i])).
void bf16SumOp(void *in, void *inout, int *count, MPI_Datatype *type);

/// MPI_User_function: inout[i] = the larger of in[i], inout[i]; NaN when
/// either is NaN (as torch.maximum).
void bf16MaxOp(void *in, void *inout, int *count, MPI_Datatype *type);

} // namespace dsc::rt

#endif // DSC_RUNTIME_LIB_COMM_MPIBF16OPS_H

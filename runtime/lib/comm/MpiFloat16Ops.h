//===- MpiFloat16Ops.h - MPI user operations for bf16 and f16 ---*- C++ -*-===//
//
// MPI has no 16-bit float types, so bf16 and f16 reductions are MPI user
// operations over elements carried as MPI_UINT16_T: each widens to float,
// combines, and rounds back to nearest even (what PyTorch and NCCL do for
// each partial result). Private to the comm component.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_LIB_COMM_MPIFLOAT16OPS_H
#define DSC_RUNTIME_LIB_COMM_MPIFLOAT16OPS_H

#include <mpi.h>

namespace dsc::rt {

/// MPI_User_function: inout[i] = bf16(float(in[i]) + float(inout[i])).
void bf16SumOp(void *in, void *inout, int *count, MPI_Datatype *type);

/// MPI_User_function: inout[i] = the larger of in[i], inout[i]; NaN when
/// either is NaN (as torch.maximum).
void bf16MaxOp(void *in, void *inout, int *count, MPI_Datatype *type);

/// The same two for IEEE half (f16) elements.
void f16SumOp(void *in, void *inout, int *count, MPI_Datatype *type);
void f16MaxOp(void *in, void *inout, int *count, MPI_Datatype *type);

} // namespace dsc::rt

#endif // DSC_RUNTIME_LIB_COMM_MPIFLOAT16OPS_H

//===- DSCRTInterfaces.td - dscrt op interfaces ---------------*- tablegen -*-===//

#ifndef DSC_DIALECT_DSCRT_IR_DSCRTINTERFACES_TD
#define DSC_DIALECT_DSCRT_IR_DSCRTINTERFACES_TD

include "mlir/IR/OpBase.td"

def DSCRT_StreamUserOpInterface : OpInterface<"StreamUserOpInterface"> {
  let cppNamespace = "::mlir::dscrt";
  let description = [{
    An op that enqueues work on a stream (`dscrt.stream`): a kernel launch,
    a copy, a collective, a pipeline transfer, an NVMe read or write. The
    work runs after what was enqueued on the same stream before it, and
    after what the stream waited for (`dscrt.wait`) before it; it reads and
    writes the buffers `getBufferAccesses` names, until the stream reaches
    it. Streams are ordered with each other only by events (`dscrt.record`,
    `dscrt.wait`) and by `dscrt.synchronize`, which are not stream users:
    they launch no work.

    A collective (`isCollective`) runs on the stream the runtime binds its
    communicator to, which runs no other work.
  }];
  let methods = [
    InterfaceMethod<[{
        The stream the op enqueues its work on.
      }], "::mlir::Value", "getStream", (ins), [{}], [{
        return $_op.getStream();
      }]>,
    InterfaceMethod<[{
        Moves the op's work onto `stream` (a value of type
        `!dscrt.stream`).
      }], "void", "setStream", (ins "::mlir::Value":$stream), [{}], [{
        $_op.getStreamMutable().assign(stream);
      }]>,
    InterfaceMethod<[{
        Whether the op is a collective (or a pipeline transfer, which uses
        the same communicator): it runs on the collective stream.
      }], "bool", "isCollective", (ins), [{}], [{
        return false;
      }]>,
    InterfaceMethod<[{
        Appends to `reads` the buffers the work reads and to `writes` those
        it writes (a buffer updated in place is in both).
      }], "void", "getBufferAccesses",
      (ins "::llvm::SmallVectorImpl<::mlir::Value> &":$reads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$writes)>,
  ];
}

#endif // DSC_DIALECT_DSCRT_IR_DSCRTINTERFACES_TD

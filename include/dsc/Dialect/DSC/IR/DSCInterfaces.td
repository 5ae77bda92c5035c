//===- DSCInterfaces.td - dsc op interfaces --------------------*- tablegen -*-===//

#ifndef DSC_DIALECT_DSC_IR_DSCINTERFACES_TD
#define DSC_DIALECT_DSC_IR_DSCINTERFACES_TD

include "mlir/IR/OpBase.td"

def DSC_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::dsc";
  let description = [{
    The reverse-mode derivative of an op: given the cotangents of its
    results, builds the cotangents of its operands (the vector-Jacobian
    product). `--dsc-autodiff` calls it for every op on the path from a
    parameter to the loss, in reverse program order. Every differentiable dsc
    op implements it (rules in lib/Dialect/DSC/IR/Gradients/, one file per op
    family), and so does every collective a pass inserts before
    differentiation (`dsc.all_reduce`). An op without it that lies on such a
    path is an error naming the op.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds, with `builder` (whose insertion point is after every forward
        value), the cotangents of the operands for which `activeOperands` is
        true, into `operandCotangents` (one entry per operand, null on entry).
        `resultCotangents` has one entry per result, null where the result
        has no cotangent (it does not reach the loss, or is not a float);
        at least one is non-null. An entry left null is a zero cotangent.
        Each cotangent has its operand's type. Fails, after emitting a
        diagnostic on the op, when an active operand's cotangent cannot be
        built (e.g. a strided slice).
      }], "::llvm::LogicalResult", "buildOperandCotangents",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultCotangents,
           "::llvm::ArrayRef<bool>":$activeOperands,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandCotangents)>,
  ];
}

def DSC_MultiTensorUpdateOpInterface : OpInterface<"MultiTensorUpdateOpInterface"> {
  let cppNamespace = "::mlir::dsc";
  let description = [{
    An optimizer update of many tensors at once (`dsc.adam_update`,
    `dsc.sgd_update`): each result is the new value of one operand (a
    parameter, a moment, a 16-bit copy), computed elementwise from the
    operands of the same tensor and scalars. ZeRO runs it on shards (every
    operand of rank > 0 replaced by its shard), and the lowering writes each
    result over its operand's memory (the library kernel updates in place).
  }];
  let methods = [
    InterfaceMethod<[{
        The operand whose new value result #`result` is (of its type), or
        null when the result has none (a 16-bit copy the op only writes).
      }], "::mlir::Value", "getUpdatedOperand", (ins "unsigned":$result)>,
    InterfaceMethod<[{
        How many leading operands are per-tensor (parameters, gradients,
        states, copies, of any rank); the others are scalars every tensor
        shares (learning rate, step, gradient factors).
      }], "unsigned", "getNumTensorOperands">,
  ];
}

#endif // DSC_DIALECT_DSC_IR_DSCINTERFACES_TD

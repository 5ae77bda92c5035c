//===- DSCTraits.h - traits shared by dsc ops -------------------*- C++ -*-===//

#ifndef DSC_DIALECT_DSC_IR_DSCTRAITS_H
#define DSC_DIALECT_DSC_IR_DSCTRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace mlir::dsc {

/// Fails, with a diagnostic on `op`, when an operand or result tensor has an
/// element count or byte size that does not fit in int64.
LogicalResult verifyBoundedTensorSizes(Operation *op);

namespace OpTrait {

/// Every dsc op carries this trait (see DSC_Op in DSCBase.td), so analyses
/// downstream may compute sizes without overflow checks.
template <typename ConcreteType>
class BoundedTensorSize
    : public ::mlir::OpTrait::TraitBase<ConcreteType, BoundedTensorSize> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return verifyBoundedTensorSizes(op);
  }
};

/// An elementwise op (DSC_Elementwise in DSCBase.td): a marker, checked by
/// the ops' own verifiers (broadcasting operands).
template <typename ConcreteType>
class Elementwise : public ::mlir::OpTrait::TraitBase<ConcreteType, Elementwise> {};

} // namespace OpTrait

/// Whether `op` is a dsc elementwise op (carries OpTrait::Elementwise).
inline bool isElementwise(Operation *op) {
  return op->hasTrait<OpTrait::Elementwise>();
}
} // namespace mlir::dsc

#endif // DSC_DIALECT_DSC_IR_DSCTRAITS_H

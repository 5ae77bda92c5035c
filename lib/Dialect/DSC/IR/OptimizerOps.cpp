//===- OptimizerOps.cpp - dsc.adam_update, dsc.sgd_update, dsc.sum_squares -===//
//
// The multi-tensor optimizer ops hold every parameter of a step in one op,
// as lists that must line up tensor by tensor; the verifiers check that, and
// the types the library kernel (dsc/kernels/Optimizer.h) computes with:
// fp32 parameters and states, one gradient type per op, 16-bit copies of
// the gradients' type.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCOps.h"

using namespace mlir;
using namespace mlir::dsc;

static bool isScalarOf(Type type, bool boolean) {
  auto t = cast<RankedTensorType>(type);
  return t.getRank() == 0 &&
         (boolean ? t.getElementType().isInteger(1) : t.getElementType().isF32());
}

namespace {
/// The lists of one multi-tensor update, as the verifier reads them.
struct UpdateLists {
  ValueRange params, grads;
  /// Each optimizer state's operands and new values (exp_avgs, ...).
  SmallVector<std::tuple<StringRef, ValueRange, ValueRange>> states;
  ValueRange copies, newParams, newCopies;
  /// Scalars by name; null when absent.
  SmallVector<std::pair<StringRef, Value>> scalars;
  Value skip;
};
} // namespace

static LogicalResult verifyUpdate(Operation *op, const UpdateLists &u) {
  size_t n = u.params.size();
  if (n == 0)
    return op->emitOpError("updates no tensor");
  if (u.grads.size() != n || u.newParams.size() != n)
    return op->emitOpError() << "has " << n << " params, " << u.grads.size()
                             << " grads and " << u.newParams.size()
                             << " new params; they must be equal";
  Type gradElem = cast<RankedTensorType>(u.grads[0].getType()).getElementType();
  if (!gradElem.isF32() && !gradElem.isBF16() && !gradElem.isF16())
    return op->emitOpError() << "has " << gradElem
                             << " gradients; expected f32, bf16 or f16";
  for (size_t i = 0; i < n; ++i) {
    auto param = cast<RankedTensorType>(u.params[i].getType());
    auto grad = cast<RankedTensorType>(u.grads[i].getType());
    if (!param.getElementType().isF32())
      return op->emitOpError() << "param #" << i << " is " << param
                               << "; the update is fp32 (a master weight in "
                                  "mixed precision)";
    if (grad.getShape() != param.getShape() || grad.getElementType() != gradElem)
      return op->emitOpError() << "grad #" << i << " is " << grad
                               << "; expected the shape of " << param
                               << " and the first grad's element type "
                               << gradElem;
    if (u.newParams[i].getType() != param)
      return op->emitOpError() << "new param #" << i << " must have type " << param;
  }
  for (auto [name, old, updated] : u.states) {
    if (old.size() != n || updated.size() != n)
      return op->emitOpError() << "has " << old.size() << " " << name << " and "
                               << updated.size() << " new ones for " << n
                               << " params";
    for (size_t i = 0; i < n; ++i)
      if (old[i].getType() != u.params[i].getType() ||
          updated[i].getType() != u.params[i].getType())
        return op->emitOpError() << name << " #" << i << " and its new value must "
                                 << "have the type of param #" << i << ", "
                                 << u.params[i].getType();
  }
  if (!u.newCopies.empty()) {
    if (u.newCopies.size() != n)
      return op->emitOpError() << "has " << u.newCopies.size()
                               << " new copies for " << n
                               << " params; expected none or one each";
    if (!gradElem.isBF16() && !gradElem.isF16())
      return op->emitOpError() << "writes 16-bit copies, but its gradients are "
                               << gradElem << ", not the copies' 16-bit type";
    for (size_t i = 0; i < n; ++i) {
      auto want = RankedTensorType::get(
          cast<RankedTensorType>(u.params[i].getType()).getShape(), gradElem);
      if (u.newCopies[i].getType() != want)
        return op->emitOpError() << "new copy #" << i << " must have type " << want;
    }
  }
  // The old copies are what a skipped step leaves.
  size_t oldCopies = u.skip && !u.newCopies.empty() ? n : 0;
  if (u.copies.size() != oldCopies)
    return op->emitOpError() << "has " << u.copies.size() << " copies; expected "
                             << oldCopies
                             << " (the old 16-bit values, given exactly when the "
                                "op writes copies and may skip)";
  for (size_t i = 0; i < u.copies.size(); ++i)
    if (u.copies[i].getType() != u.newCopies[i].getType())
      return op->emitOpError() << "copy #" << i << " must have the type of new copy #"
                               << i << ", " << u.newCopies[i].getType();
  for (auto [name, value] : u.scalars)
    if (value && !isScalarOf(value.getType(), false))
      return op->emitOpError() << name << " must be a tensor<f32>, got "
                               << value.getType();
  if (u.skip && !isScalarOf(u.skip.getType(), true))
    return op->emitOpError() << "skip must be a tensor<i1>, got "
                             << u.skip.getType();
  return success();
}

static LogicalResult checkRange(Operation *op, StringRef name, double value,
                                bool ok) {
  if (ok)
    return success();
  return op->emitOpError() << name << " " << value << " is out of range";
}

LogicalResult AdamUpdateOp::verify() {
  UpdateLists u{getParams(), getGrads(), {}, getCopies(), getNewParams(),
                getNewCopies(), {}, getSkip()};
  u.states.push_back({"exp_avgs", getExpAvgs(), getNewExpAvgs()});
  u.states.push_back({"exp_avg_sqs", getExpAvgSqs(), getNewExpAvgSqs()});
  u.scalars = {{"lr", getLr()}, {"step", getStep()}, {"unscale", getUnscale()},
               {"clip_coef", getClipCoef()}};
  double beta1 = getBeta1().convertToDouble(), beta2 = getBeta2().convertToDouble();
  double eps = getEps().convertToDouble(), wd = getWeightDecay().convertToDouble();
  std::optional<double> lr;
  if (getConstantLrAttr())
    lr = getConstantLrAttr().getValueAsDouble();
  return success(succeeded(verifyUpdate(*this, u)) &&
                 succeeded(checkRange(*this, "beta1", beta1, beta1 >= 0 && beta1 < 1)) &&
                 succeeded(checkRange(*this, "beta2", beta2, beta2 >= 0 && beta2 < 1)) &&
                 succeeded(checkRange(*this, "eps", eps, eps > 0)) &&
                 succeeded(checkRange(*this, "weight_decay", wd, wd >= 0)) &&
                 (!lr || succeeded(checkRange(*this, "constant_lr", *lr, *lr >= 0))));
}

Value AdamUpdateOp::getUpdatedOperand(unsigned result) {
  size_t n = getParams().size();
  ValueRange lists[] = {getParams(), getExpAvgs(), getExpAvgSqs(), getCopies()};
  ValueRange list = lists[result / n];
  return result % n < list.size() ? list[result % n] : Value();
}

unsigned AdamUpdateOp::getNumTensorOperands() {
  return getParams().size() + getGrads().size() + getExpAvgs().size() +
         getExpAvgSqs().size() + getCopies().size();
}

LogicalResult SgdUpdateOp::verify() {
  double momentum = getMomentum().convertToDouble();
  double wd = getWeightDecay().convertToDouble();
  UpdateLists u{getParams(), getGrads(), {}, getCopies(), getNewParams(),
                getNewCopies(), {}, getSkip()};
  if (momentum != 0)
    u.states.push_back({"momentum_buffers", getMomentumBuffers(),
                        getNewMomentumBuffers()});
  else if (!getMomentumBuffers().empty() || !getNewMomentumBuffers().empty())
    return emitOpError("has momentum buffers but momentum 0");
  u.scalars = {{"lr", getLr()}, {"unscale", getUnscale()},
               {"clip_coef", getClipCoef()}};
  return success(succeeded(verifyUpdate(*this, u)) &&
                 succeeded(checkRange(*this, "momentum", momentum, momentum >= 0)) &&
                 succeeded(checkRange(*this, "weight_decay", wd, wd >= 0)));
}

Value SgdUpdateOp::getUpdatedOperand(unsigned result) {
  size_t n = getParams().size();
  ValueRange lists[] = {getParams(), getMomentumBuffers(), getCopies()};
  // The new momentum buffers come before the copies only when there are.
  unsigned group = result / n;
  if (group == 1 && getMomentumBuffers().empty())
    group = 2;
  ValueRange list = lists[group];
  return result % n < list.size() ? list[result % n] : Value();
}

unsigned SgdUpdateOp::getNumTensorOperands() {
  return getParams().size() + getGrads().size() + getMomentumBuffers().size() +
         getCopies().size();
}

LogicalResult SumSquaresOp::verify() {
  if (getInputs().empty())
    return emitOpError("sums no tensor");
  Type elem = cast<RankedTensorType>(getInputs()[0].getType()).getElementType();
  if (!elem.isF32() && !elem.isBF16() && !elem.isF16())
    return emitOpError() << "sums " << elem << " tensors; expected f32, bf16 or f16";
  for (auto [i, input] : llvm::enumerate(getInputs()))
    if (cast<RankedTensorType>(input.getType()).getElementType() != elem)
      return emitOpError() << "input #" << i << " is " << input.getType()
                           << "; every input has the first one's element type "
                           << elem;
  if (getScale() && !isScalarOf(getScale().getType(), false))
    return emitOpError() << "scale must be a tensor<f32>, got "
                         << getScale().getType();
  if (!isScalarOf(getResult().getType(), false))
    return emitOpError() << "result must be a tensor<f32>, got "
                         << getResult().getType();
  return success();
}

LogicalResult OptimizerBoundaryOp::verify() {
  if (getInputs().getTypes() != getResults().getTypes())
    return emitOpError("results must have the types of the operands, in order");
  if (*(*this)->getBlock()->getOps<OptimizerBoundaryOp>().begin() != *this)
    return emitOpError("appears twice in the graph: a step has one boundary");
  return success();
}

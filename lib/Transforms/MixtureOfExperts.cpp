//===- MixtureOfExperts.cpp - --dsc-moe ------------------------------------===//
//
// Replaces dense feed-forward blocks by gated mixtures of experts (Passes.td
// has the rule). A block is found from its last linear map upwards: the
// map's input must be an elementwise chain, used by nothing else, of one or
// two linear maps that read one value x. The chain is then computed once for
// all experts, on [E, C, H] tensors, between an index-based dispatch and
// combine; the expert weights are new states stacked along a leading E
// dimension, so the rewritten graph has as many ops for 128 experts as for 2.
// Under tensor parallelism (DeepSpeed-TED) each expert's block is split
// Megatron's way over the tensor group, and duplicate token dropping
// (ExpertTokens.h) cuts the all-to-alls' bytes by the group's size.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Dialect/DSC/IR/DSCTraits.h"
#include "dsc/Dialect/DSC/IR/GraphUtils.h"
#include "dsc/Transforms/Passes.h"

#include "ExpertTokens.h"
#include "FeedForwardBlocks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

namespace mlir::dsc {
#define GEN_PASS_DEF_MIXTUREOFEXPERTS
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

namespace {
/// "a.b.c" without its last component: the module path of a parameter.
StringRef modulePath(StringRef name) {
  size_t dot = name.rfind('.');
  return dot == StringRef::npos ? StringRef() : name.take_front(dot);
}

/// The longest common prefix of the paths, whole components only.
std::string commonPath(ArrayRef<std::string> paths) {
  SmallVector<StringRef> common;
  StringRef(paths[0]).split(common, '.');
  for (StringRef path : paths.drop_front()) {
    SmallVector<StringRef> parts;
    path.split(parts, '.');
    size_t n = 0;
    while (n < common.size() && n < parts.size() && common[n] == parts[n])
      ++n;
    common.resize(n);
  }
  return llvm::join(common, ".");
}

/// DeepSpeed's capacity: ceil(S / E * factor) with the product in float32
/// (its capacity factor is a float32 tensor), at least `minimum`.
int64_t expertCapacity(int64_t tokens, int64_t experts, double factor,
                       int64_t minimum) {
  volatile float share = float(double(tokens) / double(experts));
  volatile float product = share * float(factor);
  return std::max<int64_t>(minimum, int64_t(std::ceil(product)));
}

struct MixtureOfExpertsPass
    : public dsc::impl::MixtureOfExpertsBase<MixtureOfExpertsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkOptions(module)))
      return signalPassFailure();
    SymbolTable symbols(module);
    SmallVector<FeedForward> blocks;
    module.walk([&](LinearOp last) {
      if (auto block = matchFeedForward(last, symbols))
        blocks.push_back(std::move(*block));
    });
    if (blocks.empty()) {
      module.emitError("--dsc-moe found no feed-forward block to replace: "
                       "a linear map of an activation of one or two linear "
                       "maps of one input, with parameter weights");
      return signalPassFailure();
    }
    SmallVector<FeedForward *> replaced;
    for (auto [i, block] : llvm::enumerate(blocks))
      if (int64_t(i) % every == 0)
        replaced.push_back(&block);
    if (!expertsPerLayer.empty() &&
        expertsPerLayer.size() != replaced.size()) {
      module.emitError() << "--dsc-moe: experts-per-layer lists "
                         << expertsPerLayer.size() << " counts for "
                         << replaced.size() << " replaced blocks (of "
                         << blocks.size() << " found, every "
                         << int64_t(every) << ")";
      return signalPassFailure();
    }
    // Per graph: the layers' l_aux and dropped routes, summed, and each
    // layer's route counts.
    struct Totals {
      Value aux, dropped;
      SmallVector<std::pair<std::string, Value>> counts;
    };
    llvm::MapVector<func::FuncOp, Totals> totals;
    for (auto [i, block] : llvm::enumerate(replaced)) {
      int64_t count = expertsPerLayer.empty() ? int64_t(experts)
                                              : expertsPerLayer[i];
      auto func = block->last->getParentOfType<func::FuncOp>();
      FailureOr<Layer> layer = replace(*block, count, int64_t(i), symbols);
      if (failed(layer))
        return signalPassFailure();
      Totals &sums = totals[func];
      OpBuilder b(layer->aux.getContext());
      b.setInsertionPointAfterValue(layer->dropped);
      auto add = [&](Value &sum, Value term) {
        sum = sum ? AddOp::create(b, term.getLoc(), sum, term).getResult() : term;
      };
      add(sums.aux, layer->aux);
      add(sums.dropped, layer->dropped);
      sums.counts.push_back({layer->name, layer->counts});
    }
    for (auto &[func, sums] : totals)
      if (failed(addToLoss(func, sums.aux)) ||
          failed(addMetrics(func, sums.counts, sums.dropped)))
        return signalPassFailure();
    // The dense blocks' states, unless something still reads them (a tied
    // weight): one walk for all of them, not one per state.
    llvm::StringSet<> stillUsed;
    module.walk([&](LoadOp load) { stillUsed.insert(load.getState()); });
    module.walk([&](StoreOp store) { stillUsed.insert(store.getState()); });
    for (StateOp state : llvm::make_early_inc_range(module.getOps<StateOp>()))
      if (denseStates.contains(state.getSymName()) &&
          !stillUsed.contains(state.getSymName()))
        state.erase();
  }

private:
  llvm::StringSet<> denseStates; // the dense blocks' parameters
  StateOp lastDeclared;           // in the block being replaced
  int64_t tensorParallel = 1;     // T, the module's (checkOptions)

  /// How tensor parallelism splits an expert's linear map (Megatron's).
  enum class Split { None, Column, Row };

  /// Duplicate token dropping: only with an all-to-all to shrink.
  bool dropsDuplicates() const {
    return tensorParallel > 1 && epSize > 1 && duplicateTokenDropping;
  }

  LogicalResult checkOptions(ModuleOp module) {
    auto fail = [&](const Twine &message) {
      return module.emitError("--dsc-moe: " + message);
    };
    if (experts < 1 && expertsPerLayer.empty())
      return fail("needs experts >= 1 (or experts-per-layer)");
    for (int64_t count : expertsPerLayer)
      if (count < 1)
        return fail("experts-per-layer holds " + Twine(count) +
                    "; every block needs at least one expert");
    if (topK < 1)
      return fail("top-k must be at least 1, got " + Twine(int64_t(topK)));
    int64_t fewest = expertsPerLayer.empty()
                         ? int64_t(experts)
                         : *llvm::min_element(expertsPerLayer);
    if (topK > fewest)
      return fail("top-k " + Twine(int64_t(topK)) + " exceeds the " +
                  Twine(fewest) + " experts of a block");
    if (!(capacityFactor > 0) || !std::isfinite(capacityFactor))
      return fail("capacity-factor must be positive and finite, got " +
                  llvm::formatv("{0}", double(capacityFactor)).str());
    if (minCapacity < 0)
      return fail("min-capacity must not be negative, got " +
                  Twine(int64_t(minCapacity)));
    if (every < 1)
      return fail("every must be at least 1, got " + Twine(int64_t(every)));
    if (!std::isfinite(auxLossCoef))
      return fail("aux-loss-coef must be finite");
    if (init != "upcycle" && init != "random")
      return fail("init must be upcycle or random, got '" + init + "'");
    if (epSize < 1)
      return fail("ep-size must be at least 1, got " + Twine(int64_t(epSize)));
    // DeepSpeed's top2gating and topkgating take neither random token
    // selection nor RSample (they ignore them silently); here they are
    // errors. Jitter acts on the gate's input, for any k.
    if (noisyGatePolicy != "none" && noisyGatePolicy != "jitter" &&
        noisyGatePolicy != "rsample")
      return fail("noisy-gate-policy must be none, jitter or rsample, got '" +
                  noisyGatePolicy + "'");
    if (noisyGatePolicy == "rsample" && topK != 1)
      return fail("noisy-gate-policy=rsample applies to top-1 gating only, "
                  "got top-k " + Twine(int64_t(topK)));
    if (useRts && topK != 1)
      return fail("use-rts (random token selection) applies to top-1 gating "
                  "only, got top-k " + Twine(int64_t(topK)));
    tensorParallel = lookupTensorParallelSize(module);
    if (epSize > 1) {
      std::optional<int64_t> world = lookupWorldSize(module);
      if (!world || *world % epSize != 0)
        return fail("ep-size " + Twine(int64_t(epSize)) +
                    " must divide the world size " +
                    Twine(world ? *world : int64_t(1)) +
                    " (run --dsc-data-parallel first)");
      // DeepSpeed-TED's mesh: the expert groups run along the data
      // dimension, EP of the W / T data-parallel replicas; with pipeline
      // stages, of one stage's W / (T P), since a stage's experts are its
      // own.
      int64_t stages = lookupPipelineParallelSize(module);
      std::string pipeline =
          stages > 1 ? " times pipeline-parallel " + std::to_string(stages)
                     : "";
      if (*world % (epSize * tensorParallel * stages) != 0)
        return fail("ep-size " + Twine(int64_t(epSize)) +
                    " times tensor-parallel " + Twine(tensorParallel) +
                    pipeline + " must divide the world size " + Twine(*world) +
                    " (expert groups are made of data-parallel replicas" +
                    (stages > 1 ? " of one pipeline stage)" : ")"));
      SmallVector<int64_t> counts(expertsPerLayer.begin(), expertsPerLayer.end());
      if (counts.empty())
        counts.push_back(experts);
      for (int64_t count : counts)
        if (count % epSize != 0)
          return fail("ep-size " + Twine(int64_t(epSize)) + " must divide the " +
                      Twine(count) + " experts of a block");
      module->setAttr(kExpertParallelSizeAttrName,
                      Builder(module.getContext()).getI64IntegerAttr(epSize));
    }
    return success();
  }

  /// Declares the state `name` of `type` after the last one this block
  /// declared (the first after the dense block's first weight), so that the
  /// gate and the experts' weights follow in the block's order.
  FailureOr<StateOp> declare(StateOp anchor, const std::string &name,
                             RankedTensorType type, SymbolTable &symbols) {
    if (symbols.lookup(name)) {
      anchor.emitError() << "--dsc-moe would declare '" << name
                         << "', which the model already has";
      return failure();
    }
    OpBuilder b(anchor);
    b.setInsertionPointAfter(lastDeclared ? lastDeclared : anchor);
    auto state = StateOp::create(b, anchor.getLoc(), name, type,
                                 StateRole::parameter);
    symbols.insert(state);
    lastDeclared = state;
    return state;
  }

  /// The experts' copy of the dense linear's parameter `dense`, stacked:
  /// the `count` / ep-size experts of this rank; with `splitDim` >= 0 (a
  /// dimension of `dense`) this rank's slice of each along it, over the
  /// tensor group.
  FailureOr<Value> stacked(OpBuilder &b, Location loc, StateOp dense,
                           int64_t count, int64_t fanIn,
                           const std::string &prefix, SymbolTable &symbols,
                           int64_t splitDim = -1) {
    StringRef denseName = dense.getSymName();
    StringRef relative = StringRef(denseName).drop_front(
        prefix.empty() ? 0 : prefix.size() + 1);
    std::string name =
        (prefix.empty() ? "" : prefix + ".") + "experts." + relative.str();
    RankedTensorType denseType = dense.getTensorType();
    SmallVector<int64_t> shape{count};
    llvm::append_range(shape, denseType.getShape());
    // With expert parallelism each rank holds E / P experts: the state is
    // declared with its local shape and partitioned over the expert group.
    SmallVector<int64_t> local(shape);
    local[0] /= epSize;
    // A tensor-parallel slice: the whole viewed as [B, T, C], B the
    // elements before the split dimension (a multiple of the experts).
    int64_t blocks = 0;
    if (splitDim >= 0) {
      local[splitDim + 1] /= tensorParallel;
      blocks = 1;
      for (int64_t d = 0; d <= splitDim; ++d)
        blocks *= shape[d];
    }
    auto type = RankedTensorType::get(local, denseType.getElementType());
    FailureOr<StateOp> state = declare(dense, name, type, symbols);
    if (failed(state))
      return failure();
    if (epSize > 1 || blocks) {
      state->setPartitionOf(shape);
      state->setPartitionGroup(epSize > 1 ? CollectiveGroup::expert
                                          : CollectiveGroup::tensor);
      if (blocks)
        state->setPartitionBlocksAttr(b.getI64IntegerAttr(blocks));
    }
    if (init == "upcycle") {
      state->setInitFromAttr(b.getStringAttr(denseName));
    } else {
      // nn.Linear's default: U(-1/sqrt(in), 1/sqrt(in)) for the weight and
      // the bias alike.
      setUniform(*state, fanIn);
    }
    denseStates.insert(denseName);
    return LoadOp::create(b, loc, type, state->getSymName()).getResult();
  }

  void setUniform(StateOp state, int64_t fanIn) {
    Builder b(state.getContext());
    state.setInitUniformAttr(b.getF64FloatAttr(1.0 / std::sqrt(double(fanIn))));
    state.setInitSeedAttr(b.getI64IntegerAttr(seed));
  }

  /// `linear` computed for this rank's experts on `input` [E_local, C', in]:
  /// [E_local, C', out] (E_local = count / ep-size). Split::Column: this
  /// rank's out / T output features; Split::Row: a partial product over its
  /// in / T input features, without the bias, which `rowBias` receives
  /// (added once the partial products are summed).
  FailureOr<Value> expertLinear(OpBuilder &b, LinearOp linear, Value input,
                                int64_t count, const std::string &prefix,
                                SymbolTable &symbols, Split split = Split::None,
                                Value *rowBias = nullptr) {
    Location loc = linear.getLoc();
    int64_t fanIn = tensorOf(linear.getWeight()).getDimSize(1);
    FailureOr<Value> weight =
        stacked(b, loc, parameterLoaded(linear.getWeight(), symbols), count,
                fanIn, prefix, symbols,
                split == Split::Column ? 0 : split == Split::Row ? 1 : -1);
    if (failed(weight))
      return failure();
    Value out = MatmulOp::create(b, loc, input, *weight, /*transposeLhs=*/false,
                                 /*transposeRhs=*/true);
    if (!linear.getBias())
      return out;
    FailureOr<Value> bias =
        stacked(b, loc, parameterLoaded(linear.getBias(), symbols), count,
                fanIn, prefix, symbols, split == Split::Column ? 0 : -1);
    if (failed(bias))
      return failure();
    if (split == Split::Row) {
      *rowBias = *bias;
      return out;
    }
    return AddOp::create(b, loc, out, biasRows(b, loc, *bias, count / epSize))
        .getResult();
  }

  /// A stacked bias [E_local, N] as [E_local, 1, N], to add to [E_local, C', N].
  static Value biasRows(OpBuilder &b, Location loc, Value bias, int64_t local) {
    RankedTensorType type = tensorOf(bias);
    return ReshapeOp::create(
        b, loc,
        RankedTensorType::get({local, 1, type.getDimSize(1)},
                              type.getElementType()),
        bias);
  }

  /// Expert parallelism's dispatch: `dispatched` [E, C, M] holds this
  /// rank's tokens for every expert, in blocks of E / P experts per owner;
  /// after the exchange block j holds rank j's tokens for this rank's
  /// experts, [P, E / P, C, M], which is regrouped by expert into
  /// [E / P, P * C, M] (DeepSpeed's layout: each expert sees the group's
  /// ranks' capacity slots one after the other).
  Value toOwners(OpBuilder &b, Location loc, Value dispatched, int64_t count,
                 int64_t capacity) {
    RankedTensorType type = tensorOf(dispatched);
    int64_t width = type.getShape().back(), local = count / epSize;
    Type elem = type.getElementType();
    Value received = AllToAllOp::create(b, loc, dispatched, CollectiveGroup::expert);
    Value blocks = ReshapeOp::create(
        b, loc, RankedTensorType::get({epSize, local, capacity, width}, elem),
        received);
    Value byExpert = PermuteOp::create(b, loc, blocks, ArrayRef<int64_t>{1, 0, 2, 3});
    return ReshapeOp::create(
        b, loc, RankedTensorType::get({local, epSize * capacity, width}, elem),
        byExpert);
  }

  /// The inverse of toOwners for the experts' outputs `y` [E / P, P * C, N]:
  /// back to [E, C, N] on the ranks whose tokens they are.
  Value fromOwners(OpBuilder &b, Location loc, Value y, int64_t count,
                   int64_t capacity) {
    RankedTensorType type = tensorOf(y);
    int64_t width = type.getShape().back(), local = count / epSize;
    Type elem = type.getElementType();
    Value blocks = ReshapeOp::create(
        b, loc, RankedTensorType::get({local, epSize, capacity, width}, elem), y);
    Value bySource = PermuteOp::create(b, loc, blocks, ArrayRef<int64_t>{1, 0, 2, 3});
    Value back = ReshapeOp::create(
        b, loc, RankedTensorType::get({count, capacity, width}, elem), bySource);
    return AllToAllOp::create(b, loc, back, CollectiveGroup::expert);
  }

  /// What a replaced block adds to the loss and to the step's metrics.
  struct Layer {
    Value aux;         // l_aux, f32 scalar
    Value counts;      // routes per expert before dropping, [E] i64
    Value dropped;     // routes dropped by the capacity, f32 scalar
    std::string name;  // the block's module path
  };

  /// The draws of replaced block `layer` (Passes.td): its sites are
  /// 4 * layer + Site, over tensors that hold the micro-batch outermost.
  enum Site : int64_t { kJitter = 0, kRSample = 1, kRts = 2, kSecondExpert = 3 };
  struct Draws {
    OpBuilder &b;
    Location loc;
    Value key;
    int64_t layer, samples;

    Value uniform(ArrayRef<int64_t> shape, double low, double high, Site site) {
      return RandomUniformOp::create(
          b, loc, RankedTensorType::get(shape, b.getF32Type()), key,
          b.getF64FloatAttr(low), b.getF64FloatAttr(high),
          b.getI64IntegerAttr(4 * layer + site), b.getI64IntegerAttr(samples));
    }
    /// Standard Gumbel noise, -log(-log(u)).
    Value gumbel(ArrayRef<int64_t> shape, Site site) {
      Value u = uniform(shape, 0.0, 1.0, site);
      Value inner = NegOp::create(b, loc, LogOp::create(b, loc, u));
      return NegOp::create(b, loc, LogOp::create(b, loc, inner));
    }
    /// key[3] != 0: the step trains (dsc-run --eval runs it with 0).
    Value training() {
      auto i64 = b.getI64Type();
      Value flag = ReshapeOp::create(
          b, loc, RankedTensorType::get({}, i64),
          SliceOp::create(b, loc, key, 0, 3, 4, 1));
      Value zero = ConstantOp::create(
          b, loc, DenseElementsAttr::get(RankedTensorType::get({}, i64),
                                         b.getIntegerAttr(i64, 0)));
      return CompareOp::create(b, loc, ComparisonDirection::ne, flag, zero);
    }
  };

  /// Whether a block routing `k` choices draws random numbers.
  bool draws(int64_t k) const {
    return noisyGatePolicy != "none" || (k == 1 && useRts && dropTokens) ||
           (k == 2 && top2SecondExpertSampling);
  }

  /// Rewrites `block` into `count` gated experts; it is the `layer`-th
  /// block replaced, in forward order.
  FailureOr<Layer> replace(FeedForward &block, int64_t count, int64_t layer,
                           SymbolTable &symbols) {
    LinearOp last = block.last;
    Location loc = last.getLoc();
    OpBuilder b(last);
    RankedTensorType inputType = tensorOf(block.input);
    int64_t width = inputType.getShape().back();
    int64_t tokens = inputType.getNumElements() / width;
    Type elem = inputType.getElementType();
    int64_t k = topK;
    if (k > count)
      return last.emitError() << "--dsc-moe: top-k " << k << " exceeds the "
                              << count << " experts of this block";
    int64_t capacity =
        dropTokens ? expertCapacity(tokens, count,
                                    capacityFactor * (k == 2 ? 2.0 : double(k)),
                                    minCapacity)
                   : tokens;

    // Names: the block's linears share a module path P.
    SmallVector<std::string> paths;
    for (LinearOp linear : block.first)
      paths.push_back(
          modulePath(parameterLoaded(linear.getWeight(), symbols).getSymName())
              .str());
    paths.push_back(
        modulePath(parameterLoaded(last.getWeight(), symbols).getSymName()).str());
    std::string prefix = commonPath(paths);

    auto i64 = b.getI64Type();
    auto f32 = b.getF32Type();
    auto tensor = [](ArrayRef<int64_t> shape, Type t) {
      return RankedTensorType::get(shape, t);
    };
    auto constant = [&](Type t, double v) -> Value {
      auto type = tensor({}, t);
      Attribute value = isa<FloatType>(t) ? Attribute(b.getFloatAttr(t, v))
                                          : Attribute(b.getIntegerAttr(t, int64_t(v)));
      return ConstantOp::create(b, loc, DenseElementsAttr::get(type, value));
    };

    // The layer's random draws: the micro-batch's samples outermost.
    std::optional<Draws> random;
    if (draws(k)) {
      auto func = last->getParentOfType<func::FuncOp>();
      std::optional<int64_t> micro = microBatchOf(func);
      if (!micro || *micro < 1 || tokens % *micro != 0)
        return last.emitError()
               << "--dsc-moe: random gating numbers its draws by sample, but "
                  "the graph's micro-batch (its inputs' leading dimension) "
               << (micro ? "does not divide the " + std::to_string(tokens) + " tokens"
                         : std::string("is unknown"));
      random.emplace(Draws{b, loc, stepKeyOf(func), layer, *micro});
    }

    lastDeclared = nullptr;
    Value x = block.input;
    if (inputType.getRank() != 2)
      x = ReshapeOp::create(b, loc, tensor({tokens, width}, elem), x);

    // The gate, in fp32 as DeepSpeed keeps it.
    StateOp anchor = parameterLoaded(block.first[0].getWeight(), symbols);
    std::string gateName = (prefix.empty() ? "" : prefix + ".") + "gate.weight";
    FailureOr<StateOp> gate =
        declare(anchor, gateName, tensor({count, width}, f32), symbols);
    if (failed(gate))
      return failure();
    setUniform(*gate, width);
    // DeepSpeed's gate stays fp32 in bf16/fp16 training.
    (*gate)->setAttr(DSCDialect::kKeepFp32AttrName, b.getUnitAttr());
    Value xf = elem == f32 ? x : ConvertOp::create(b, loc, tensor({tokens, width}, f32), x).getResult();
    // Jitter: the gate's input times U(0.99, 1.01) while training.
    if (noisyGatePolicy == "jitter") {
      Value factor = SelectOp::create(
          b, loc, random->training(),
          random->uniform({tokens, width}, 0.99, 1.01, kJitter), constant(f32, 1.0));
      xf = MulOp::create(b, loc, xf, factor);
    }
    Value logits = LinearOp::create(
        b, loc, xf, LoadOp::create(b, loc, gate->getTensorType(), gate->getSymName()),
        Value());
    Value probs = SoftmaxOp::create(b, loc, logits, 1);

    // Choices: [S, k] expert indices, and for k >= 3 their probabilities
    // as the priority of each expert's routes.
    Value first, choices, priority;
    if (k == 1 && noisyGatePolicy == "rsample") {
      // RSample: the argmax of logits plus Gumbel noise while training, of
      // the probabilities otherwise; the gate value stays p.
      Value noisy = AddOp::create(b, loc, logits,
                                  random->gumbel({tokens, count}, kRSample));
      Value scores = SelectOp::create(b, loc, random->training(), noisy, probs);
      first = choices = TopKOp::create(b, loc, scores, 1, 1).getIndices();
    } else if (k <= 2) {
      first = choices = TopKOp::create(b, loc, probs, 1, 1).getIndices();
    }
    // Random token selection: each route's priority is a uniform draw (at
    // the route's token and expert), and an expert keeps its C highest.
    if (k == 1 && useRts && dropTokens)
      priority = GatherOp::create(
          b, loc, random->uniform({tokens, count}, 0.0, 1.0, kRts), first, 1);
    if (k == 2) {
      Value chosen = OneHotOp::create(
          b, loc, tensor({tokens, count}, f32),
          ReshapeOp::create(b, loc, tensor({tokens}, i64), first));
      Value isFirst = CompareOp::create(b, loc, ComparisonDirection::ne, chosen,
                                        constant(f32, 0.0));
      // Second-expert sampling: Gumbel noise on the logits it is chosen by.
      Value scores = top2SecondExpertSampling
                         ? AddOp::create(b, loc, logits,
                                         random->gumbel({tokens, count}, kSecondExpert))
                               .getResult()
                         : logits;
      Value masked = SelectOp::create(
          b, loc, isFirst,
          constant(f32, -std::numeric_limits<double>::infinity()), scores);
      Value second = TopKOp::create(b, loc, masked, 1, 1).getIndices();
      choices = ConcatOp::create(b, loc, ValueRange{first, second}, 1);
    } else if (k > 2) {
      auto top = TopKOp::create(b, loc, probs, k, 1);
      choices = top.getIndices();
      priority = top.getValues();
    }
    auto slots = MoeSlotsOp::create(b, loc, tensor({tokens, k}, i64),
                                    tensor({count}, i64), choices, priority,
                                    capacity);

    // Routing weights: the chosen probabilities, 0 where dropped,
    // renormalised over the kept choices for k >= 2.
    Value gates = GatherOp::create(b, loc, probs, choices, 1);
    Value kept = CompareOp::create(b, loc, ComparisonDirection::ge,
                                   slots.getSlots(), constant(i64, 0));
    gates = SelectOp::create(b, loc, kept, gates, constant(f32, 0.0));
    if (k >= 2) {
      Value sum = ReduceSumOp::create(b, loc, gates, ArrayRef<int64_t>{1}, true);
      Value denom = MaximumOp::create(
          b, loc, sum, constant(f32, std::numeric_limits<float>::epsilon()));
      gates = DivOp::create(b, loc, gates, denom);
    }

    // l_aux, as DeepSpeed writes it: top-1 sum(me * ce) * E, top-2
    // mean(me * ce) * E * E, top-k mean(me * ce) * E * E / k, with ce the
    // fraction of first choices (of all choices for k >= 3) per expert.
    Value me = ReduceMeanOp::create(b, loc, probs, ArrayRef<int64_t>{0}, false);
    Value routed = k > 2 ? choices : first;
    int64_t routes = k > 2 ? k : 1;
    Value mask = OneHotOp::create(b, loc, tensor({tokens, routes, count}, f32),
                                  routed);
    Value perToken =
        ReduceSumOp::create(b, loc, mask, ArrayRef<int64_t>{1}, false);
    Value ce = ReduceMeanOp::create(b, loc, perToken, ArrayRef<int64_t>{0}, false);
    Value product = MulOp::create(b, loc, me, ce);
    Value aux;
    if (k == 1) {
      aux = ReduceSumOp::create(b, loc, product, ArrayRef<int64_t>{0}, false);
      aux = MulOp::create(b, loc, aux, constant(f32, double(count)));
    } else {
      aux = ReduceMeanOp::create(b, loc, product, ArrayRef<int64_t>{0}, false);
      aux = MulOp::create(b, loc, aux, constant(f32, double(count)));
      aux = MulOp::create(b, loc, aux, constant(f32, double(count)));
      if (k > 2)
        aux = DivOp::create(b, loc, aux, constant(f32, double(k)));
    }

    // The experts: the block's chain on [E_local, C', ·]; without expert
    // parallelism that is [E, C, ·]. Under tensor parallelism (TED) each
    // rank of a tensor group computes its slice of every local expert:
    // column-parallel first maps, row-parallel last one, summed over the
    // group.
    int64_t ranks = tensorParallel;
    int64_t hidden = tensorOf(block.first.front().getResult()).getShape().back();
    if (ranks > 1 && hidden % ranks != 0)
      return last.emitError() << "--dsc-moe: cannot split the experts of this "
                                 "block over the "
                              << ranks << " ranks of a tensor group: " << ranks
                              << " must divide its " << hidden
                              << " hidden features";
    bool dedup = dropsDuplicates();
    if (dedup && capacity % ranks != 0)
      return last.emitError()
             << "--dsc-moe: duplicate token dropping splits each expert's "
                "capacity of "
             << capacity << " slots over the " << ranks
             << " ranks of a tensor group, which must divide it (or "
                "--moe-duplicate-token-dropping=false)";
    Split column = ranks > 1 ? Split::Column : Split::None;
    Split row = ranks > 1 ? Split::Row : Split::None;
    Value dispatched = MoeDispatchOp::create(
        b, loc, tensor({count, capacity, width}, elem), x, slots.getSlots(), Value());
    int64_t localCount = count / epSize, localCapacity = capacity * epSize;
    if (dedup) {
      // The dispatched tokens are alike on the tensor group: each rank
      // sends its 1/T of every expert's slots, and the group gathers what
      // its ranks received.
      Value mine = dropDuplicateTokens(b, loc, dispatched, ranks);
      Value received = AllToAllOp::create(b, loc, mine, CollectiveGroup::expert);
      dispatched = gatherExpertTokens(b, loc, received, epSize, ranks);
    } else {
      if (epSize > 1)
        dispatched = toOwners(b, loc, dispatched, count, capacity);
      // Megatron's f: the group's alike tokens enter per-rank work.
      if (ranks > 1)
        dispatched = ReplicateOp::create(b, loc, dispatched, CollectiveGroup::tensor);
    }
    IRMapping map;
    for (LinearOp linear : block.first) {
      FailureOr<Value> h = expertLinear(b, linear, dispatched, count, prefix,
                                        symbols, column);
      if (failed(h))
        return failure();
      map.map(linear.getResult(), *h);
    }
    SmallVector<Operation *> chain(block.chain.begin(), block.chain.end());
    llvm::sort(chain, [](Operation *a, Operation *c) { return a->isBeforeInBlock(c); });
    for (Operation *op : chain) {
      if (isa<ReshapeOp>(op)) {
        map.map(op->getResult(0), map.lookup(op->getOperand(0)));
        continue;
      }
      Operation *clone = b.clone(*op, map);
      SmallVector<int64_t> shape{localCount, localCapacity};
      shape.push_back(tensorOf(op->getResult(0)).getShape().back() / ranks);
      clone->getResult(0).setType(
          tensor(shape, tensorOf(op->getResult(0)).getElementType()));
    }
    Value rowBias;
    FailureOr<Value> y = expertLinear(b, last, map.lookup(last.getInput()), count,
                                      prefix, symbols, row, &rowBias);
    if (failed(y))
      return failure();
    if (dedup) {
      // Megatron's g as a reduce-scatter: each rank keeps the sums of its
      // 1/T of the slots, returns them through the all-to-all, and the
      // group gathers every rank's returned slots.
      Value mine = scatterExpertOutputs(b, loc, *y, epSize, ranks);
      if (rowBias) {
        // Each rank adds the bias to its own slots: the bias's gradient
        // sums the group's (f on the bias).
        Value alike = ReplicateOp::create(b, loc, rowBias, CollectiveGroup::tensor);
        RankedTensorType type = tensorOf(rowBias);
        Value rows = ReshapeOp::create(
            b, loc,
            tensor({1, localCount, 1, type.getDimSize(1)}, type.getElementType()),
            alike);
        mine = AddOp::create(b, loc, mine, rows);
      }
      RankedTensorType type = tensorOf(mine);
      mine = ReshapeOp::create(
          b, loc,
          tensor({count, capacity / ranks, type.getShape().back()},
                 type.getElementType()),
          mine);
      Value back = AllToAllOp::create(b, loc, mine, CollectiveGroup::expert);
      y = restoreDroppedTokens(b, loc, back, ranks);
    } else {
      if (ranks > 1) {
        y = AllReduceOp::create(b, loc, *y, CollectiveGroup::tensor).getResult();
        if (rowBias)
          y = AddOp::create(b, loc, *y, biasRows(b, loc, rowBias, localCount))
                  .getResult();
      }
      if (epSize > 1)
        y = fromOwners(b, loc, *y, count, capacity);
    }
    Value weights = elem == f32 ? gates
                                : ConvertOp::create(b, loc, tensor({tokens, k}, elem), gates)
                                      .getResult();
    Value out = MoeCombineOp::create(b, loc, tensor({tokens, width}, elem), *y,
                                     slots.getSlots(), weights);
    Operation *mixer = nullptr; // residual MoE: what reads the dense output
    if (residual) {
      FailureOr<std::pair<Value, Operation *>> mixed =
          mixResidual(b, block, x, out, prefix, symbols);
      if (failed(mixed))
        return failure();
      std::tie(out, mixer) = *mixed;
    }
    if (out.getType() != last.getType())
      out = ReshapeOp::create(b, loc, last.getType(), out);
    // Routes the capacity dropped (slot -1), this rank's micro-batch.
    Value dropped = ReduceSumOp::create(
        b, loc,
        ConvertOp::create(b, loc, tensor({tokens, k}, f32),
                          CompareOp::create(b, loc, ComparisonDirection::lt,
                                            slots.getSlots(), constant(i64, 0))),
        ArrayRef<int64_t>{0, 1}, false);
    if (mixer) {
      last.getResult().replaceAllUsesExcept(out, mixer);
    } else {
      last.getResult().replaceAllUsesWith(out);
      eraseDead(block);
    }
    return Layer{aux, slots.getCounts(), dropped, prefix};
  }

  /// Residual MoE (PR-MoE, DeepSpeed's `use_residual`): the dense block
  /// stays beside the experts, its parameters moved to `P.mlp.*` (filled
  /// from the dense ones), and the outputs are mixed per token by
  /// softmax(x · P.coefficient.weightᵀ + P.coefficient.bias), two weights:
  /// experts · c[:, 0] + dense · c[:, 1]. Returns the mixture [S, M] and
  /// the op that reads the dense block's output.
  FailureOr<std::pair<Value, Operation *>>
  mixResidual(OpBuilder &b, FeedForward &block, Value x, Value experts,
              const std::string &prefix, SymbolTable &symbols) {
    LinearOp last = block.last;
    Location loc = last.getLoc();
    auto moveParameter = [&](LinearOp linear, OpOperand &operand) -> LogicalResult {
      auto load = operand.get().getDefiningOp<LoadOp>();
      StateOp dense = parameterLoaded(operand.get(), symbols);
      StringRef relative = dense.getSymName().drop_front(
          prefix.empty() ? 0 : prefix.size() + 1);
      std::string name = (prefix.empty() ? "" : prefix + ".") + "mlp." + relative.str();
      FailureOr<StateOp> moved = declare(dense, name, dense.getTensorType(), symbols);
      if (failed(moved))
        return failure();
      moved->setInitFromAttr(b.getStringAttr(dense.getSymName()));
      denseStates.insert(dense.getSymName());
      OpBuilder at(linear);
      operand.set(LoadOp::create(at, loc, dense.getTensorType(), moved->getSymName()));
      if (load && load->use_empty())
        load->erase();
      return success();
    };
    SmallVector<LinearOp> linears(block.first.begin(), block.first.end());
    linears.push_back(last);
    for (LinearOp linear : linears) {
      if (failed(moveParameter(linear, linear.getWeightMutable())))
        return failure();
      if (linear.getBias() &&
          failed(moveParameter(linear, linear.getBiasMutable()[0])))
        return failure();
    }

    // The mixture reads the dense block's output: it comes after it.
    b.setInsertionPointAfter(last);
    RankedTensorType type = tensorOf(experts);
    int64_t width = type.getDimSize(1);
    Type elem = type.getElementType();
    StateOp anchor = parameterLoaded(last.getWeight(), symbols);
    std::string base = (prefix.empty() ? "" : prefix + ".") + "coefficient.";
    FailureOr<StateOp> weight = declare(
        anchor, base + "weight", RankedTensorType::get({2, width}, elem), symbols);
    if (failed(weight))
      return failure();
    FailureOr<StateOp> bias =
        declare(anchor, base + "bias", RankedTensorType::get({2}, elem), symbols);
    if (failed(bias))
      return failure();
    setUniform(*weight, width);
    setUniform(*bias, width);
    Value logits = LinearOp::create(
        b, loc, x, LoadOp::create(b, loc, weight->getTensorType(), weight->getSymName()),
        LoadOp::create(b, loc, bias->getTensorType(), bias->getSymName()));
    Value coef = SoftmaxOp::create(b, loc, logits, 1);
    auto column = [&](int64_t j) {
      return SliceOp::create(b, loc, coef, 1, j, j + 1, 1).getResult();
    };
    Value dense = last.getResult();
    Operation *mixer = nullptr;
    if (dense.getType() != type) {
      dense = ReshapeOp::create(b, loc, type, dense);
      mixer = dense.getDefiningOp();
    }
    Value fromExperts = MulOp::create(b, loc, experts, column(0));
    auto fromDense = MulOp::create(b, loc, dense, column(1));
    if (dense == last.getResult())
      mixer = fromDense;
    Value mixed = AddOp::create(b, loc, fromExperts, fromDense);
    return std::pair<Value, Operation *>(mixed, mixer);
  }

  /// The experts' metrics as outputs of `func`, after its loss: each
  /// layer's routes per expert before dropping (DeepSpeed's exp_counts) as
  /// `moe.exp_counts.<layer>`, and the routes dropped in all layers as
  /// `moe.dropped`; both count this rank's micro-batch, as DeepSpeed's
  /// exp_counts do.
  LogicalResult addMetrics(func::FuncOp func,
                           ArrayRef<std::pair<std::string, Value>> counts,
                           Value dropped) {
    auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    SmallVector<std::pair<std::string, Value>> outputs;
    for (auto &[layer, value] : counts)
      outputs.push_back(
          {"moe.exp_counts" + (layer.empty() ? "" : "." + layer), value});
    outputs.push_back({"moe.dropped", dropped});
    for (auto &[name, value] : outputs) {
      if (findOutput(func, name))
        return func.emitError() << "--dsc-moe: the graph already has an "
                                   "output named '"
                                << name << "'";
      if (failed(appendOutput(func, ret, value, name)))
        return failure();
    }
    return success();
  }

  /// The dense block's ops and whatever only they read (loads included:
  /// an unused read is trivially dead).
  void eraseDead(FeedForward &block) {
    SmallVector<Operation *> work{block.last};
    llvm::SmallPtrSet<Operation *, 16> erased;
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (erased.contains(op) || !isOpTriviallyDead(op))
        continue;
      SmallVector<Operation *> producers;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          producers.push_back(def);
      op->erase();
      erased.insert(op);
      llvm::append_range(work, producers);
    }
  }

  /// The function's loss (the result named "loss") plus coef * aux.
  LogicalResult addToLoss(func::FuncOp func, Value aux) {
    auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto name = func.getResultAttrOfType<StringAttr>(i, "dsc.output");
      if (!name || name.getValue() != "loss")
        continue;
      OpBuilder b(ret);
      Value loss = ret.getOperand(i);
      RankedTensorType type = tensorOf(loss);
      Value coef = ConstantOp::create(
          b, ret.getLoc(),
          DenseElementsAttr::get(tensor0(type), b.getFloatAttr(type.getElementType(),
                                                                auxLossCoef)));
      // The loss is already the data-parallel mean (--dsc-data-parallel ran
      // first); each rank's l_aux counts its own micro-batch, so their mean
      // joins it, as in DeepSpeed where every rank's loss (with its l_aux)
      // is averaged by the gradient all-reduce.
      // Under tensor parallelism the ranks of a tensor group route the
      // same micro-batch alike, and under pipeline parallelism the stages
      // of a pipeline group carry one micro-batch: the mean is over the
      // data group (the gradient of a mean over the world would count each
      // micro-batch's l_aux 1/W times on each of its T ranks, whose
      // gradients the data group alone sums; and the ranks of other
      // stages hold other layers).
      Value local = convertTo(b, aux, type);
      CollectiveGroup group = dataParallelGroup(func);
      // A graph that --dsc-data-parallel did not see is one rank's.
      FailureOr<int64_t> replicas = lookupWorldSize(func)
                                        ? lookupGroupSize(func, group)
                                        : FailureOr<int64_t>(1);
      if (failed(replicas))
        return failure();
      if (*replicas > 1) {
        Value sum = AllReduceOp::create(b, ret.getLoc(), local, group);
        Value n = ConstantOp::create(
            b, ret.getLoc(),
            DenseElementsAttr::get(tensor0(type),
                                   b.getFloatAttr(type.getElementType(),
                                                  double(*replicas))));
        local = DivOp::create(b, ret.getLoc(), sum, n);
      }
      Value term = MulOp::create(b, ret.getLoc(), coef, local);
      ret.setOperand(i, AddOp::create(b, ret.getLoc(), loss, term));
      // The term itself, for the logs (a metric after the loss).
      if (findOutput(func, "aux_loss"))
        return func.emitError("--dsc-moe: the graph already has an output "
                              "named 'aux_loss'");
      return appendOutput(func, ret, term, "aux_loss");
    }
    return func.emitError("--dsc-moe: the function has no result named "
                          "\"loss\" to add the experts' load-balancing loss to");
  }

  static RankedTensorType tensor0(RankedTensorType like) {
    return RankedTensorType::get({}, like.getElementType());
  }

  static Value convertTo(OpBuilder &b, Value v, RankedTensorType like) {
    if (tensorOf(v).getElementType() == like.getElementType())
      return v;
    return ConvertOp::create(b, v.getLoc(), tensor0(like), v);
  }
};
} // namespace

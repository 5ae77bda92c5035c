//===- SequenceParallel.cpp - Megatron's sequence parallelism -------------===//
//
// Between the blocks that --dsc-tensor-parallel splits, every rank of a
// tensor group computes the same activations: the norms, residual adds and
// biases run T times over. Megatron's sequence parallelism splits that work
// along the sequence instead. Rank r holds tokens [r * s/T, (r + 1) * s/T)
// of every sample (an activation [b, s, ...] or [b * s, ...] becomes
// [b, s/T, ...] or [b * s/T, ...]):
//
// * a block's sum of partial products (g, an all-reduce) becomes their
//   reduce-scatter along the sequence: the same bytes reach each rank,
//   without the half that it would compute again;
// * a block's input (f, a replicate) becomes the all-gather of its shards,
//   whose gradient autodiff derives as a reduce-scatter;
// * the token-wise ops between (reshapes that keep the tokens, elementwise
//   ops whose other operands broadcast over the tokens, layer norms,
//   reductions over the features, dropouts) run on the shards. A parameter they read
//   whole (a norm's weight, a bias) then gets only this rank's tokens'
//   share of its gradient: it enters through a replicate over the tensor
//   group, whose gradient sums the shares (Megatron's all-reduce of the
//   sequence-parallel layer norms' gradients);
// * a vocabulary-parallel lookup's sum of partial rows becomes their
//   reduce-scatter along the sequence where every reader works token by
//   token: the region begins there, and the position embedding added to
//   it (one row per position, the same on every rank) is read as the
//   rank's rows, a local shard;
// * where the sequence-split region begins otherwise, the first value that
//   the first block's input is computed from token-wise (the embeddings'
//   sum), the rank takes its shard with a local shard; where a shard meets
//   an op that is not token-wise (the head), an all-gather (`alike`: the
//   work after it is the same on every rank) restores the whole.
//
// A dropout of an activation whose samples are the batch's is token-wise:
// a shard is the r-th of T contiguous parts of each sample, and the
// dropout on it draws that part of the whole activation's mask
// (`part %r of T`), so the ranks draw the single-device masks.
//
//===----------------------------------------------------------------------===//

#include "SequenceParallel.h"

#include "FeedForwardBlocks.h"
#include "VocabParallel.h"

#include "dsc/Dialect/DSC/IR/DSCTraits.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::dsc;

namespace {
/// What a token-wise op does with one operand on the shards.
enum class Role {
  Shard,     // an activation: the op reads this rank's tokens of it
  Broadcast, // the same for every token (a weight, a bias, a scalar)
  Sequence,  // one row per position, the same for every sample (a position
             // embedding [1, s, ...] or [s, ...]): the rank's positions
};

/// The token geometry of one function: `batch` samples of `seq` tokens, the
/// sequence split over `ranks`.
struct Tokens {
  int64_t batch, seq, ranks;

  /// How many leading dimensions of `type` index the tokens: 2 for
  /// [b, s, ...], 1 for [b * s, ...], 0 when it is not an activation.
  int64_t leading(RankedTensorType type) const {
    ArrayRef<int64_t> shape = type.getShape();
    if (shape.size() >= 2 && shape[0] == batch && shape[1] == seq)
      return 2;
    if (!shape.empty() && shape[0] == batch * seq)
      return 1;
    return 0;
  }

  RankedTensorType shard(RankedTensorType whole) const {
    SmallVector<int64_t> shape(whole.getShape());
    shape[leading(whole) - 1] /= ranks;
    return RankedTensorType::get(shape, whole.getElementType());
  }

  /// The elements of one token.
  int64_t perToken(RankedTensorType whole) const {
    return whole.getNumElements() / (batch * seq);
  }
};

RankedTensorType like(ArrayRef<int64_t> shape, Value v) {
  return RankedTensorType::get(shape, tensorOf(v).getElementType());
}

Value reshape(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  if (tensorOf(v).getShape() == shape)
    return v;
  return ReshapeOp::create(b, loc, like(shape, v), v);
}

struct SequenceSplitter {
  SequenceSplitter(Tokens tokens, func::FuncOp func)
      : tokens(tokens), func(func) {}

  Tokens tokens;
  func::FuncOp func;
  /// Each activation that the rewrite holds split, and its shard.
  llvm::MapVector<Value, Value> shards;
  /// The activations among them that stay whole too (the region's start,
  /// and what a shard met from outside it).
  DenseSet<Value> stayWhole;
  /// The ops whose work moved to the shards, and the ends they replace.
  llvm::SetVector<Operation *> replaced;
  DenseMap<Value, Value> replicated;
  /// The rank's positions of each value read in the Sequence role.
  DenseMap<Value, Value> positions;
  /// The vocabulary-parallel embedding sums that became reduce-scatters,
  /// and the values computed from them token by token.
  DenseSet<Value> fromSums;

  /// `whole` with the ranks' parts outermost, flat: [b, T, s/T, E] as
  /// [T, b, s/T, E], rank r's part the r-th block of the collectives.
  Value toParts(OpBuilder &b, Location loc, Value whole) {
    RankedTensorType type = tensorOf(whole);
    int64_t part = tokens.seq / tokens.ranks, each = tokens.perToken(type);
    Value v = reshape(b, loc, whole, {tokens.batch, tokens.ranks, part, each});
    if (tokens.batch > 1)
      v = PermuteOp::create(b, loc, v, ArrayRef<int64_t>{1, 0, 2, 3});
    return reshape(b, loc, v, {type.getNumElements()});
  }

  /// This rank's shard of `whole`: of its value, the same on every rank
  /// (`sum` false), or of the sum of every rank's partial value.
  Value shardOf(OpBuilder &b, Location loc, Value whole, bool sum) {
    Value parts = toParts(b, loc, whole);
    RankedTensorType shard = tokens.shard(tensorOf(whole));
    Type flat = like({shard.getNumElements()}, parts);
    Value mine =
        sum ? Value(ReduceScatterOp::create(b, loc, flat, parts,
                                            CollectiveGroup::tensor))
            : Value(LocalShardOp::create(b, loc, flat, parts,
                                         CollectiveGroup::tensor));
    return reshape(b, loc, mine, shard.getShape());
  }

  Value allGather(OpBuilder &b, Location loc, Value shard,
                  RankedTensorType whole, bool alike) {
    int64_t part = tokens.seq / tokens.ranks, each = tokens.perToken(whole);
    Value flat = reshape(b, loc, shard, {tensorOf(shard).getNumElements()});
    Value all = AllGatherOp::create(b, loc, like({whole.getNumElements()}, flat),
                                    flat, CollectiveGroup::tensor, alike);
    Value v = reshape(b, loc, all, {tokens.ranks, tokens.batch, part, each});
    if (tokens.batch > 1)
      v = PermuteOp::create(b, loc, v, ArrayRef<int64_t>{1, 0, 2, 3});
    return reshape(b, loc, v, whole.getShape());
  }

  /// The role of each operand of `op` if `op` works token by token on the
  /// activation it produces.
  std::optional<SmallVector<Role>> tokenWise(Operation *op) {
    if (op->getNumResults() != 1 || op->getNumRegions() != 0)
      return std::nullopt;
    auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!result)
      return std::nullopt;
    int64_t lead = tokens.leading(result);
    if (lead == 0)
      return std::nullopt;
    auto leadOf = [&](Value v) { return tokens.leading(tensorOf(v)); };
    if (auto reshapeOp = dyn_cast<ReshapeOp>(op)) {
      // Row-major: with the tokens leading on both sides, each token's
      // elements stay its own.
      if (leadOf(reshapeOp.getInput()) == 0)
        return std::nullopt;
      return SmallVector<Role>{Role::Shard};
    }
    if (auto norm = dyn_cast<LayerNormOp>(op)) {
      if (int64_t(norm.getNormalizedRank()) > result.getRank() - lead)
        return std::nullopt;
      SmallVector<Role> roles{Role::Shard};
      roles.append(op->getNumOperands() - 1, Role::Broadcast);
      return roles;
    }
    if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(op)) {
      Value input = op->getOperand(0);
      ArrayRef<int64_t> dims = op->getAttrOfType<DenseI64ArrayAttr>("dims");
      int64_t inLead = leadOf(input);
      if (inLead != lead || llvm::any_of(dims, [&](int64_t d) {
            return d < inLead;
          }))
        return std::nullopt;
      return SmallVector<Role>{Role::Shard};
    }
    if (auto dropout = dyn_cast<DropoutOp>(op)) {
      // A shard is the rank's part of each sample when the samples are
      // the batch's; an input already a part of them is left whole.
      if (int64_t(dropout.getSamples()) != tokens.batch || dropout.getPart())
        return std::nullopt;
      return SmallVector<Role>{Role::Shard, Role::Broadcast};
    }
    if (!isElementwise(op))
      return std::nullopt;
    SmallVector<Role> roles;
    bool fromSum = false;
    for (Value operand : op->getOperands()) {
      RankedTensorType type = tensorOf(operand);
      // An activation, whole or broadcast along its features (RMSNorm's
      // [b, s, 1] scale).
      if (type.getRank() == result.getRank() && tokens.leading(type) == lead) {
        roles.push_back(Role::Shard);
        fromSum |= fromSums.contains(operand);
        continue;
      }
      // NumPy broadcasting: the operand's dimensions that line up with the
      // tokens' must be 1, or, for one row per position, the batch's 1 (or
      // absent) and the sequence's whole.
      int64_t offset = result.getRank() - type.getRank();
      auto dim = [&](int64_t d) {
        return d >= offset ? type.getDimSize(d - offset) : 1;
      };
      if (dim(0) == 1 && (lead == 1 || dim(1) == 1))
        roles.push_back(Role::Broadcast);
      else if (lead == 2 && dim(0) == 1 && dim(1) == tokens.seq &&
               offset <= 1)
        roles.push_back(Role::Sequence);
      else
        return std::nullopt;
    }
    if (!llvm::is_contained(roles, Role::Shard))
      return std::nullopt;
    // Positions join the shards' work only downstream of an embedding sum
    // that became a reduce-scatter. Elsewhere the sum with the positions
    // stays the region's start: a local shard of that one value, whose
    // gradient is one all-gather, rather than of both operands, whose
    // gradients would be two.
    if (llvm::is_contained(roles, Role::Sequence) && !fromSum)
      return std::nullopt;
    return roles;
  }

  /// The values, upwards from `x` through token-wise ops, where the
  /// sequence-split region must begin for `x` to be computed on shards.
  void findStarts(Value x, DenseSet<Value> &seen, llvm::SetVector<Value> &starts) {
    if (!seen.insert(x).second || shards.count(x))
      return;
    Operation *def = x.getDefiningOp();
    std::optional<SmallVector<Role>> roles;
    if (def)
      roles = tokenWise(def);
    if (!roles) {
      starts.insert(x);
      return;
    }
    for (auto [operand, role] : llvm::zip(def->getOperands(), *roles))
      if (role == Role::Shard)
        findStarts(operand, seen, starts);
  }

  /// `whole`, taken apart where this rank needs its shard of it.
  Value shardFor(OpBuilder &b, Location loc, Value whole) {
    auto it = shards.find(whole);
    if (it != shards.end())
      return it->second;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(whole);
    Value mine = shardOf(b, loc, whole, /*sum=*/false);
    shards[whole] = mine;
    stayWhole.insert(whole);
    return mine;
  }

  /// The rank's positions [r * s/T, (r + 1) * s/T) of `v`, one row per
  /// position ([1, s, ...] or [s, ...]) and the same on every rank: the
  /// dimensions before the sequence's are 1, so flat they are the r-th of
  /// T equal blocks. Its gradient gathers the ranks' blocks.
  Value positionsOf(OpBuilder &b, Location loc, Value v) {
    Value &mine = positions[v];
    if (mine)
      return mine;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(v);
    RankedTensorType type = tensorOf(v);
    SmallVector<int64_t> shape(type.getShape());
    for (int64_t &d : shape)
      if (d == tokens.seq) {
        d /= tokens.ranks;
        break;
      }
    Value flat = reshape(b, loc, v, {type.getNumElements()});
    Value part = LocalShardOp::create(
        b, loc, like({type.getNumElements() / tokens.ranks}, v), flat,
        CollectiveGroup::tensor);
    mine = reshape(b, loc, part, shape);
    return mine;
  }

  /// Whether `sum`, a vocabulary-parallel embedding's sum over the tensor
  /// group, can become a reduce-scatter along the sequence: every op that
  /// reads it works token by token (the position embedding's add, the
  /// dropout, the first norm). Otherwise it stays an all-reduce and the
  /// region starts after it as before: a reader that needs the whole
  /// sequence would gather it again right after the reduce-scatter, the
  /// same bytes as the all-reduce plus a gather in the backward.
  bool splitsAlongSequence(AllReduceOp sum) {
    Value whole = sum.getResult();
    if (tokens.leading(tensorOf(whole)) == 0)
      return false;
    fromSums.insert(whole);
    for (OpOperand &use : whole.getUses()) {
      std::optional<SmallVector<Role>> roles = tokenWise(use.getOwner());
      if (!roles || (*roles)[use.getOperandNumber()] != Role::Shard) {
        fromSums.erase(whole);
        return false;
      }
    }
    return true;
  }

  /// A value the same on every rank that the shards' work reads: its
  /// gradient from this rank's tokens is partial, the replicate sums it.
  Value broadcastOf(OpBuilder &b, Location loc, Value v) {
    if (isa_and_nonnull<ConstantOp>(v.getDefiningOp()) ||
        !isa<FloatType>(tensorOf(v).getElementType()))
      return v;
    Value &mine = replicated[v];
    if (!mine) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointAfterValue(v);
      mine = ReplicateOp::create(b, loc, v, CollectiveGroup::tensor);
    }
    return mine;
  }

  LogicalResult run(ArrayRef<SplitBlockEnds> ends,
                    ArrayRef<AllReduceOp> embeddingSums) {
    OpBuilder b(func.getContext());
    // A vocabulary-parallel embedding's sum of partial lookups becomes
    // their reduce-scatter along the sequence (Megatron's
    // reduce_scatter_embeddings): the region begins at the lookup, each
    // rank receiving only its tokens' rows.
    for (AllReduceOp sum : embeddingSums) {
      if (!splitsAlongSequence(sum))
        continue;
      b.setInsertionPoint(sum);
      shards[sum.getResult()] =
          shardOf(b, sum.getLoc(), sum.getInput(), /*sum=*/true);
      replaced.insert(sum);
    }
    // What is computed from them token by token may add positions.
    if (!fromSums.empty())
      for (Operation &op : func.getBody().front())
        if (llvm::any_of(op.getOperands(),
                         [&](Value v) { return fromSums.contains(v); }) &&
            tokenWise(&op))
          fromSums.insert(op.getResult(0));
    // The blocks' sums become reduce-scatters of the sequence.
    for (SplitBlockEnds end : ends) {
      AllReduceOp sum = end.output;
      if (tokens.leading(tensorOf(sum.getResult())) == 0)
        return sum.emitError("--dsc-tensor-parallel=sequence-parallel: the "
                             "output of this block is not an activation of ")
               << tokens.batch << " x " << tokens.seq << " tokens";
      b.setInsertionPoint(sum);
      shards[sum.getResult()] =
          shardOf(b, sum.getLoc(), sum.getInput(), /*sum=*/true);
      replaced.insert(sum);
    }
    // The region begins where the blocks' inputs are first computed token
    // by token.
    DenseSet<Value> seen;
    llvm::SetVector<Value> starts;
    for (SplitBlockEnds end : ends)
      findStarts(end.input.getInput(), seen, starts);
    for (Value start : starts) {
      if (tokens.leading(tensorOf(start)) == 0)
        continue; // the block input is not an activation: it stays whole
      shardFor(b, start.getLoc(), start);
    }
    // Token-wise ops of a shard move to the shards, in program order.
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front())
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (replaced.contains(op) ||
          llvm::none_of(op->getOperands(),
                        [&](Value v) { return shards.count(v); }))
        continue;
      std::optional<SmallVector<Role>> roles = tokenWise(op);
      if (!roles)
        continue;
      b.setInsertionPoint(op);
      IRMapping mapping;
      for (auto [operand, role] : llvm::zip(op->getOperands(), *roles))
        mapping.map(operand,
                    role == Role::Shard ? shardFor(b, op->getLoc(), operand)
                    : role == Role::Sequence
                        ? positionsOf(b, op->getLoc(), operand)
                        : broadcastOf(b, op->getLoc(), operand));
      b.setInsertionPointAfter(op);
      Operation *onShards = b.clone(*op, mapping);
      if (auto dropout = dyn_cast<DropoutOp>(onShards))
        drawTensorPart(dropout, tokens.ranks);
      Value whole = op->getResult(0);
      onShards->getResult(0).setType(tokens.shard(tensorOf(whole)));
      shards[whole] = onShards->getResult(0);
      replaced.insert(op);
    }
    // Whatever else reads a value computed only on shards reads it
    // gathered: a block's input (its f) for the block's own partial work,
    // anything else alike on every rank.
    for (auto [whole, shard] : shards) {
      if (stayWhole.contains(whole))
        continue;
      Value gathered;
      Operation *firstAlike = nullptr;
      SmallVector<OpOperand *> alikeUses;
      for (OpOperand &use : llvm::make_early_inc_range(whole.getUses())) {
        Operation *user = use.getOwner();
        if (replaced.contains(user))
          continue;
        auto f = dyn_cast<ReplicateOp>(user);
        if (f && f.getGroup() == CollectiveGroup::tensor) {
          b.setInsertionPoint(f);
          f.getResult().replaceAllUsesWith(allGather(
              b, f.getLoc(), shard, tensorOf(whole), /*alike=*/false));
          replaced.insert(f);
          continue;
        }
        alikeUses.push_back(&use);
        if (!firstAlike || user->isBeforeInBlock(firstAlike))
          firstAlike = user;
      }
      if (alikeUses.empty())
        continue;
      b.setInsertionPoint(firstAlike);
      gathered = allGather(b, whole.getLoc(), shard, tensorOf(whole),
                           /*alike=*/true);
      for (OpOperand *use : alikeUses)
        use->set(gathered);
    }
    SmallVector<Operation *> dead(replaced.begin(), replaced.end());
    llvm::sort(dead, [](Operation *a, Operation *c) {
      return a->isBeforeInBlock(c);
    });
    for (Operation *op : llvm::reverse(dead)) {
      if (!op->use_empty())
        return op->emitError("--dsc-tensor-parallel=sequence-parallel: a "
                             "value moved to the sequence's shards is still "
                             "read whole");
      op->erase();
    }
    return success();
  }
};
} // namespace

void mlir::dsc::drawTensorPart(DropoutOp dropout, int64_t ranks) {
  auto func = dropout->getParentOfType<func::FuncOp>();
  OpBuilder b(func.getContext());
  dropout.getPartMutable().assign(
      tensorRankTimes(func, ranks, /*stride=*/1, b.getI64Type()));
  dropout.setParts(ranks);
}

LogicalResult mlir::dsc::splitSequence(func::FuncOp func,
                                       ArrayRef<SplitBlockEnds> ends,
                                       ArrayRef<AllReduceOp> embeddingSums,
                                       int64_t ranks) {
  // The sequence is the inputs' second dimension: [batch, seq, ...].
  std::optional<Tokens> tokens;
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (func.getArgAttr(arg.getArgNumber(), "dsc.input") && type &&
        type.getRank() >= 2) {
      tokens = Tokens{type.getDimSize(0), type.getDimSize(1), ranks};
      break;
    }
  }
  if (!tokens)
    return func.emitError("--dsc-tensor-parallel=sequence-parallel: no graph "
                          "input has a sequence dimension ([batch, seq, ...])");
  if (tokens->seq % ranks != 0)
    return func.emitError()
           << "--dsc-tensor-parallel=sequence-parallel: the sequence of "
           << tokens->seq << " tokens does not divide over the " << ranks
           << " ranks of a tensor group";
  SequenceSplitter splitter(*tokens, func);
  return splitter.run(ends, embeddingSums);
}

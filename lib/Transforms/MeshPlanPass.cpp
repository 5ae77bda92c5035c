//===- MeshPlanPass.cpp - --dsc-plan ---------------------------------------===//
//
// Finds what the mesh plan needs to know of an exported transformer in its
// graph and prints the ranking of include/dsc/Analysis/MeshPlan.h. The
// shape comes from the model as exported, not from flags: the blocks from
// the states' names (BlockNames.h), the width and vocabulary from the token
// embedding's table, the tokens per sample from its indices, the heads from
// the attention, and the FLOPs from the graph's matrix products.
//
//===----------------------------------------------------------------------===//

#include "BlockNames.h"
#include "dsc/Analysis/MatmulFlops.h"
#include "dsc/Analysis/MeshPlan.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Transforms/Passes.h"
#include "dsc/Transforms/PrintToOutput.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/StringMap.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_MESHPLAN
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

/// The parameter state `v` loads, if it is one.
static StateOp loadedParameter(Value v, SymbolTable &symbols) {
  auto load = v.getDefiningOp<LoadOp>();
  if (!load)
    return {};
  auto state = symbols.lookup<StateOp>(load.getState());
  return state && state.getRole() == StateRole::parameter ? state : StateOp();
}

static int64_t elements(StateOp state) {
  return state.getTensorType().getNumElements();
}

/// The transformer shape of `module`'s forward graph, or a located error.
static FailureOr<plan::TransformerShape> transformerShape(ModuleOp module) {
  SymbolTable symbols(module);
  SmallVector<StateOp> parameters;
  for (auto state : module.getOps<StateOp>()) {
    if (state.getRole() == StateRole::parameter)
      parameters.push_back(state);
    else if (state.getRole() != StateRole::buffer)
      return state.emitError()
             << "--dsc-plan plans the exported model; this module is already "
                "a training step (run --dsc-plan without training flags)";
  }
  func::FuncOp graph;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal()) {
      if (graph)
        return func.emitError() << "--dsc-plan: expected one graph, the "
                                   "exported forward";
      graph = func;
    }
  if (!graph)
    return module.emitError() << "--dsc-plan: the module has no graph";

  plan::TransformerShape shape;
  // The token embedding: the embedding of the largest parameter table.
  EmbeddingOp tokens;
  StateOp tokenTable;
  llvm::DenseSet<Operation *> embeddingTables;
  graph.walk([&](EmbeddingOp embedding) {
    StateOp table = loadedParameter(embedding.getTable(), symbols);
    if (!table)
      return;
    embeddingTables.insert(table);
    if (!tokenTable || elements(table) > elements(tokenTable)) {
      tokens = embedding;
      tokenTable = table;
    }
  });
  if (!tokens)
    return graph.emitError() << "--dsc-plan: no token embedding (an "
                                "embedding of a parameter table) in the graph";
  ArrayRef<int64_t> tableShape = tokenTable.getTensorType().getShape();
  ArrayRef<int64_t> ids = cast<RankedTensorType>(tokens.getIndices().getType()).getShape();
  if (tableShape.size() != 2 || ids.empty() || ids.size() > 2)
    return tokens.emitError() << "--dsc-plan: expected a [vocabulary, width] "
                                 "table read with [batch, tokens] indices";
  shape.vocab = tableShape[0];
  shape.hidden = tableShape[1];
  shape.seq = ids.back();
  int64_t batch = ids.size() == 2 ? ids.front() : 1;

  // Blocks and where the other parameters live.
  SmallVector<StringRef> names = llvm::map_to_vector(
      parameters, [](StateOp s) { return s.getSymName(); });
  BlockNames blocks(names);
  llvm::StringMap<int64_t> perBlock;
  for (StateOp state : parameters) {
    StringRef block = blocks.blockOf(state.getSymName());
    if (!block.empty())
      perBlock[block] += elements(state);
    else if (embeddingTables.contains(state))
      shape.embeddingParameters += elements(state);
    else
      shape.headParameters += elements(state);
  }
  if (perBlock.empty())
    return graph.emitError() << "--dsc-plan: no repeated blocks (states "
                                "named <prefix>.<index>.*) to cut or split";
  shape.blocks = perBlock.size();
  for (auto &entry : perBlock)
    shape.blockParameters = std::max(shape.blockParameters, entry.getValue());

  // The head: a linear map to the vocabulary, of the token table again
  // (tied) or of a table of its own.
  bool vocabularyHead = false;
  graph.walk([&](LinearOp linear) {
    ArrayRef<int64_t> weight =
        cast<RankedTensorType>(linear.getWeight().getType()).getShape();
    if (weight.size() == 2 && weight[0] == shape.vocab &&
        weight[1] == shape.hidden)
      vocabularyHead = true;
    if (loadedParameter(linear.getWeight(), symbols) == tokenTable)
      shape.tiedHead = true;
  });
  graph.walk([&](Operation *op) {
    if (shape.heads)
      return;
    if (auto attention = dyn_cast<AttentionOp>(op))
      shape.heads = cast<RankedTensorType>(attention.getQuery().getType()).getDimSize(1);
    else if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
      auto type = cast<RankedTensorType>(softmax.getInput().getType());
      if (type.getRank() == 4)
        shape.heads = type.getDimSize(1);
    }
  });

  // Mixture of experts: each dsc.moe_dispatch is a layer routing to E
  // experts ([E, capacity, width] slots); the experts' weights are the
  // states of a module path with an `experts` component (stacked [E, ...]).
  graph.walk([&](MoeDispatchOp dispatch) {
    auto slots = cast<RankedTensorType>(dispatch.getType());
    ++shape.moeLayers;
    shape.experts = std::max(shape.experts, slots.getDimSize(0));
    shape.expertSlots = std::max(
        shape.expertSlots,
        double(slots.getDimSize(0) * slots.getDimSize(1)) / double(batch));
  });
  if (shape.moeLayers) {
    // The plan's block is the average one: the largest block's dense
    // parameters, and a layer's experts in the share of blocks that have
    // them (with experts in every other block, half a layer's).
    llvm::StringMap<int64_t> expertsPerBlock;
    for (StateOp state : parameters)
      if (state.getSymName().contains(".experts."))
        expertsPerBlock[blocks.blockOf(state.getSymName())] += elements(state);
    for (auto &entry : expertsPerBlock)
      shape.layerExpertParameters =
          std::max(shape.layerExpertParameters, entry.getValue());
    int64_t dense = 0;
    for (auto &entry : perBlock)
      dense = std::max(dense, entry.getValue() - expertsPerBlock.lookup(entry.getKey()));
    shape.blockParameters =
        dense + shape.layerExpertParameters * shape.moeLayers / shape.blocks;
  }

  // FLOPs per sample: the logits' product after the last block (a model
  // without a head to the vocabulary has none), the rest spread evenly
  // over the blocks.
  double flops = matmulFlops(graph) / double(batch);
  if (vocabularyHead)
    shape.headFlops =
        2.0 * double(shape.seq) * double(shape.hidden) * double(shape.vocab);
  shape.blockFlops = std::max(0.0, flops - shape.headFlops) / double(shape.blocks);
  return shape;
}

namespace {
struct MeshPlanPass : public dsc::impl::MeshPlanBase<MeshPlanPass> {
  using MeshPlanBase::MeshPlanBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    markAllAnalysesPreserved();
    if (precision != "bf16" && precision != "fp16" && precision != "fp32") {
      module.emitError() << "--dsc-plan: precision '" << precision
                         << "' is not bf16, fp16 or fp32";
      return signalPassFailure();
    }
    if (rows < 1) {
      module.emitError() << "--dsc-plan: rows must be at least 1";
      return signalPassFailure();
    }
    FailureOr<plan::TransformerShape> shape = transformerShape(module);
    if (failed(shape))
      return signalPassFailure();

    plan::Cluster cluster;
    cluster.world = worldSize;
    cluster.nodeSize = nodeSize;
    cluster.globalBatch = globalBatch;
    cluster.deviceMemory = deviceMemory * 1e9;
    cluster.flops = tflops * 1e12;
    cluster.intraNodeBandwidth = intraBandwidth * 1e9;
    cluster.interNodeBandwidth = interBandwidth * 1e9;
    cluster.mixedPrecision = precision != "fp32";
    if (tensor < 0 || pipeline < 0) {
      module.emitError() << "--dsc-plan: tensor and pipeline are sizes (0: "
                            "any)";
      return signalPassFailure();
    }
    if (expert < 0) {
      module.emitError() << "--dsc-plan: expert is a size (0: any)";
      return signalPassFailure();
    }
    if (expert > 1 && shape->experts == 0) {
      module.emitError() << "--dsc-plan: expert=" << int64_t(expert)
                         << ": the model has no experts (no dsc.moe_dispatch)";
      return signalPassFailure();
    }
    auto ranked =
        plan::rankMeshes(*shape, cluster, {tensor, pipeline, expert});
    if (!ranked) {
      module.emitError() << "--dsc-plan: " << llvm::toString(ranked.takeError());
      return signalPassFailure();
    }

    if (failed(printToOutput(module, output, "--dsc-plan", [&](raw_ostream &os) {
          plan::printPlan(os, *shape, cluster, *ranked, size_t(rows));
        })))
      return signalPassFailure();
  }
};
} // namespace

//===- MeshPlanTest.cpp - the mesh plan's memory, time and ranking --------===//

#include "dsc/Analysis/MeshPlan.h"

#include "gtest/gtest.h"

using namespace mlir::dsc;
using namespace mlir::dsc::plan;

namespace {

/// A GPT-like model: 8 blocks of width 64, 4 heads, 1,000 tokens, 32 tokens
/// per sample; 12h² parameters and 24·s·h² + 4·s²·h forward FLOPs per block.
TransformerShape smallGpt() {
  TransformerShape m;
  m.blocks = 8;
  m.hidden = 64;
  m.heads = 4;
  m.vocab = 1000;
  m.seq = 32;
  m.blockParameters = 12 * 64 * 64;
  m.embeddingParameters = 1000 * 64 + 32 * 64;
  m.headParameters = 2 * 64;
  m.tiedHead = true;
  m.blockFlops = 24.0 * 32 * 64 * 64 + 4.0 * 32 * 32 * 64;
  m.headFlops = 2.0 * 32 * 64 * 1000;
  return m;
}

/// A cluster whose links cost nothing, so that only compute and the bubble
/// take time.
Cluster freeLinks(int64_t world, int64_t batch) {
  Cluster c;
  c.world = world;
  c.globalBatch = batch;
  c.flops = 1e12;
  c.intraNodeBandwidth = c.interNodeBandwidth = 1e300;
  c.deviceMemory = 1e15;
  return c;
}

Mesh mesh(int64_t t, int64_t p, int64_t d, int64_t zero, int64_t b, int64_t m) {
  Mesh x;
  x.tensor = t;
  x.pipeline = p;
  x.data = d;
  x.zeroStage = zero;
  x.microBatch = b;
  x.microBatches = m;
  return x;
}

TEST(MeshPlan, ModelStatesFollowZeroAccounting) {
  TransformerShape model = smallGpt();
  Cluster cluster = freeLinks(4, 8);
  double psi = double(model.parameters());
  // Stage 0: 2Ψ + 2Ψ + 12Ψ whole.
  auto z0 = estimateMesh(model, cluster, mesh(1, 1, 4, 0, 2, 1));
  ASSERT_TRUE(bool(z0)) << llvm::toString(z0.takeError());
  EXPECT_DOUBLE_EQ(z0->parameters, 2 * psi);
  EXPECT_DOUBLE_EQ(z0->gradients, 2 * psi);
  EXPECT_DOUBLE_EQ(z0->optimizer, 12 * psi);
  // Stage 2: gradients and optimizer state over D = 4.
  auto z2 = estimateMesh(model, cluster, mesh(1, 1, 4, 2, 2, 1));
  ASSERT_TRUE(bool(z2));
  EXPECT_DOUBLE_EQ(z2->parameters, 2 * psi);
  EXPECT_DOUBLE_EQ(z2->gradients, 2 * psi / 4);
  EXPECT_DOUBLE_EQ(z2->optimizer, 12 * psi / 4);
  // Stage 3: everything over D, plus two gathered blocks.
  auto z3 = estimateMesh(model, cluster, mesh(1, 1, 4, 3, 2, 1));
  ASSERT_TRUE(bool(z3));
  EXPECT_DOUBLE_EQ(z3->parameters,
                   2 * psi / 4 + 2.0 * 2 * double(model.blockParameters));
  // fp32: 4 + 4 + 8 bytes.
  cluster.mixedPrecision = false;
  auto fp32 = estimateMesh(model, cluster, mesh(1, 1, 4, 1, 2, 1));
  ASSERT_TRUE(bool(fp32));
  EXPECT_DOUBLE_EQ(fp32->parameters, 4 * psi);
  EXPECT_DOUBLE_EQ(fp32->optimizer, 8 * psi / 4);
}

TEST(MeshPlan, TensorParallelismDividesStatesAndCountsAllReduces) {
  TransformerShape model = smallGpt();
  Cluster cluster = freeLinks(4, 4);
  auto t2 = estimateMesh(model, cluster, mesh(2, 1, 2, 0, 1, 2));
  ASSERT_TRUE(bool(t2)) << llvm::toString(t2.takeError());
  EXPECT_DOUBLE_EQ(t2->parameters, 2 * double(model.parameters()) / 2);
  // 4 all-reduces of b·s·h 16-bit elements per block and micro-batch, each
  // rank sending 2(T-1)/T of them.
  double perCall = 2.0 * 1 / 2 * (1 * 32 * 64 * 2);
  EXPECT_DOUBLE_EQ(t2->tensorBytes, 2 * 8 * 4 * perCall);
  // Activations: s·b·h·(10 + 24/T) bytes per block, 8 blocks, plus the
  // fp32 logits and their gradient over V/T.
  double perBlock = 32.0 * 64 * (10 + 24.0 / 2);
  EXPECT_DOUBLE_EQ(t2->activations, 8 * perBlock + 2.0 * 32 * 1000 / 2 * 4);
}

/// smallGpt with 4 experts in every other block (top-1, capacity factor 1:
/// 32 slots per sample); each layer's experts hold 4 · 8h² parameters.
TransformerShape smallMoe() {
  TransformerShape m = smallGpt();
  m.moeLayers = 4;
  m.experts = 4;
  m.expertSlots = 32;
  m.layerExpertParameters = 4 * 8 * 64 * 64;
  m.blockParameters += m.layerExpertParameters / 2; // the average block
  return m;
}

TEST(MeshPlan, ExpertParallelismDividesExpertsAndCountsAllToAlls) {
  TransformerShape model = smallMoe();
  Cluster cluster = freeLinks(4, 8);
  Mesh ep2 = mesh(1, 1, 4, 1, 2, 1);
  ep2.expert = 2;
  auto est = estimateMesh(model, cluster, ep2);
  ASSERT_TRUE(bool(est)) << llvm::toString(est.takeError());
  // Dense parameters whole at stage 1; each rank holds E/EP = 2 of a
  // layer's 4 experts, in 16 bits.
  double experts = 8 * (0.5 * model.layerExpertParameters);
  double dense = double(model.parameters()) - experts;
  EXPECT_DOUBLE_EQ(est->parameters, 2 * (dense + experts / 2));
  // Optimizer state: dense over D = 4, experts over the D/EP = 2 ranks of
  // their expert-data group.
  EXPECT_DOUBLE_EQ(est->optimizer, 12 * dense / 4 + 12 * (experts / 2) / 2);
  // 4 all-to-alls per MoE layer and micro-batch, each sending (EP-1)/EP of
  // b · 32 slots · h 16-bit elements.
  double perCall = 0.5 * (2 * 32 * 64 * 2);
  EXPECT_DOUBLE_EQ(est->expertBytes, 4 * 4 * perCall);
  // Without expert parallelism no all-to-all leaves the rank.
  auto ep1 = estimateMesh(model, cluster, mesh(1, 1, 4, 1, 2, 1));
  ASSERT_TRUE(bool(ep1));
  EXPECT_DOUBLE_EQ(ep1->expertBytes, 0);
  EXPECT_DOUBLE_EQ(ep1->parameters, 2 * double(model.parameters()));
}

TEST(MeshPlan, RejectsExpertGroupsThatDoNotDivide) {
  Cluster cluster = freeLinks(4, 8);
  Mesh bad = mesh(1, 1, 4, 1, 2, 1);
  bad.expert = 8; // more than the 4 data ranks
  auto tooMany = estimateMesh(smallMoe(), cluster, bad);
  ASSERT_FALSE(bool(tooMany));
  EXPECT_NE(llvm::toString(tooMany.takeError()).find("must divide"), std::string::npos);
  bad.expert = 2;
  auto dense = estimateMesh(smallGpt(), cluster, bad);
  ASSERT_FALSE(bool(dense));
  EXPECT_NE(llvm::toString(dense.takeError()).find("only a model with experts"),
            std::string::npos);
}

TEST(MeshPlan, PipelineBubbleIsTheScheduleFormula) {
  TransformerShape model = smallGpt();
  model.headFlops = 0; // equal stages
  Cluster cluster = freeLinks(4, 16);
  for (int64_t m : {4, 8, 16}) {
    auto est = estimateMesh(model, cluster, mesh(1, 4, 1, 0, 16 / m, m));
    ASSERT_TRUE(bool(est)) << llvm::toString(est.takeError());
    EXPECT_NEAR(est->bubbleFraction, 3.0 / double(m), 1e-12) << m;
    EXPECT_NEAR(est->step(), est->compute * (1 + 3.0 / double(m)),
                1e-12 * est->step());
  }
  // 1F1B holds at most P micro-batches on the first stage: 2 blocks each.
  auto est = estimateMesh(model, cluster, mesh(1, 4, 1, 0, 1, 16));
  ASSERT_TRUE(bool(est));
  double perBlock = 32.0 * 64 * 34;
  EXPECT_DOUBLE_EQ(est->activations, 4 * 2 * perBlock);
}

TEST(MeshPlan, CheckpointingTradesActivationsForRecompute) {
  TransformerShape model = smallGpt();
  Cluster cluster = freeLinks(1, 2);
  Mesh plain = mesh(1, 1, 1, 0, 2, 1);
  Mesh ckpt = plain;
  ckpt.checkpoint = true;
  auto a = estimateMesh(model, cluster, plain);
  auto b = estimateMesh(model, cluster, ckpt);
  ASSERT_TRUE(a && b);
  EXPECT_LT(b->activations, a->activations);
  EXPECT_DOUBLE_EQ(b->recompute, b->compute / 3);
  EXPECT_DOUBLE_EQ(a->recompute, 0);
}

TEST(MeshPlan, RejectsMeshesThatDoNotDivide) {
  TransformerShape model = smallGpt();
  Cluster cluster = freeLinks(8, 8);
  auto heads = estimateMesh(model, cluster, mesh(8, 1, 1, 0, 8, 1));
  ASSERT_FALSE(bool(heads));
  EXPECT_NE(llvm::toString(heads.takeError()).find("must divide the 4 heads"),
            std::string::npos);
  auto world = estimateMesh(model, cluster, mesh(2, 1, 2, 0, 2, 2));
  ASSERT_FALSE(bool(world));
  EXPECT_NE(llvm::toString(world.takeError()).find("world size 8"),
            std::string::npos);
  Cluster many = freeLinks(16, 16);
  auto stages = estimateMesh(model, many, mesh(1, 16, 1, 0, 1, 16));
  ASSERT_FALSE(bool(stages));
  EXPECT_NE(llvm::toString(stages.takeError()).find("more than the 8 blocks"),
            std::string::npos);
}

TEST(MeshPlan, RankingPutsFittingMeshesFirstFastestFirst) {
  TransformerShape model = smallGpt();
  // Free links and ample memory: nothing beats plain data parallelism, the
  // only mesh without a bubble or recomputation.
  auto ranked = rankMeshes(model, freeLinks(8, 32));
  ASSERT_TRUE(bool(ranked)) << llvm::toString(ranked.takeError());
  const MeshEstimate &best = ranked->front();
  EXPECT_EQ(best.mesh.pipeline, 1);
  EXPECT_FALSE(best.mesh.checkpoint);
  EXPECT_EQ(best.reason, "fastest that fits");
  EXPECT_DOUBLE_EQ(best.bubble, 0);
  for (size_t i = 1; i < ranked->size(); ++i) {
    EXPECT_LE((*ranked)[i - 1].step(), (*ranked)[i].step());
    EXPECT_TRUE((*ranked)[i].fits);
  }

  // Memory for little more than the states at ZeRO-3: only meshes that
  // partition or split enough fit, and the reasons say why the others do
  // not.
  Cluster tight = freeLinks(8, 32);
  tight.deviceMemory = 2.5e6;
  auto squeezed = rankMeshes(model, tight);
  ASSERT_TRUE(bool(squeezed));
  bool sawFit = false, sawMiss = false;
  for (const MeshEstimate &e : *squeezed) {
    EXPECT_EQ(e.fits, e.memory() <= tight.deviceMemory);
    if (e.fits) {
      EXPECT_FALSE(sawMiss) << "a fitting mesh ranked after one that does not";
      sawFit = true;
    } else {
      sawMiss = true;
      EXPECT_EQ(e.reason.rfind("needs ", 0), 0u) << e.reason;
    }
  }
  EXPECT_TRUE(sawFit && sawMiss);
}

TEST(MeshPlan, RejectsAClusterWithoutAGlobalBatch) {
  auto ranked = rankMeshes(smallGpt(), freeLinks(8, 0));
  ASSERT_FALSE(bool(ranked));
  EXPECT_NE(llvm::toString(ranked.takeError()).find("global batch"),
            std::string::npos);
}

} // namespace

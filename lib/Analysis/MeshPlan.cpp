//===- MeshPlan.cpp - which device mesh trains a model fastest ------------===//

#include "dsc/Analysis/MeshPlan.h"

#include "dsc/Analysis/PipelineStages.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <tuple>

using namespace mlir::dsc;
using namespace mlir::dsc::plan;
using llvm::formatv;

static llvm::Error planError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The bandwidth of a group of `size` ranks `stride` apart: nodes hold
/// consecutive ranks, so the group stays in one node while it spans no more
/// than a node's ranks.
static double groupBandwidth(const Cluster &cluster, int64_t stride,
                             int64_t size) {
  return stride * size <= cluster.nodeSize ? cluster.intraNodeBandwidth
                                           : cluster.interNodeBandwidth;
}

/// Seconds of a ring all-reduce of `bytes` over `ranks` (each sends
/// 2(n-1)/n of it), and the bytes each sends.
static double allReduceBytes(double bytes, int64_t ranks) {
  return ranks > 1 ? 2.0 * double(ranks - 1) / double(ranks) * bytes : 0.0;
}
/// ... and of an all-gather or reduce-scatter ((n-1)/n of the whole).
static double gatherBytes(double bytes, int64_t ranks) {
  return ranks > 1 ? double(ranks - 1) / double(ranks) * bytes : 0.0;
}

namespace {
/// How the blocks are spread over the pipeline's ranks.
struct StageSplit {
  llvm::SmallVector<int64_t> blocks; // per rank, all chunks together
  double maxFlops = 0;               // per sample, the busiest rank's forward
};
} // namespace

static llvm::Expected<StageSplit> splitStages(const TransformerShape &model,
                                              const Mesh &mesh) {
  int64_t p = mesh.pipeline, v = mesh.chunks;
  StageSplit split;
  if (v == 1) {
    // The cut a pipeline pass makes: balanced by FLOPs, the head's product
    // on the last stage.
    llvm::SmallVector<double> costs(model.blocks, model.blockFlops);
    auto cut = pipeline::balanceStages(costs, p, 0, model.headFlops);
    if (!cut)
      return cut.takeError();
    for (int64_t s = 0; s < p; ++s) {
      int64_t end = s + 1 < p ? cut->firstBlock[s + 1] : model.blocks;
      split.blocks.push_back(end - cut->firstBlock[s]);
    }
    split.maxFlops = cut->maxStageCost();
    return split;
  }
  // Interleaving: Megatron's even split into P·V chunks.
  if (model.blocks % (p * v) != 0)
    return planError(formatv("{0} blocks do not divide into {1} x {2} chunks",
                             model.blocks, p, v));
  split.blocks.assign(p, model.blocks / p);
  double perRank = double(model.blocks / p) * model.blockFlops;
  split.maxFlops = perRank + model.headFlops;
  return split;
}

llvm::Expected<MeshEstimate> plan::estimateMesh(const TransformerShape &model,
                                                const Cluster &cluster,
                                                const Mesh &mesh) {
  const int64_t t = mesh.tensor, p = mesh.pipeline, v = mesh.chunks,
                d = mesh.data, m = mesh.microBatches, b = mesh.microBatch;
  if (t < 1 || p < 1 || v < 1 || d < 1 || m < 1 || b < 1)
    return planError("every mesh dimension must be at least 1");
  if (t * p * d != cluster.world)
    return planError(formatv("T x P x D = {0} x {1} x {2} is not the world "
                             "size {3}",
                             t, p, d, cluster.world));
  if (d * m * b != cluster.globalBatch)
    return planError(formatv("D x M x b = {0} x {1} x {2} is not the global "
                             "batch {3}",
                             d, m, b, cluster.globalBatch));
  if (model.hidden % t != 0 || (model.heads > 0 && model.heads % t != 0))
    return planError(formatv("T = {0} must divide the {1} heads and the "
                             "width {2}",
                             t, model.heads, model.hidden));
  if (p > model.blocks)
    return planError(formatv("P = {0} is more than the {1} blocks", p,
                             model.blocks));
  if (mesh.zeroStage < 0 || mesh.zeroStage > 3)
    return planError("the ZeRO stage is 0, 1, 2 or 3");
  const int64_t ep = mesh.expert;
  if (ep < 1 || (model.experts == 0 && ep != 1))
    return planError(formatv("EP = {0}: only a model with experts has "
                             "expert parallelism",
                             ep));
  if (model.experts > 0 && (model.experts % ep != 0 || d % ep != 0))
    return planError(formatv("EP = {0} must divide the {1} experts and the "
                             "{2} data ranks",
                             ep, model.experts, d));
  auto split = splitStages(model, mesh);
  if (!split)
    return split.takeError();

  MeshEstimate est;
  est.mesh = mesh;
  const double e = cluster.mixedPrecision ? 2.0 : 4.0; // 16-bit or fp32
  const double optimizerBytes = cluster.mixedPrecision ? 12.0 : 8.0;
  const double rate = cluster.flops;
  const double tokens = double(b) * double(model.seq);
  const double streamBytes = tokens * double(model.hidden) * e; // b·s·h

  // Pass costs of one micro-batch on the busiest rank.
  int64_t maxBlocks = *llvm::max_element(split->blocks);
  double tf = double(b) * split->maxFlops / double(t) / rate;
  double tensorBw = groupBandwidth(cluster, 1, t);
  double allReduce = allReduceBytes(streamBytes, t) / tensorBw;
  double tensorPass = double(maxBlocks) * 2 * allReduce; // 2 per block each way
  // The busiest rank's MoE layers, at the model's share of MoE blocks; each
  // runs 2 all-to-alls a pass, over the expert group (EP data ranks, T
  // apart), of the rank's 1/T of its dispatched slots.
  const double moeShare =
      model.experts > 0 ? double(model.moeLayers) / double(model.blocks) : 0.0;
  double moeLayers = double(maxBlocks) * moeShare;
  double allToAllBytes = gatherBytes(double(b) * model.expertSlots *
                                         double(model.hidden) * e / double(t),
                                     ep);
  double expertPass =
      moeLayers * 2 * allToAllBytes / groupBandwidth(cluster, t, ep);
  tensorPass += expertPass;
  pipeline::PassCosts costs;
  costs.forward = tf + tensorPass;
  double recompute = mesh.checkpoint ? tf : 0.0;
  bool split2 = mesh.schedule == pipeline::ScheduleKind::zeroBubbleH1;
  if (split2) {
    // The input-gradient and weight-gradient halves of the backward.
    costs.backward = tf + tensorPass + recompute;
    costs.weight = tf;
  } else {
    costs.backward = 2 * tf + tensorPass + recompute;
  }
  double pipeBw = groupBandwidth(cluster, t * d, p);
  double sendLatency = p > 1 ? streamBytes / pipeBw : 0.0;
  auto schedule = pipeline::buildSchedule(mesh.schedule, {p, m, v});
  if (!schedule)
    return schedule.takeError();
  auto sim = pipeline::simulatePipeline(*schedule, costs, sendLatency);
  if (!sim)
    return sim.takeError();

  est.compute = double(m) * 3 * tf;
  est.recompute = double(m) * recompute;
  est.expertComm = double(m) * 2 * expertPass;
  est.tensorComm = double(m) * 2 * tensorPass - est.expertComm;
  est.bubble = std::max(0.0, sim->makespan - sim->ideal);
  est.bubbleFraction = sim->bubbleFraction();

  // Memory of each rank; the plan keeps the largest.
  double perBlock = tokens * double(model.hidden) * (10.0 + 24.0 / double(t)) *
                    (e / 2.0);
  // A block's experts, all E, and the E/EP of them a rank holds (its 1/T
  // of each, below); ZeRO partitions them over the expert-data group.
  const double layerExperts = moeShare * double(model.layerExpertParameters);
  const double denseBlock = double(model.blockParameters) - layerExperts;
  const double expertData = double(d / ep);
  double worstParameters = 0, worstExperts = 0;
  for (int64_t r = 0; r < p; ++r) {
    double psi = double(split->blocks[r]) * denseBlock;
    if (r == 0)
      psi += double(model.embeddingParameters);
    if (r == p - 1) {
      psi += double(model.headParameters);
      if (model.tiedHead && p > 1)
        psi += double(model.vocab) * double(model.hidden);
    }
    psi /= double(t);
    double experts =
        double(split->blocks[r]) * layerExperts / double(ep) / double(t);
    worstParameters = std::max(worstParameters, psi);
    worstExperts = std::max(worstExperts, experts);
    // Bytes of `bytesPer` per parameter, ZeRO-partitioned from `stage` on.
    auto held = [&](double bytesPer, int64_t stage) {
      bool partitioned = mesh.zeroStage >= stage;
      return psi * bytesPer / (partitioned ? double(d) : 1.0) +
             experts * bytesPer / (partitioned ? expertData : 1.0);
    };
    double params = held(e, 3);
    if (mesh.zeroStage == 3) // a block gathered, the next one prefetched
      params += 2.0 * (denseBlock + layerExperts / double(ep)) / double(t) * e;
    double grads = held(e, 2);
    double optimizer = held(optimizerBytes, 1);
    double blocksPerChunk = double(split->blocks[r]) / double(v);
    double inFlight = double(sim->peakInFlight[r]) * blocksPerChunk;
    double acts = mesh.checkpoint ? inFlight * streamBytes + perBlock
                                  : inFlight * perBlock;
    if (r == p - 1) // fp32 logits [b·s, V/T] and their gradient
      acts += 2.0 * tokens * double(model.vocab) / double(t) * 4.0;
    if (params + grads + optimizer + acts > est.memory()) {
      est.parameters = params;
      est.gradients = grads;
      est.optimizer = optimizer;
      est.activations = acts;
    }
  }
  est.fits = est.memory() <= cluster.deviceMemory;

  // Data-parallel traffic of the rank with the most parameters.
  // The experts' over the expert-data group (EP·T apart).
  double dataBw = groupBandwidth(cluster, t, d);
  double expertDataBw = groupBandwidth(cluster, t * ep, d / ep);
  auto traffic = [&](double gradientBytes, int64_t ranks) {
    double reduce = mesh.zeroStage == 3 ? gatherBytes(gradientBytes, ranks)
                                        : allReduceBytes(gradientBytes, ranks);
    double gathers =
        mesh.zeroStage == 3 ? 2.0 * gatherBytes(gradientBytes, ranks) : 0.0;
    return std::make_pair(reduce, gathers);
  };
  auto [denseReduce, denseGathers] = traffic(worstParameters * e, d);
  auto [expertReduce, expertGathers] = traffic(worstExperts * e, d / ep);
  double reduceTime = denseReduce / dataBw + expertReduce / expertDataBw;
  double gatherTime = denseGathers / dataBw + expertGathers / expertDataBw;
  // The reduction overlaps the backward that produces the gradients; stage
  // 3's gathers are prefetched behind each micro-batch's compute.
  est.dataComm = std::max(0.0, reduceTime - costs.backward) +
                 double(m) * std::max(0.0, gatherTime -
                                               (costs.forward + costs.backward +
                                                costs.weight));
  est.dataBytes = denseReduce + expertReduce +
                  double(m) * (denseGathers + expertGathers);
  est.expertBytes = double(m) * moeLayers * 4 * allToAllBytes;
  est.tensorBytes = double(m) * double(maxBlocks) * 4 * allReduceBytes(streamBytes, t);
  est.pipelineBytes =
      p > 1 ? double(m) * double(v) * (p > 2 ? 2.0 : 1.0) * streamBytes : 0.0;

  double modelFlops = 3.0 *
                      (double(model.blocks) * model.blockFlops + model.headFlops) *
                      double(cluster.globalBatch);
  est.mfu = modelFlops / (est.step() * double(cluster.world) * rate);
  return est;
}

/// Seconds with a unit that keeps 3-4 significant digits.
static std::string seconds(double s) {
  if (s >= 1 || s == 0)
    return formatv("{0:F3} s", s).str();
  if (s >= 1e-3)
    return formatv("{0:F3} ms", s * 1e3).str();
  return formatv("{0:F3} us", s * 1e6).str();
}

static bool isPowerOfTwo(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

/// The reason `est` ranks below `best`: the term it loses most time on.
static std::string slowerBecause(const MeshEstimate &est,
                                 const MeshEstimate &best) {
  double lost = est.step() - best.step();
  if (lost <= 1e-12 * best.step())
    return "as fast as #1";
  std::pair<double, const char *> terms[] = {
      {est.compute - best.compute, "compute"},
      {est.recompute - best.recompute, "recomputation"},
      {est.tensorComm - best.tensorComm, "tensor all-reduces"},
      {est.expertComm - best.expertComm, "expert all-to-alls"},
      {est.bubble - best.bubble, "pipeline bubble"},
      {est.dataComm - best.dataComm, "exposed data-parallel traffic"},
  };
  auto *worst = llvm::max_element(
      terms, [](const auto &a, const auto &b) { return a.first < b.first; });
  return formatv("+{0:F1}% step: {1} +{2}", 100.0 * lost / best.step(),
                 worst->second, seconds(worst->first))
      .str();
}

static std::string tooBig(const MeshEstimate &est, const Cluster &cluster) {
  std::pair<double, const char *> parts[] = {
      {est.parameters, "parameters"},
      {est.gradients, "gradients"},
      {est.optimizer, "optimizer state"},
      {est.activations, "activations"},
  };
  auto *largest = llvm::max_element(
      parts, [](const auto &a, const auto &b) { return a.first < b.first; });
  return formatv("needs {0:F1} GB > {1:F1} GB ({2} {3:F1} GB)",
                 est.memory() / 1e9, cluster.deviceMemory / 1e9,
                 largest->second, largest->first / 1e9)
      .str();
}

llvm::Expected<std::vector<MeshEstimate>>
plan::rankMeshes(const TransformerShape &model, const Cluster &cluster,
                 MeshFilter filter) {
  if (model.blocks < 1 || model.hidden < 1 || model.seq < 1 ||
      model.blockFlops <= 0)
    return planError("the model has no repeated blocks to plan with");
  if (cluster.world < 1 || cluster.nodeSize < 1)
    return planError("the world and node sizes must be at least 1");
  if (cluster.globalBatch < 1)
    return planError("the global batch (samples per step) must be given");
  if (!(cluster.flops > 0) || !(cluster.intraNodeBandwidth > 0) ||
      !(cluster.interNodeBandwidth > 0) || !(cluster.deviceMemory > 0))
    return planError("the FLOP rate, bandwidths and device memory must be "
                     "positive");

  std::vector<MeshEstimate> all;
  auto consider = [&](const Mesh &mesh) {
    auto est = estimateMesh(model, cluster, mesh);
    if (est)
      all.push_back(std::move(*est));
    else
      llvm::consumeError(est.takeError()); // not a mesh of this model
  };
  using pipeline::ScheduleKind;
  for (int64_t t = 1; t <= cluster.nodeSize && t <= cluster.world; t *= 2) {
    if (cluster.world % t != 0 || (filter.tensor && t != filter.tensor))
      continue;
    for (int64_t p = 1; p <= model.blocks; ++p) {
      if (cluster.world % (t * p) != 0 ||
          (filter.pipeline ? p != filter.pipeline
                           : !(isPowerOfTwo(p) || model.blocks % p == 0)))
        continue;
      int64_t d = cluster.world / (t * p);
      if (cluster.globalBatch % d != 0)
        continue;
      int64_t perData = cluster.globalBatch / d;
      for (int64_t b = 1; b <= perData; b *= 2) {
        if (perData % b != 0)
          continue;
        int64_t m = perData / b;
        llvm::SmallVector<std::pair<ScheduleKind, int64_t>> schedules{
            {ScheduleKind::oneFOneB, 1}};
        if (p > 1) {
          schedules.push_back({ScheduleKind::zeroBubbleH1, 1});
          for (int64_t v = 2; v <= 4; ++v)
            if (model.blocks % (p * v) == 0 && m % p == 0)
              schedules.push_back({ScheduleKind::interleaved, v});
        }
        // Expert parallelism: powers of two dividing the experts and D.
        llvm::SmallVector<int64_t> experts{1};
        if (model.experts > 0)
          for (int64_t ep = 2; ep <= model.experts && ep <= d; ep *= 2)
            if (model.experts % ep == 0 && d % ep == 0)
              experts.push_back(ep);
        if (filter.expert)
          experts.assign(1, filter.expert);
        for (int64_t ep : experts)
          for (auto [kind, v] : schedules)
            for (bool checkpoint : {false, true})
              for (int64_t zero = 0; zero <= 3; ++zero) {
                Mesh mesh;
                mesh.tensor = t;
                mesh.pipeline = p;
                mesh.chunks = v;
                mesh.data = d;
                mesh.expert = ep;
                mesh.zeroStage = zero;
                mesh.microBatch = b;
                mesh.microBatches = m;
                mesh.checkpoint = checkpoint;
                mesh.schedule = kind;
                consider(mesh);
              }
      }
    }
  }
  if (all.empty())
    return planError("no mesh of the model divides the world and the global "
                     "batch");

  // Those that fit first, fastest first; the others smallest first; ties
  // by memory, then in the order enumerated (llvm::sort is not stable).
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  auto key = [&](size_t i) {
    const MeshEstimate &e = all[i];
    return std::make_tuple(!e.fits, e.fits ? e.step() : e.memory(),
                           e.memory(), i);
  };
  llvm::sort(order, [&](size_t a, size_t b) { return key(a) < key(b); });
  std::vector<MeshEstimate> ranked;
  ranked.reserve(all.size());
  for (size_t i : order)
    ranked.push_back(std::move(all[i]));
  all = std::move(ranked);
  const MeshEstimate *best = all.front().fits ? &all.front() : nullptr;
  for (MeshEstimate &est : all)
    est.reason = !est.fits       ? tooBig(est, cluster)
                 : &est == best ? "fastest that fits"
                                : slowerBecause(est, *best);
  return all;
}

static std::string describe(const Mesh &mesh) {
  return formatv("{0,2} {1,3} {2,2} {3,4} {9,3} {4,4} {5,3} {6,5} {7,4} {8,-11}",
                 mesh.tensor, mesh.pipeline, mesh.chunks, mesh.data,
                 mesh.zeroStage, mesh.microBatch, mesh.microBatches,
                 mesh.checkpoint ? "yes" : "no",
                 mesh.pipeline > 1
                     ? pipeline::stringifyScheduleKind(mesh.schedule)
                     : llvm::StringRef("-"),
                 mesh.expert)
      .str();
}

static void printRow(llvm::raw_ostream &os, size_t index,
                     const MeshEstimate &est) {
  os << formatv("{0,4} {1} {2,7:F1} {3,10} {4,6:F1} {5,8:F2} {6,8:F2} "
                "{7,8:F2} {10,8:F2} {8,5:F1}  {9}\n",
                index + 1, describe(est.mesh), est.memory() / 1e9,
                seconds(est.step()),
                100.0 * est.bubbleFraction, est.tensorBytes / 1e9,
                est.pipelineBytes / 1e9, est.dataBytes / 1e9, 100.0 * est.mfu,
                est.reason, est.expertBytes / 1e9);
}

void plan::printPlan(llvm::raw_ostream &os, const TransformerShape &model,
                     const Cluster &cluster, llvm::ArrayRef<MeshEstimate> ranked,
                     size_t rows) {
  os << formatv("dsc-plan: {0} blocks, width {1}, {2} heads, vocabulary {3}, "
                "{4} tokens per sample, {5:E3} parameters\n",
                model.blocks, model.hidden, model.heads, model.vocab, model.seq,
                double(model.parameters()));
  if (model.experts > 0)
    os << formatv("  mixture of experts: {0} of the blocks route to {1} "
                  "experts ({2:E3} expert parameters each layer, {3:F1} slots "
                  "per sample)\n",
                  model.moeLayers, model.experts,
                  double(model.layerExpertParameters), model.expertSlots);
  os << formatv("  on {0} ranks ({1} per node), {2:F1} GB and {3:F1} TFLOP/s "
                "each, {4:F1} GB/s within a node, {5:F1} GB/s across; {6} "
                "samples per step, {7}\n",
                cluster.world, cluster.nodeSize, cluster.deviceMemory / 1e9,
                cluster.flops / 1e12, cluster.intraNodeBandwidth / 1e9,
                cluster.interNodeBandwidth / 1e9, cluster.globalBatch,
                cluster.mixedPrecision ? "mixed precision" : "fp32");
  size_t fitting = llvm::count_if(ranked, [](const MeshEstimate &e) { return e.fits; });
  os << formatv("  {0} meshes considered, {1} fit in memory\n", ranked.size(),
                fitting);
  os << "   #  T   P  V    D  EP zero   b     M ckpt schedule    mem(GB)       "
        "step bubble%   TP(GB)   PP(GB)   DP(GB)  A2A(GB)  MFU%  why\n";
  size_t shown = std::min(rows, fitting);
  for (size_t i = 0; i < shown; ++i)
    printRow(os, i, ranked[i]);
  auto zeroAlone = llvm::find_if(ranked, [](const MeshEstimate &e) {
    return e.fits && e.mesh.tensor == 1 && e.mesh.pipeline == 1;
  });
  if (zeroAlone != ranked.end() &&
      size_t(zeroAlone - ranked.begin()) >= shown)
    printRow(os, zeroAlone - ranked.begin(), *zeroAlone);
  if (fitting == 0 && !ranked.empty()) {
    os << "  none fits; the smallest:\n";
    printRow(os, 0, ranked.front());
  }
  if (fitting > 0) {
    const MeshEstimate &best = ranked.front();
    os << formatv("  answer: T={0} P={1} V={2} D={3}{10} ZeRO-{4}, "
                  "micro-batch {5} x {6}{7}: {8} per step, {9:F1}% MFU\n",
                  best.mesh.tensor, best.mesh.pipeline, best.mesh.chunks,
                  best.mesh.data, best.mesh.zeroStage, best.mesh.microBatch,
                  best.mesh.microBatches,
                  best.mesh.checkpoint ? ", checkpointed" : "",
                  seconds(best.step()),
                  100.0 * best.mfu,
                  model.experts > 0
                      ? formatv(" EP={0}", best.mesh.expert).str()
                      : std::string());
    bool considered = llvm::any_of(ranked, [](const MeshEstimate &e) {
      return e.mesh.tensor == 1 && e.mesh.pipeline == 1;
    });
    if (!considered)
      os << formatv("  ZeRO alone (T = P = 1): not considered (the global "
                    "batch {0} does not divide over {1} data ranks, or a "
                    "filter excludes it)\n",
                    cluster.globalBatch, cluster.world);
    else if (zeroAlone == ranked.end())
      os << "  ZeRO alone (T = P = 1): no such mesh fits\n";
    else
      os << formatv("  ZeRO alone (T = P = 1): #{0}, {1:F2}x the step of #1\n",
                    zeroAlone - ranked.begin() + 1,
                    zeroAlone->step() / best.step());
  }
}

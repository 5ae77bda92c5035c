//===- DataVariants.cpp - --dsc-data-variants ------------------------------===//
//
// Curriculum learning and random-LTD change the length a step runs on every
// few steps; dsc compiles a bounded family of static-shape variants of the
// step instead (one artifact, one arena sized by the largest). This pass
// decides the family: it runs DeepSpeed's schedules (DataSchedule.h, the
// runtime's implementation, which dsc-run runs to pick each step's variant)
// over their whole ramp, fits the forward's matrix-product FLOPs as a
// quadratic of each length (the FLOPs of rewritten clones of the module at
// three lengths), and keeps the fewest lengths that cost at most `budget`
// more than the exact schedule. It records the schedule and the buckets
// for dsc-run (the module attribute dsc.data_schedule, which the emitters
// compile into the artifact's run settings) and writes the variants, with
// their FLOPs, to `output` for dsc-compile. The graph itself is unchanged:
// the pipeline's --dsc-sequence-length and --dsc-random-ltd build one
// variant. Staged knowledge distillation is one more schedule of the same
// kind: the steps after kd-stop-step run a variant without the teacher.
//
//===----------------------------------------------------------------------===//

#include "dsc/Analysis/MatmulFlops.h"
#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Transforms/Passes.h"
#include "dsc/runtime/DataSchedule.h"

#include "BlockNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <set>
#include <tuple>

namespace mlir::dsc {
#define GEN_PASS_DEF_DATAVARIANTS
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;
namespace rt = ::dsc::rt;

namespace {
struct Variant {
  int64_t seqlen, kept;
  bool teacher; // runs the teacher of staged KD (true without staged KD)
  double flops = 0;
  int64_t steps = 0; // of the schedules' ramp
};

struct DataVariantsPass : public mlir::dsc::impl::DataVariantsBase<DataVariantsPass> {
  using DataVariantsBase::DataVariantsBase;

  bool curriculumOn() const { return curriculumSchedule != "none"; }
  bool ltdOn() const { return ltdMax > 0; }
  bool stagedKdOn() const { return kdStopStep > 0; }

  FailureOr<rt::CurriculumSchedule> curriculum(ModuleOp module) {
    rt::CurriculumSchedule s;
    if (curriculumSchedule == "fixed_linear")
      s.type = rt::CurriculumType::FixedLinear;
    else if (curriculumSchedule == "fixed_root")
      s.type = rt::CurriculumType::FixedRoot;
    else if (curriculumSchedule == "fixed_discrete")
      s.type = rt::CurriculumType::FixedDiscrete;
    else
      return module.emitError() << "--dsc-data-variants: curriculum-schedule "
                                   "must be none, fixed_linear, fixed_root or "
                                   "fixed_discrete, got '"
                                << curriculumSchedule << "'";
    s.minDifficulty = curriculumMin;
    s.maxDifficulty = curriculumMax;
    s.totalSteps = curriculumTotalSteps;
    s.difficultyStep = curriculumDifficultyStep;
    s.rootDegree = curriculumRootDegree;
    s.difficulty.assign(curriculumDifficulty.begin(), curriculumDifficulty.end());
    s.maxStep.assign(curriculumMaxStep.begin(), curriculumMaxStep.end());
    if (std::optional<std::string> problem = rt::checkCurriculum(s))
      return module.emitError() << "--dsc-data-variants: curriculum: " << *problem;
    return s;
  }

  /// The forward graph's FLOPs at sequence length `seqlen` with `kept`
  /// tokens in the random-LTD blocks (kept >= seqlen: none dropped).
  FailureOr<double> flopsOf(ModuleOp module, int64_t seqlen, int64_t kept) {
    // A module of its own (not nested in the one this pass runs on), so a
    // pass manager of its own.
    OwningOpRef<ModuleOp> clone = module.clone();
    PassManager pm(module.getContext());
    if (seqlen < fullLength) {
      SequenceLengthOptions cut;
      cut.length = seqlen;
      pm.addPass(createSequenceLength(cut));
    }
    if (kept < seqlen) {
      RandomLtdOptions ltd;
      ltd.kept = kept;
      ltd.layers.assign(ltdLayers.begin(), ltdLayers.end());
      pm.addPass(createRandomLtd(ltd));
    }
    if (failed(pm.run(*clone)))
      return failure();
    return matmulFlops(*clone);
  }

  /// FLOPs as a + b v + c v^2 from three lengths (exact for a transformer).
  FailureOr<rt::LengthCost> fitCost(ModuleOp module, int64_t lo, int64_t hi,
                                    bool ofKept) {
    int64_t mid = (lo + hi) / 2;
    if (hi - lo < 2)
      return rt::LengthCost{0, 1, 0}; // one or two lengths: any cost orders them
    std::array<int64_t, 3> x{lo, mid, hi};
    std::array<double, 3> y;
    for (int i = 0; i < 3; ++i) {
      FailureOr<double> f = ofKept ? flopsOf(module, fullLength, x[i])
                                   : flopsOf(module, x[i], fullLength);
      if (failed(f))
        return failure();
      y[i] = *f;
    }
    // Newton's divided differences.
    double d01 = (y[1] - y[0]) / double(x[1] - x[0]);
    double d12 = (y[2] - y[1]) / double(x[2] - x[1]);
    double c = (d12 - d01) / double(x[2] - x[0]);
    double b = d01 - c * double(x[0] + x[1]);
    double a = y[0] - b * double(x[0]) - c * double(x[0]) * double(x[0]);
    return rt::LengthCost{a, b, c};
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (kdStopStep < 0) {
      module.emitError() << "--dsc-data-variants: kd-stop-step must be at "
                            "least 0, got "
                         << int64_t(kdStopStep);
      return signalPassFailure();
    }
    if (!curriculumOn() && !ltdOn() && !stagedKdOn())
      return;
    if (!(budget >= 0)) {
      module.emitError() << "--dsc-data-variants: budget must be at least 0, got "
                         << double(budget);
      return signalPassFailure();
    }
    func::FuncOp forward;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && func.getNumArguments() > 0 &&
          func.getArgAttr(0, "dsc.input"))
        forward = func;
    auto tokens = forward ? dyn_cast<RankedTensorType>(forward.getArgument(0).getType())
                          : RankedTensorType();
    if (!tokens || tokens.getRank() < 2) {
      module.emitError("--dsc-data-variants: the graph's first input must be "
                       "[batch, seq, ...]");
      return signalPassFailure();
    }
    fullLength = tokens.getDimSize(1);

    std::optional<rt::CurriculumSchedule> cl;
    if (curriculumOn()) {
      FailureOr<rt::CurriculumSchedule> s = curriculum(module);
      if (failed(s))
        return signalPassFailure();
      if (s->maxDifficulty > fullLength) {
        module.emitError() << "--dsc-data-variants: curriculum max_difficulty "
                           << s->maxDifficulty
                           << " exceeds the graph's sequence length "
                           << fullLength;
        return signalPassFailure();
      }
      cl = *s;
    }
    std::optional<rt::RandomLtdSchedule> ltd;
    int64_t ltdLayerCount = 0, totalLayers = 0;
    if (ltdOn()) {
      SmallVector<Operation *> ops;
      for (Operation &op : forward.getBody().front().without_terminator())
        ops.push_back(&op);
      totalLayers = findBlocks(ops).size();
      ltdLayerCount = ltdLayers.empty() ? std::max<int64_t>(totalLayers - 2, 0)
                                        : int64_t(ltdLayers.size());
      rt::RandomLtdSchedule s;
      s.minValue = ltdMin;
      s.maxValue = ltdMax;
      s.requireSteps = ltdRequireSteps;
      s.seqPerStep = ltdSeqPerStep;
      s.totalLayers = totalLayers;
      s.ltdLayers = ltdLayerCount;
      if (std::optional<std::string> problem = rt::checkRandomLtd(s)) {
        module.emitError() << "--dsc-data-variants: random-LTD: " << *problem;
        return signalPassFailure();
      }
      if (s.maxValue > fullLength) {
        module.emitError() << "--dsc-data-variants: random-LTD max_value "
                           << s.maxValue << " exceeds the graph's sequence length "
                           << fullLength;
        return signalPassFailure();
      }
      ltd = s;
    }

    // The ramps, and the buckets of each.
    int64_t horizon = 1;
    if (cl)
      horizon = std::max(horizon, cl->type == rt::CurriculumType::FixedDiscrete
                                      ? cl->maxStep.back() + 1
                                      : cl->totalSteps + 1);
    if (ltd)
      horizon = std::max(horizon, ltd->requireSteps + 1);
    if (stagedKdOn())
      horizon = std::max(horizon, int64_t(kdStopStep) + 1);
    auto teacherOf = [&](int64_t step) {
      return !stagedKdOn() || step <= kdStopStep;
    };
    auto seqlenOf = [&](int64_t step) {
      return cl ? rt::curriculumSeqlen(*cl, step) : fullLength;
    };
    auto keptOf = [&](int64_t step) {
      return ltd ? rt::randomLtdKept(*ltd, step) : fullLength;
    };
    std::vector<int64_t> seqBuckets{fullLength}, keptBuckets{fullLength};
    if (cl) {
      rt::LengthHistogram h = rt::lengthHistogram(horizon, seqlenOf);
      FailureOr<rt::LengthCost> cost =
          fitCost(module, h.front().first, h.back().first, /*ofKept=*/false);
      if (failed(cost))
        return signalPassFailure();
      seqBuckets = rt::chooseBuckets(h, *cost, budget);
      seqOverhead = rt::bucketOverhead(h, seqBuckets, *cost);
    }
    if (ltd) {
      rt::LengthHistogram h = rt::lengthHistogram(horizon, keptOf);
      FailureOr<rt::LengthCost> cost =
          fitCost(module, h.front().first, h.back().first, /*ofKept=*/true);
      if (failed(cost))
        return signalPassFailure();
      keptBuckets = rt::chooseBuckets(h, *cost, budget);
      keptOverhead = rt::bucketOverhead(h, keptBuckets, *cost);
    }

    // The variants the steps use, the full-length step with the teacher
    // first (evaluation's and the one without the schedules).
    std::vector<Variant> variants{{fullLength, fullLength, true}};
    std::set<std::tuple<int64_t, int64_t, bool>> seen{
        {fullLength, fullLength, true}};
    for (int64_t step = 1; step <= horizon; ++step) {
      int64_t s = rt::bucketFor(seqBuckets, seqlenOf(step));
      int64_t k = std::min(rt::bucketFor(keptBuckets, keptOf(step)), s);
      bool t = teacherOf(step);
      if (seen.insert({s, k, t}).second)
        variants.push_back({s, k, t});
      for (Variant &v : variants)
        if (v.seqlen == s && v.kept == k && v.teacher == t)
          ++v.steps;
    }
    for (Variant &v : variants) {
      FailureOr<double> f = flopsOf(module, v.seqlen, v.kept);
      if (failed(f))
        return signalPassFailure();
      v.flops = *f;
    }

    // What dsc-run needs: the schedules and the buckets, as run settings.
    std::string lines;
    llvm::raw_string_ostream os(lines);
    auto list = [](auto &&values) {
      return llvm::join(llvm::map_range(values, [](int64_t v) { return std::to_string(v); }),
                        ",");
    };
    if (cl) {
      os << "curriculum_schedule=" << curriculumSchedule << "\n"
         << "curriculum_min=" << cl->minDifficulty << "\n"
         << "curriculum_max=" << cl->maxDifficulty << "\n"
         << "curriculum_total_steps=" << cl->totalSteps << "\n"
         << "curriculum_difficulty_step=" << cl->difficultyStep << "\n"
         << "curriculum_root_degree=" << llvm::formatv("{0:e17}", cl->rootDegree)
         << "\n";
      if (!cl->difficulty.empty())
        os << "curriculum_difficulty=" << list(cl->difficulty) << "\n"
           << "curriculum_max_step=" << list(cl->maxStep) << "\n";
      os << "seqlen_buckets=" << list(seqBuckets) << "\n";
    }
    if (ltd)
      os << "ltd_min=" << ltd->minValue << "\nltd_max=" << ltd->maxValue
         << "\nltd_require_steps=" << ltd->requireSteps
         << "\nltd_seq_per_step=" << ltd->seqPerStep
         << "\nltd_total_layers=" << ltd->totalLayers
         << "\nltd_layers=" << ltd->ltdLayers
         << "\nltd_seed=" << int64_t(ltdSeed)
         << "\nltd_buckets=" << list(keptBuckets) << "\n";
    if (stagedKdOn())
      os << "kd_stop_step=" << int64_t(kdStopStep) << "\n";
    module->setAttr(DSCDialect::kDataScheduleAttrName,
                    StringAttr::get(module.getContext(), lines));

    if (output.empty())
      return;
    llvm::json::Array array;
    for (const Variant &v : variants)
      array.push_back(llvm::json::Object{{"seqlen", v.seqlen},
                                         {"kept", v.kept},
                                         {"teacher", v.teacher},
                                         {"flops", v.flops},
                                         {"ramp_steps", v.steps}});
    llvm::json::Object root{{"full_length", fullLength},
                            {"variants", std::move(array)},
                            {"seqlen_overhead", seqOverhead},
                            {"kept_overhead", keptOverhead},
                            {"budget", double(budget)}};
    std::error_code ec;
    llvm::raw_fd_ostream file(output, ec, llvm::sys::fs::OF_Text);
    if (ec) {
      module.emitError() << "--dsc-data-variants: cannot write '" << output
                         << "': " << ec.message();
      return signalPassFailure();
    }
    file << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  }

  int64_t fullLength = 0;
  double seqOverhead = 0, keptOverhead = 0;
};
} // namespace

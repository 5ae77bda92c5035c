//===- TrainingPipeline.cpp - --dsc-pipeline -------------------------------===//

#include "dsc/Pipeline/TrainingPipeline.h"

#include "dsc/Config/OptionRanges.h"
#include "dsc/Pipeline/Passes.h"
#include "dsc/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dsc;

void mlir::dsc::buildTrainingPipeline(OpPassManager &pm,
                                      const TrainingPipelineOptions &options) {
  // Exported graphs repeat constants per use; merge them before the
  // rewrites multiply them.
  pm.addPass(createCSEPass());
  // The data schedules' variants are chosen on the exported forward; this
  // step is then built for one of them (its sequence length and kept
  // tokens, with or without the teacher of staged KD), before anything
  // else reads the shapes. Only a training step follows the schedules: a
  // gradients or evaluation artifact is built for the lengths its options
  // name.
  bool stagedKd = options.kdStopStep > 0 && !options.distillFrom.empty();
  if ((options.curriculumSchedule != "none" || options.ltdMax > 0 || stagedKd) &&
      options.step == TrainingPipelineOptions::Step::Train) {
    DataVariantsOptions variants;
    variants.curriculumSchedule = options.curriculumSchedule;
    variants.curriculumMin = options.curriculumMin;
    variants.curriculumMax = options.curriculumMax;
    variants.curriculumTotalSteps = options.curriculumTotalSteps;
    variants.curriculumDifficultyStep = options.curriculumDifficultyStep;
    variants.curriculumRootDegree = options.curriculumRootDegree;
    variants.curriculumDifficulty.assign(options.curriculumDifficulty.begin(),
                                         options.curriculumDifficulty.end());
    variants.curriculumMaxStep.assign(options.curriculumMaxStep.begin(),
                                      options.curriculumMaxStep.end());
    variants.ltdMin = options.ltdMin;
    variants.ltdMax = options.ltdMax;
    variants.ltdRequireSteps = options.ltdRequireSteps;
    variants.ltdSeqPerStep = options.ltdSeqPerStep;
    variants.ltdSeed = options.ltdSeed;
    variants.ltdLayers.assign(options.ltdLayers.begin(), options.ltdLayers.end());
    variants.budget = options.dataVariantsBudget;
    variants.output = options.dataVariantsFile;
    if (stagedKd)
      variants.kdStopStep = options.kdStopStep;
    pm.addPass(createDataVariants(variants));
  }
  if (options.seqlen > 0) {
    SequenceLengthOptions cut;
    cut.length = options.seqlen;
    pm.addPass(createSequenceLength(cut));
  }
  // Evaluation sees every token, as DeepSpeed's random-LTD layers do
  // outside training.
  if (options.ltdKept > 0 && options.step != TrainingPipelineOptions::Step::Eval) {
    RandomLtdOptions ltd;
    ltd.kept = options.ltdKept;
    ltd.layers.assign(options.ltdLayers.begin(), options.ltdLayers.end());
    ltd.seed = options.ltdSeed;
    pm.addPass(createRandomLtd(ltd));
  }
  DataParallelOptions dataParallel;
  dataParallel.worldSize = options.worldSize;
  dataParallel.tensorParallel = options.tensorParallel;
  dataParallel.pipelineParallel = options.pipelineParallel;
  dataParallel.microBatch = options.microBatch;
  // A pipeline stage runs all of an optimizer step's micro-batches in one
  // call (its schedule interleaves them), so its step accumulates nothing
  // across calls.
  bool pipelined = options.pipelineParallel > 1;
  int64_t callsPerStep = pipelined ? 1 : int64_t(options.gradAccum);
  if (options.step == TrainingPipelineOptions::Step::Train)
    dataParallel.gradAccum = callsPerStep;
  pm.addPass(createDataParallel(dataParallel));
  bool train = options.step == TrainingPipelineOptions::Step::Train;
  // An evaluation artifact is the model's eval graph: no dropout.
  if (options.step == TrainingPipelineOptions::Step::Eval)
    pm.addPass(createEvalMode());
  // The teacher before the experts (whose pass then leaves the teacher's
  // blocks, which are not parameters, dense) and before autodiff (which
  // then never differentiates into it); after data parallelism, whose
  // global loss the KD term joins. An evaluation step is the student's.
  if (!options.distillFrom.empty() &&
      options.step != TrainingPipelineOptions::Step::Eval) {
    DistillOptions distill;
    distill.teacher = options.distillFrom;
    distill.beta = options.kdBeta;
    distill.temperature = options.kdTemperature;
    distill.teacherPrecision = options.kdTeacherPrecision;
    distill.teacherForward = options.kdTeacherForward;
    pm.addPass(createDistill(distill));
  }
  // Experts before mixed precision and autodiff (their backward is derived),
  // after data parallelism: capacities count a rank's tokens.
  if (options.moeExperts > 0 || !options.moeExpertsPerLayer.empty()) {
    MixtureOfExpertsOptions moe;
    moe.experts = options.moeExperts;
    moe.topK = options.moeTopK;
    moe.capacityFactor = options.step == TrainingPipelineOptions::Step::Eval
                             ? options.moeEvalCapacityFactor
                             : options.moeCapacityFactor;
    moe.minCapacity = options.moeMinCapacity;
    moe.dropTokens = options.moeDropTokens;
    moe.auxLossCoef = options.moeAuxLossCoef;
    moe.every = options.moeEvery;
    moe.expertsPerLayer.assign(options.moeExpertsPerLayer.begin(),
                               options.moeExpertsPerLayer.end());
    moe.init = options.moeInit;
    moe.seed = options.moeSeed;
    moe.epSize = options.moeEpSize;
    moe.duplicateTokenDropping = options.moeDuplicateTokenDropping;
    moe.residual = options.moeResidual;
    moe.useRts = options.moeUseRts;
    // DeepSpeed's noise is for training; an evaluation step has none (a
    // training step run by dsc-run --eval turns it off by its key).
    moe.noisyGatePolicy = options.step == TrainingPipelineOptions::Step::Eval
                              ? std::string("none")
                              : std::string(options.moeNoisyGatePolicy);
    moe.top2SecondExpertSampling = options.moeTop2SecondExpertSampling;
    pm.addPass(createMixtureOfExperts(moe));
  }
  // Megatron's split of the blocks, on the forward graph (autodiff derives
  // the conjugate collectives' backward), after the experts (whose pass
  // splits their feed-forward blocks itself: their maps are batched
  // products this pass does not match) and before attention is formed
  // into one op.
  // With sequence-parallel alone, the pass says that it has nothing to do.
  if (options.tensorParallel > 1 || options.sequenceParallel) {
    TensorParallelOptions split;
    split.vocabParallel = options.vocabParallel;
    split.sequenceParallel = options.sequenceParallel;
    pm.addPass(createTensorParallel(split));
  }
  // Before autodiff, so that the backward is built in 16 bits too; the pass
  // itself rejects unknown precisions.
  if (options.precision != "fp32") {
    MixedPrecisionOptions mixed;
    mixed.precision = options.precision;
    // Only an update needs fp32 masters: evaluation and gradients read the
    // 16-bit parameters alone.
    mixed.masterWeights = train;
    pm.addPass(createMixedPrecision(mixed));
  }
  // Attention as one op (flash kernels, no [B, H, T, T] scores), before
  // autodiff so that its backward is one op too; after mixed precision,
  // which would narrow the op's fp32 log-sum-exp.
  pm.addPass(createFormAttention());
  // The stage cut on the finished forward (attention formed, precision
  // chosen), before autodiff derives each stage's backward from it.
  if (pipelined) {
    PipelineParallelOptions pipeline;
    pipeline.stage = options.pipelineStage;
    pipeline.chunks = options.pipelineChunks;
    if (options.step == TrainingPipelineOptions::Step::Train)
      pipeline.microBatches = options.gradAccum;
    pm.addPass(createPipelineParallel(pipeline));
  }
  // DeepSpeed's fp16 always scales the loss (loss_scale 0 is dynamic).
  bool lossScaling = train && (options.lossScaling || options.precision == "fp16");
  if (options.step != TrainingPipelineOptions::Step::Eval) {
    AutodiffOptions autodiff;
    if (lossScaling && options.lossScale > 0) {
      autodiff.seed = options.lossScale;
    } else if (lossScaling && options.initialScalePower >= 0 &&
               options.initialScalePower <= 127) {
      // The scale the optimizer keeps; 2^power while that state is zero
      // (before the first step). A power out of range is the optimizer's
      // error.
      autodiff.seed = std::ldexp(1.0, int(options.initialScalePower));
      autodiff.seedState = "optimizer.loss_scale";
    }
    pm.addPass(createAutodiff(autodiff));
  }
  if (train) {
    OptimizerOptions optimizer;
    optimizer.optimizer = options.optimizer;
    optimizer.lr = options.lr;
    optimizer.betas.assign(options.betas.begin(), options.betas.end());
    optimizer.eps = options.eps;
    optimizer.weightDecay = options.weightDecay;
    optimizer.momentum = options.momentum;
    optimizer.gradClip = options.gradClip;
    optimizer.gradAccum = callsPerStep;
    optimizer.lossScaling = lossScaling;
    optimizer.lossScale = options.lossScale;
    optimizer.initialScalePower = options.initialScalePower;
    optimizer.lossScaleWindow = options.lossScaleWindow;
    optimizer.hysteresis = options.hysteresis;
    optimizer.minLossScale = options.minLossScale;
    optimizer.scheduler = options.scheduler;
    optimizer.warmupMinLr = options.warmupMinLr;
    optimizer.warmupMaxLr = options.warmupMaxLr;
    optimizer.warmupNumSteps = options.warmupNumSteps;
    optimizer.warmupType = options.warmupType;
    optimizer.totalNumSteps = options.totalNumSteps;
    optimizer.warmupMinRatio = options.warmupMinRatio;
    optimizer.cosMinRatio = options.cosMinRatio;
    pm.addPass(createOptimizer(optimizer));
  }
  pm.addPass(createCSEPass());
  // No CSE after it: it would merge the recomputation back.
  if (options.checkpointActivations &&
      options.step != TrainingPipelineOptions::Step::Eval) {
    CheckpointActivationsOptions checkpoint;
    checkpoint.segments = options.checkpointSegments;
    checkpoint.budget = options.checkpointBudget;
    checkpoint.print = options.checkpointPrint;
    checkpoint.commAware = options.commAwareCheckpointing;
    pm.addPass(createCheckpointActivations(checkpoint));
  }
  // ZeRO partitions the optimizer's explicit states and update; the pass
  // checks the stage (a located error for a bad one). After checkpointing,
  // so that stage 3 gathers a parameter again for the blocks recomputed in
  // the backward instead of keeping the forward's gather alive until then.
  if (options.zeroStage != 0 &&
      options.step == TrainingPipelineOptions::Step::Train) {
    ZeroPartitionOptions zero;
    zero.stage = options.zeroStage;
    zero.persistenceThreshold = options.zeroPersistenceThreshold;
    zero.unshardBudget = options.zeroUnshardBudget;
    pm.addPass(createZeroPartition(zero));
  }
  // A pipeline stage's micro-batches in its schedule's order. The
  // collectives that depend on several micro-batches (the loss, tied and
  // data-parallel gradient sums) then follow every transfer, on every stage
  // in one order; the overlap and bucketing below would move or merge them
  // across transfers and micro-batches (a blocking transfer on one stage
  // facing a collective on the other hangs), so a pipeline goes without
  // them for now.
  if (pipelined && options.step != TrainingPipelineOptions::Step::Eval) {
    PipelineScheduleOptions schedule;
    schedule.schedule = options.pipelineSchedule;
    pm.addPass(createPipelineSchedule(schedule));
  } else if (options.worldSize > 1 &&
             options.step != TrainingPipelineOptions::Step::Eval) {
    // Collectives where they overlap and free memory early (after
    // checkpointing, which clones the forward ops it recomputes).
    ScheduleCollectivesOptions schedule;
    schedule.prefetchBucketSize =
        options.zeroOverlapComm ? int64_t(options.zeroPrefetchBucketSize) : 0;
    schedule.maxLiveParameters = options.zeroMaxLiveParameters;
    pm.addPass(createScheduleCollectives(schedule));
    // Then merge the small collectives where they ended up side by side.
    BucketCollectivesOptions buckets;
    buckets.reduceBucketSize = options.zeroReduceBucketSize;
    buckets.allgatherBucketSize = options.zeroAllgatherBucketSize;
    pm.addPass(createBucketCollectives(buckets));
  }
  // ZeRO-Offload, once the collectives are where they run: each gradient
  // partition is copied to the host right after its (bucketed) reduction.
  // An evaluation step's parameters stream from the host or NVMe
  // (ZeRO-Inference).
  if ((options.step == TrainingPipelineOptions::Step::Train &&
       (options.offloadOptimizer != "none" || options.offloadParam != "none")) ||
      (options.step == TrainingPipelineOptions::Step::Eval &&
       options.offloadParam != "none")) {
    OffloadOptimizerOptions offload;
    offload.optimizer = options.offloadOptimizer;
    offload.subGroupSize = options.zeroSubGroupSize;
    offload.bufferCount = options.offloadBufferCount;
    offload.param = options.offloadParam;
    offload.paramBufferCount = options.offloadParamBufferCount;
    offload.paramBufferSize = options.offloadParamBufferSize;
    offload.nvmePath = options.nvmePath;
    pm.addPass(createOffloadOptimizer(offload));
  }
  if (options.stepsPerPrint > 0 || !options.csvMonitor.empty()) {
    RunLoggingOptions logging;
    logging.stepsPerPrint = options.stepsPerPrint;
    logging.csvMonitor = options.csvMonitor;
    pm.addPass(createRunLogging(logging));
  }
  if (!options.report.empty()) {
    StepReportOptions report;
    report.what.assign(options.report.begin(), options.report.end());
    report.format = options.reportFormat;
    report.output = options.reportFile;
    pm.addPass(createStepReport(report));
  }
}

/// Checks each `name=value` of a --dsc-pipeline option string against the
/// table the top-level flags are checked with (OptionRanges.h): the option
/// parser would read `lr=nan` and `betas=0.9,` as values.
static LogicalResult checkOptionString(StringRef text) {
  bool valid = true;
  size_t i = 0;
  while (i < text.size()) {
    if (llvm::isSpace(text[i])) {
      ++i;
      continue;
    }
    // One item: up to a blank outside quotes and braces, as MLIR's option
    // parser splits them.
    size_t start = i;
    int depth = 0;
    char quote = 0;
    for (; i < text.size(); ++i) {
      char c = text[i];
      if (quote) {
        quote = c == quote ? 0 : quote;
        continue;
      }
      if (c == '"' || c == '\'')
        quote = c;
      else if (c == '{')
        ++depth;
      else if (c == '}')
        --depth;
      else if (llvm::isSpace(c) && depth <= 0)
        break;
    }
    auto [name, value] = text.slice(start, i).split('=');
    if (value.empty() && isBooleanPipelineOption(name))
      continue;
    if (value.size() >= 2 &&
        ((value.front() == '{' && value.back() == '}') ||
         (value.front() == '"' && value.back() == '"') ||
         (value.front() == '\'' && value.back() == '\'')))
      value = value.drop_front().drop_back();
    // Printed here: MLIR's errorHandler has no location to give ("<unknown>:0").
    if (std::optional<std::string> problem = checkPipelineOption(name, value)) {
      llvm::errs() << "error: dsc-pipeline option '" << name << "': " << *problem
                   << "\n";
      valid = false;
    }
  }
  return success(valid);
}

void mlir::dsc::registerTrainingPipeline() {
  registerPassPipeline(
      "dsc-pipeline",
      "the training step in the standard pass order: data parallelism, "
      "autodiff, the optimizer (dsc-opt --world-size/--optimizer/... and "
      "--config ds_config.json fill these options)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        TrainingPipelineOptions options;
        if (failed(checkOptionString(text)) ||
            failed(options.parseFromString(text)))
          return failure();
        buildTrainingPipeline(pm, options);
        return success();
      },
      [](function_ref<void(const ::mlir::detail::PassOptions &)> optionHandler) {
        optionHandler(TrainingPipelineOptions());
      });
}

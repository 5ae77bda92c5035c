//===- TrainingPipeline.h - the standard order of dsc passes ----*- C++ -*-===//
//
// `--dsc-pipeline="world-size=2 optimizer=sgd lr=0.1"` assembles the passes
// that turn an exported forward graph into a training step, in the one order
// that is correct (docs/configuration.md). The users' spellings,
// `dsc-opt --world-size=2 --optimizer=sgd` and `dsc-opt --config
// ds_config.json`, fill these options and run the same pipeline. Every value
// is checked against the range table of OptionRanges.h before a pass runs.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PIPELINE_TRAININGPIPELINE_H
#define DSC_PIPELINE_TRAININGPIPELINE_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::dsc {

struct TrainingPipelineOptions
    : public PassPipelineOptions<TrainingPipelineOptions> {
  enum class Step { Train, Gradients, Eval };
  Option<Step> step{
      *this, "step", llvm::cl::desc("what the compiled step computes"),
      llvm::cl::init(Step::Train),
      llvm::cl::values(
          clEnumValN(Step::Train, "train",
                     "forward, backward and the optimizer update"),
          clEnumValN(Step::Gradients, "gradients",
                     "loss and every parameter's gradient, no update"),
          clEnumValN(Step::Eval, "eval", "forward and loss only"))};
  Option<int64_t> worldSize{*this, "world-size",
                            llvm::cl::desc("data-parallel ranks"),
                            llvm::cl::init(1)};
  Option<int64_t> tensorParallel{
      *this, "tensor-parallel",
      llvm::cl::desc("ranks that split each block (Megatron's tensor "
                     "parallelism; the mesh's innermost dimension)"),
      llvm::cl::init(1)};
  Option<bool> vocabParallel{
      *this, "vocab-parallel",
      llvm::cl::desc("with tensor-parallel > 1: split the token embedding "
                     "and the head by vocabulary rows, and compute the "
                     "cross-entropy without gathering the logits"),
      llvm::cl::init(false)};
  Option<bool> sequenceParallel{
      *this, "sequence-parallel",
      llvm::cl::desc("with tensor-parallel > 1: hold the activations between "
                     "the split blocks split along the sequence (Megatron's "
                     "sequence parallelism)"),
      llvm::cl::init(false)};
  Option<int64_t> pipelineParallel{
      *this, "pipeline-parallel",
      llvm::cl::desc("pipeline stages (the mesh's outermost dimension); "
                     "the micro-batches are the gradient accumulation count"),
      llvm::cl::init(1)};
  Option<int64_t> pipelineStage{
      *this, "pipeline-stage",
      llvm::cl::desc("with pipeline-parallel > 1: the stage whose program "
                     "to build"),
      llvm::cl::init(0)};
  Option<std::string> pipelineSchedule{
      *this, "pipeline-schedule",
      llvm::cl::desc("with pipeline-parallel > 1: gpipe, 1f1b (default, "
                     "DeepSpeed's), zb-h1 or interleaved"),
      llvm::cl::init("1f1b")};
  Option<int64_t> pipelineChunks{
      *this, "pipeline-chunks",
      llvm::cl::desc("with the interleaved schedule: model chunks per "
                     "rank (Megatron's virtual pipeline size, at least 2)"),
      llvm::cl::init(1)};
  Option<int64_t> microBatch{
      *this, "micro-batch",
      llvm::cl::desc("per-rank micro-batch the exported inputs must have "
                     "(0: not checked)"),
      llvm::cl::init(0)};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("fp32, or bf16/fp16 compute with fp32 master weights"),
      llvm::cl::init("fp32")};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("adamw, adam or sgd"),
                                llvm::cl::init("adamw")};
  Option<double> lr{*this, "lr", llvm::cl::desc("learning rate"),
                    llvm::cl::init(1e-3)};
  ListOption<double> betas{*this, "betas",
                           llvm::cl::desc("Adam's beta1,beta2")};
  Option<double> eps{*this, "eps", llvm::cl::desc("Adam's epsilon"),
                     llvm::cl::init(1e-8)};
  Option<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("weight decay; negative: the optimizer's default "
                     "(0.01 for adamw, 0 otherwise)"),
      llvm::cl::init(-1)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"),
                          llvm::cl::init(0)};
  Option<double> gradClip{
      *this, "grad-clip",
      llvm::cl::desc("clip gradients to this global 2-norm (0: off)"),
      llvm::cl::init(0)};
  // The learning-rate schedule: --dsc-optimizer's options of the same names
  // (negative or empty: the schedule's default).
  Option<std::string> scheduler{
      *this, "scheduler",
      llvm::cl::desc("none, warmup-lr, warmup-decay-lr or warmup-cosine-lr"),
      llvm::cl::init("none")};
  Option<double> warmupMinLr{*this, "warmup-min-lr",
                             llvm::cl::desc("schedule start lr"),
                             llvm::cl::init(-1)};
  Option<double> warmupMaxLr{*this, "warmup-max-lr",
                             llvm::cl::desc("schedule peak lr"),
                             llvm::cl::init(-1)};
  Option<int64_t> warmupNumSteps{*this, "warmup-num-steps",
                                 llvm::cl::desc("warmup steps"),
                                 llvm::cl::init(-1)};
  Option<std::string> warmupType{*this, "warmup-type",
                                 llvm::cl::desc("log or linear"),
                                 llvm::cl::init("")};
  Option<int64_t> totalNumSteps{*this, "total-num-steps",
                                llvm::cl::desc("schedule total steps"),
                                llvm::cl::init(-1)};
  Option<double> warmupMinRatio{*this, "warmup-min-ratio",
                                llvm::cl::desc("cosine start ratio"),
                                llvm::cl::init(-1)};
  Option<double> cosMinRatio{*this, "cos-min-ratio",
                             llvm::cl::desc("cosine end ratio"),
                             llvm::cl::init(-1)};
  Option<int64_t> gradAccum{
      *this, "grad-accum",
      llvm::cl::desc("micro-batches per optimizer step (gradient accumulation)"),
      llvm::cl::init(1)};
  // fp16 loss scaling (DeepSpeed's fp16 section); on for precision=fp16.
  Option<bool> lossScaling{*this, "loss-scaling",
                           llvm::cl::desc("loss scaling, also without fp16"),
                           llvm::cl::init(false)};
  Option<double> lossScale{*this, "loss-scale",
                           llvm::cl::desc("static loss scale; 0 is dynamic"),
                           llvm::cl::init(0)};
  Option<int64_t> initialScalePower{
      *this, "initial-scale-power",
      llvm::cl::desc("dynamic: the first scale is 2^this"), llvm::cl::init(16)};
  Option<int64_t> lossScaleWindow{
      *this, "loss-scale-window",
      llvm::cl::desc("dynamic: clean steps before the scale doubles"),
      llvm::cl::init(1000)};
  Option<int64_t> hysteresis{
      *this, "hysteresis",
      llvm::cl::desc("dynamic: overflows tolerated before the scale halves"),
      llvm::cl::init(2)};
  Option<double> minLossScale{
      *this, "min-loss-scale",
      llvm::cl::desc("dynamic: the scale never halves below this"),
      llvm::cl::init(1)};
  Option<int64_t> zeroStage{
      *this, "zero-stage",
      llvm::cl::desc("ZeRO stage of the training step: 0 (off), 1 (optimizer "
                     "state partitioned), 2 (+ gradients), 3 (+ parameters)"),
      llvm::cl::init(0)};
  // DeepSpeed's ZeRO knobs (zero_optimization.*), with its defaults.
  Option<int64_t> zeroPersistenceThreshold{
      *this, "zero-persistence-threshold",
      llvm::cl::desc("stage 3: parameters of at most this many elements stay "
                     "whole on every rank (stage3_param_persistence_threshold)"),
      llvm::cl::init(100000)};
  Option<int64_t> zeroUnshardBudget{
      *this, "zero-unshard-budget",
      llvm::cl::desc("stage 3: bytes per rank of parameters kept whole, the "
                     "costliest to gather per byte first (selective "
                     "unsharding; default 0: off)"),
      llvm::cl::init(0)};
  Option<int64_t> zeroPrefetchBucketSize{
      *this, "zero-prefetch-bucket-size",
      llvm::cl::desc("stage 3: elements of parameter gathers issued ahead of "
                     "use (stage3_prefetch_bucket_size)"),
      llvm::cl::init(50000000)};
  Option<int64_t> zeroMaxLiveParameters{
      *this, "zero-max-live-parameters",
      llvm::cl::desc("stage 3: prefetched parameter elements alive at once "
                     "(stage3_max_live_parameters)"),
      llvm::cl::init(1000000000)};
  Option<int64_t> zeroReduceBucketSize{
      *this, "zero-reduce-bucket-size",
      llvm::cl::desc("elements per bucketed gradient all_reduce / "
                     "reduce_scatter (reduce_bucket_size; 0: off)"),
      llvm::cl::init(500000000)};
  Option<int64_t> zeroAllgatherBucketSize{
      *this, "zero-allgather-bucket-size",
      llvm::cl::desc("elements per bucketed all_gather "
                     "(allgather_bucket_size; 0: off)"),
      llvm::cl::init(500000000)};
  Option<bool> zeroOverlapComm{
      *this, "zero-overlap-comm",
      llvm::cl::desc("prefetch parameter gathers to overlap them with compute "
                     "(overlap_comm; default: on)"),
      llvm::cl::init(true)};
  // ZeRO-Offload: --dsc-offload's options (offload_optimizer.device,
  // sub_group_size).
  Option<std::string> offloadOptimizer{
      *this, "offload-optimizer",
      llvm::cl::desc("where the optimizer state lives and the update runs: "
                     "none (the device), cpu (host memory; ZeRO-Offload) or "
                     "nvme (per-rank files; ZeRO-Infinity, stage 3)"),
      llvm::cl::init("none")};
  Option<std::string> offloadParam{
      *this, "offload-param",
      llvm::cl::desc("stage 3: where the parameters' partitions live (an "
                     "evaluation step's parameters: ZeRO-Inference): none "
                     "(the device), cpu (host memory) or nvme (per-rank "
                     "files)"),
      llvm::cl::init("none")};
  Option<int64_t> offloadParamBufferCount{
      *this, "offload-param-buffer-count",
      llvm::cl::desc("NVMe parameter offload: parameter reads in flight "
                     "ahead of their use (offload_param.buffer_count)"),
      llvm::cl::init(5)};
  Option<int64_t> offloadParamBufferSize{
      *this, "offload-param-buffer-size",
      llvm::cl::desc("NVMe parameter offload: elements of a parameter swap "
                     "buffer (offload_param.buffer_size)"),
      llvm::cl::init(100000000)};
  Option<int64_t> offloadBufferCount{
      *this, "offload-buffer-count",
      llvm::cl::desc("NVMe offload: sub-groups read ahead of their host "
                     "update (offload_optimizer.buffer_count)"),
      llvm::cl::init(4)};
  Option<std::string> nvmePath{
      *this, "nvme-path",
      llvm::cl::desc("NVMe offload: directory of the per-rank files "
                     "(nvme_path; dsc-run --nvme-path overrides it)"),
      llvm::cl::init("")};
  Option<int64_t> zeroSubGroupSize{
      *this, "zero-sub-group-size",
      llvm::cl::desc("ZeRO-Offload: elements of parameters per host update "
                     "(sub_group_size)"),
      llvm::cl::init(1000000000)};
  // Activation checkpointing: --dsc-checkpoint-activations's options.
  Option<bool> checkpointActivations{
      *this, "checkpoint-activations",
      llvm::cl::desc("recompute transformer blocks in the backward"),
      llvm::cl::init(false)};
  Option<std::string> checkpointSegments{
      *this, "checkpoint-segments",
      llvm::cl::desc("what a recomputed segment is (blocks)"),
      llvm::cl::init("blocks")};
  Option<int64_t> checkpointBudget{
      *this, "checkpoint-budget",
      llvm::cl::desc("recompute only as many blocks as this per-rank byte "
                     "budget needs (0: every block)"),
      llvm::cl::init(0)};
  Option<bool> checkpointPrint{
      *this, "checkpoint-print",
      llvm::cl::desc("print the recomputed blocks to stderr"),
      llvm::cl::init(false)};
  Option<bool> commAwareCheckpointing{
      *this, "comm-aware-checkpointing",
      llvm::cl::desc("recomputed blocks keep their collectives' forward "
                     "outputs instead of communicating again (DeepSpeed-TED)"),
      llvm::cl::init(true)};
  // Mixture of experts: --dsc-moe's options (DeepSpeed's MoE layer
  // arguments; off while moe-experts is 0 and no per-layer list is given).
  Option<int64_t> moeExperts{
      *this, "moe-experts",
      llvm::cl::desc("replace feed-forward blocks by this many experts"),
      llvm::cl::init(0)};
  Option<int64_t> moeTopK{*this, "moe-top-k",
                          llvm::cl::desc("experts per token (k)"),
                          llvm::cl::init(1)};
  Option<double> moeCapacityFactor{
      *this, "moe-capacity-factor",
      llvm::cl::desc("training capacity factor"), llvm::cl::init(1.0)};
  Option<double> moeEvalCapacityFactor{
      *this, "moe-eval-capacity-factor",
      llvm::cl::desc("capacity factor of evaluation steps"),
      llvm::cl::init(1.0)};
  Option<int64_t> moeMinCapacity{*this, "moe-min-capacity",
                                 llvm::cl::desc("least expert capacity"),
                                 llvm::cl::init(4)};
  Option<bool> moeDropTokens{
      *this, "moe-drop-tokens",
      llvm::cl::desc("drop routes beyond the capacity"), llvm::cl::init(true)};
  Option<double> moeAuxLossCoef{
      *this, "moe-aux-loss-coef",
      llvm::cl::desc("weight of the load-balancing loss"),
      llvm::cl::init(0.01)};
  Option<int64_t> moeEvery{*this, "moe-every",
                           llvm::cl::desc("replace every N-th block"),
                           llvm::cl::init(1)};
  Option<bool> moeResidual{
      *this, "moe-residual",
      llvm::cl::desc("residual MoE: the dense block beside the experts"),
      llvm::cl::init(false)};
  ListOption<int64_t> moeExpertsPerLayer{
      *this, "moe-experts-per-layer",
      llvm::cl::desc("experts of each replaced block (PR-MoE's pyramid)")};
  Option<std::string> moeInit{
      *this, "moe-init",
      llvm::cl::desc("initial experts: upcycle (default) or random"),
      llvm::cl::init("upcycle")};
  Option<int64_t> moeSeed{*this, "moe-seed",
                          llvm::cl::desc("key of the gate's generator"),
                          llvm::cl::init(0)};
  Option<bool> moeUseRts{
      *this, "moe-use-rts",
      llvm::cl::desc("top-1: random token selection"), llvm::cl::init(false)};
  Option<std::string> moeNoisyGatePolicy{
      *this, "moe-noisy-gate-policy",
      llvm::cl::desc("none, jitter or rsample (training only)"),
      llvm::cl::init("none")};
  Option<bool> moeTop2SecondExpertSampling{
      *this, "moe-top2-2nd-expert-sampling",
      llvm::cl::desc("top-2: Gumbel noise on the second choice"),
      llvm::cl::init(true)};
  Option<bool> moeDuplicateTokenDropping{
      *this, "moe-duplicate-token-dropping",
      llvm::cl::desc("experts under tensor parallelism: each rank of a tensor "
                     "group sends 1/T of the tokens through the all-to-all "
                     "(DeepSpeed-TED)"),
      llvm::cl::init(true)};
  Option<int64_t> moeEpSize{
      *this, "moe-ep-size",
      llvm::cl::desc("ranks each layer's experts are split over (expert "
                     "parallelism; divides the experts and the world size)"),
      llvm::cl::init(1)};
  // Knowledge distillation from a frozen teacher: --dsc-distill's options
  // (off while distill-from is empty).
  Option<std::string> distillFrom{
      *this, "distill-from",
      llvm::cl::desc("the teacher's exported model.mlir (Mixture-of-Students "
                     "knowledge distillation; empty: off)"),
      llvm::cl::init("")};
  Option<double> kdBeta{*this, "kd-beta",
                        llvm::cl::desc("weight of the distillation term"),
                        llvm::cl::init(1.0)};
  Option<double> kdTemperature{
      *this, "kd-temperature",
      llvm::cl::desc("softmax temperature of the distillation term"),
      llvm::cl::init(1.0)};
  Option<std::string> kdTeacherPrecision{
      *this, "kd-teacher-precision",
      llvm::cl::desc("storage of the teacher's weights: fp32 or bf16"),
      llvm::cl::init("fp32")};
  // Staged KD: the step after kd-stop-step is a variant without the
  // teacher (--dsc-data-variants' kd-stop-step), built with
  // kd-teacher-forward=false (--dsc-distill's teacher-forward).
  Option<int64_t> kdStopStep{
      *this, "kd-stop-step",
      llvm::cl::desc("distill until this step, then train the student alone "
                     "(0: distill every step)"),
      llvm::cl::init(0)};
  Option<bool> kdTeacherForward{
      *this, "kd-teacher-forward",
      llvm::cl::desc("build the step with the teacher (false: the step after "
                     "kd-stop-step)"),
      llvm::cl::init(true)};
  // Curriculum learning and random-LTD: the schedules (--dsc-data-variants'
  // options of the same names), and the variant this step is built for
  // (--dsc-sequence-length, --dsc-random-ltd).
  Option<std::string> curriculumSchedule{
      *this, "curriculum-schedule",
      llvm::cl::desc("curriculum learning's schedule: none (default), "
                     "fixed_linear, fixed_root or fixed_discrete"),
      llvm::cl::init("none")};
  Option<int64_t> curriculumMin{*this, "curriculum-min",
                                llvm::cl::desc("curriculum min_difficulty"),
                                llvm::cl::init(1)};
  Option<int64_t> curriculumMax{*this, "curriculum-max",
                                llvm::cl::desc("curriculum max_difficulty"),
                                llvm::cl::init(1)};
  Option<int64_t> curriculumTotalSteps{
      *this, "curriculum-total-steps",
      llvm::cl::desc("curriculum total_curriculum_step"), llvm::cl::init(1)};
  Option<int64_t> curriculumDifficultyStep{
      *this, "curriculum-difficulty-step",
      llvm::cl::desc("curriculum difficulty_step"), llvm::cl::init(1)};
  Option<double> curriculumRootDegree{
      *this, "curriculum-root-degree",
      llvm::cl::desc("curriculum root_degree (fixed_root)"), llvm::cl::init(1)};
  ListOption<int64_t> curriculumDifficulty{
      *this, "curriculum-difficulty",
      llvm::cl::desc("curriculum difficulty list (fixed_discrete)")};
  ListOption<int64_t> curriculumMaxStep{
      *this, "curriculum-max-step",
      llvm::cl::desc("curriculum max_step list (fixed_discrete)")};
  Option<int64_t> ltdMin{*this, "ltd-min",
                         llvm::cl::desc("random-LTD min_value"),
                         llvm::cl::init(0)};
  Option<int64_t> ltdMax{*this, "ltd-max",
                         llvm::cl::desc("random-LTD max_value (0: off)"),
                         llvm::cl::init(0)};
  Option<int64_t> ltdRequireSteps{*this, "ltd-require-steps",
                                  llvm::cl::desc("random-LTD require_steps"),
                                  llvm::cl::init(1)};
  Option<int64_t> ltdSeqPerStep{*this, "ltd-seq-per-step",
                                llvm::cl::desc("random-LTD seq_per_step"),
                                llvm::cl::init(1)};
  ListOption<int64_t> ltdLayers{
      *this, "ltd-layers",
      llvm::cl::desc("random-LTD blocks, in forward order (default: all "
                     "but the first and the last)")};
  Option<int64_t> ltdSeed{*this, "ltd-seed",
                          llvm::cl::desc("random-LTD index site seed"),
                          llvm::cl::init(0)};
  Option<double> dataVariantsBudget{
      *this, "data-variants-budget",
      llvm::cl::desc("FLOPs the length buckets may add to the exact "
                     "schedules' (default 0.02)"),
      llvm::cl::init(0.02)};
  Option<std::string> dataVariantsFile{
      *this, "data-variants-file",
      llvm::cl::desc("write the step's variants as JSON here (dsc-compile)"),
      llvm::cl::init("")};
  Option<int64_t> seqlen{
      *this, "seqlen",
      llvm::cl::desc("build the step for this sequence length (0: the "
                     "inputs')"),
      llvm::cl::init(0)};
  Option<int64_t> ltdKept{
      *this, "ltd-kept",
      llvm::cl::desc("build the step with this many tokens in the random-LTD "
                     "blocks (0: none dropped)"),
      llvm::cl::init(0)};
  // How dsc-run logs the steps: --dsc-run-logging's options.
  Option<int64_t> stepsPerPrint{
      *this, "steps-per-print",
      llvm::cl::desc("dsc-run prints a step line every N steps (0: its "
                     "default, every step)"),
      llvm::cl::init(0)};
  Option<std::string> csvMonitor{
      *this, "csv-monitor",
      llvm::cl::desc("dsc-run writes DeepSpeed csv_monitor files into this "
                     "directory (empty: none)"),
      llvm::cl::init("")};
  // Reports of the finished step: --dsc-step-report's options.
  ListOption<std::string> report{
      *this, "report",
      llvm::cl::desc("print the step's per-rank memory and/or communication "
                     "(memory, comm)")};
  Option<std::string> reportFormat{
      *this, "report-format", llvm::cl::desc("text (default) or json"),
      llvm::cl::init("text")};
  Option<std::string> reportFile{
      *this, "report-file",
      llvm::cl::desc("write the report here ('-', the default: stderr)"),
      llvm::cl::init("-")};
};

/// Appends the training-step passes to `pm`, which runs on builtin.module.
void buildTrainingPipeline(OpPassManager &pm,
                           const TrainingPipelineOptions &options);

/// Registers `--dsc-pipeline`.
void registerTrainingPipeline();

} // namespace mlir::dsc

#endif // DSC_PIPELINE_TRAININGPIPELINE_H

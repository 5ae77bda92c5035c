//===- DeepSpeedConfigTest.cpp - every ds_config key accounted for --------===//

#include "dsc/Config/DeepSpeedConfig.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::dsc;

namespace {
struct Read {
  llvm::SourceMgr sourceMgr;
  std::string errors;
  ConfigAccount account;
  FailureOr<PipelineSettings> settings = failure();

  explicit Read(StringRef text, int64_t worldSize = 1) {
    sourceMgr.setDiagHandler(
        [](const llvm::SMDiagnostic &d, void *context) {
          *static_cast<std::string *>(context) += d.getMessage().str() + "\n";
        },
        &errors);
    unsigned id = sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(text, "ds_config.json"),
        llvm::SMLoc());
    settings = readDeepSpeedConfig(sourceMgr, id, worldSize, {}, nullptr, &account);
  }

  const KeyAccount *find(StringRef key) const {
    for (const KeyAccount &entry : account)
      if (entry.key == key)
        return &entry;
    return nullptr;
  }
};
} // namespace

// Every key of DeepSpeed's zero_optimization (v0.19), at its default: the
// reader knows each one, and none is left without a reason.
TEST(DeepSpeedConfig, EveryZeroKeyAtItsDefaultIsAccounted) {
  Read read(R"({"zero_optimization": {
    "stage": 3, "contiguous_gradients": true, "reduce_scatter": true,
    "reduce_bucket_size": 5e8, "allgather_partitions": true,
    "allgather_bucket_size": 5e8, "overlap_comm": true,
    "load_from_fp32_weights": true, "elastic_checkpoint": false,
    "offload_param": {"device": "none"}, "offload_optimizer": {"device": "none"},
    "sub_group_size": 1e9, "stage3_prefetch_bucket_size": 5e7,
    "stage3_param_persistence_threshold": 1e5, "stage3_max_live_parameters": 1e9,
    "stage3_max_reuse_distance": 1e9, "stage3_gather_16bit_weights_on_model_save": false,
    "round_robin_gradients": false, "ignore_unused_parameters": true,
    "cpu_offload": false, "zero_hpz_partition_size": 1,
    "zero_quantized_weights": false, "zero_quantized_nontrainable_weights": false,
    "zero_quantized_gradients": false, "mics_shard_size": -1,
    "mics_hierarchical_params_gather": false, "memory_efficient_linear": true,
    "use_multi_rank_bucket_allreduce": true, "log_trace_cache_warnings": false}})");
  ASSERT_TRUE(succeeded(read.settings)) << read.errors;
  EXPECT_EQ(read.account.size(), 29u);
  for (const KeyAccount &entry : read.account) {
    EXPECT_NE(entry.disposition, KeyDisposition::Refused) << entry.key;
    EXPECT_NE(entry.detail, "not read by dsc") << entry.key;
    EXPECT_FALSE(entry.detail.empty()) << entry.key;
  }
  EXPECT_EQ(read.find("zero_optimization.stage")->disposition,
            KeyDisposition::Used);
  EXPECT_EQ(read.find("zero_optimization.zero_quantized_weights")->disposition,
            KeyDisposition::NoEffect);
}

// A feature dsc does not have, at DeepSpeed's default: accepted without
// effect; at any other value: refused at its key.
TEST(DeepSpeedConfig, HarmlessAtTheDefaultRefusedOtherwise) {
  struct Case {
    const char *harmless, *harmful, *key;
  } cases[] = {
      {R"({"prescale_gradients": false})", R"({"prescale_gradients": true})",
       "prescale_gradients"},
      {R"({"gradient_predivide_factor": 1.0})",
       R"({"gradient_predivide_factor": 2.0})", "gradient_predivide_factor"},
      {R"({"sparse_gradients": false})", R"({"sparse_gradients": true})",
       "sparse_gradients"},
      {R"({"elasticity": {"enabled": false}})",
       R"({"elasticity": {"enabled": true}})", "elasticity"},
      {R"({"amp": {"enabled": false, "opt_level": "O1"}})",
       R"({"amp": {"enabled": true}})", "amp"},
      {R"({"communication_data_type": null})",
       R"({"communication_data_type": "fp16"})", "communication_data_type"},
      {R"({"activation_checkpointing": {"partition_activations": false,
           "number_checkpoints": null}})",
       R"({"activation_checkpointing": {"number_checkpoints": 4}})",
       "activation_checkpointing"},
      {R"({"flops_profiler": {"enabled": false, "profile_step": 1}})",
       R"({"flops_profiler": {"enabled": true}})", "flops_profiler"},
      {R"({"wandb": {"enabled": false}})", R"({"wandb": {"enabled": true}})",
       "wandb"},
      {R"({"zero_optimization": {"zero_hpz_partition_size": 1}})",
       R"({"zero_optimization": {"zero_hpz_partition_size": 4}})",
       "zero_optimization.zero_hpz_partition_size"},
      {R"({"zero_optimization": {"mics_shard_size": -1}})",
       R"({"zero_optimization": {"mics_shard_size": 8}})",
       "zero_optimization.mics_shard_size"},
      {R"({"checkpoint": {"tag_validation": "Warn"}})",
       R"({"checkpoint": {"load_universal": true}})", "checkpoint"},
  };
  for (const Case &c : cases) {
    Read good(c.harmless);
    EXPECT_TRUE(succeeded(good.settings)) << c.harmless << good.errors;
    for (const KeyAccount &entry : good.account)
      EXPECT_EQ(entry.disposition, KeyDisposition::NoEffect)
          << c.harmless << " " << entry.key;
    Read bad(c.harmful);
    EXPECT_TRUE(failed(bad.settings)) << c.harmful;
    bool refused = false;
    for (const KeyAccount &entry : bad.account)
      refused |= entry.disposition == KeyDisposition::Refused &&
                 StringRef(entry.key).starts_with(c.key);
    EXPECT_TRUE(refused) << c.harmful;
  }
}

// "auto" keys take what the run has without them, and say what.
TEST(DeepSpeedConfig, AutoKeysAreDefaultedWithTheValueChosen) {
  Read read(R"({"optimizer": {"type": "AdamW", "params": {"lr": "auto",
                 "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
               "scheduler": {"type": "WarmupLR", "params": {
                 "warmup_min_lr": "auto", "warmup_max_lr": "auto",
                 "warmup_num_steps": "auto"}},
               "gradient_clipping": "auto",
               "bf16": {"enabled": "auto"},
               "train_micro_batch_size_per_gpu": "auto"})");
  ASSERT_TRUE(succeeded(read.settings)) << read.errors;
  for (const KeyAccount &entry : read.account)
    EXPECT_EQ(entry.disposition, entry.key == "optimizer.type" ||
                                         entry.key == "scheduler.type"
                                     ? KeyDisposition::Used
                                     : KeyDisposition::Defaulted)
        << entry.key;
  EXPECT_EQ(read.find("optimizer.params.lr")->detail, "lr=0.001");
  // FusedAdam's default decay, which the reader sets for AdamW.
  EXPECT_EQ(read.find("optimizer.params.weight_decay")->detail, "weight-decay=0");
  EXPECT_EQ(read.find("scheduler.params.warmup_num_steps")->detail,
            "warmup-num-steps=1000");
  EXPECT_EQ(read.settings->at("precision"), "bf16");
  EXPECT_EQ(read.settings->count("micro-batch"), 0u);
}

// WarmupDecayLR's total cannot be "auto": dsc compiles before the trainer
// would know the run's length.
TEST(DeepSpeedConfig, AutoTotalStepsIsRefused) {
  Read read(R"({"scheduler": {"type": "WarmupDecayLR",
                 "params": {"total_num_steps": "auto"}}})");
  EXPECT_TRUE(failed(read.settings));
  EXPECT_NE(read.errors.find("'scheduler.params.total_num_steps': "
                             "WarmupDecayLR needs total_num_steps as a number"),
            std::string::npos)
      << read.errors;
}

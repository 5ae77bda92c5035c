//===- RunMain.cpp - dsc-run: set up every rank, run the steps, report ----===//
//
// Setup happens in three phases (the command line and the launcher's
// environment; then the artifact, data, weights and buffers; then the
// artifact's communicator). Each ends in an agreement over a private
// duplicate of MPI_COMM_WORLD: if any rank failed, rank 0 gathers the
// messages, prints each distinct one once, and every rank exits with the
// same non-zero status. So a mistake that every rank makes alike (a wrong
// --batch) prints one line, not N, and a rank that fails alone (a file
// missing on one node) cannot leave the others waiting in a collective.
// Before the artifact's first collective the ranks compare what they run
// (JobAgreement.h), and from before MPI_Init until then a start-up
// watchdog (StartupWatchdog.h) ends a job whose start-up hangs.
// The artifact's target (RunTarget, Run.h) says where its buffers live and
// which communicator sums: host memory and MPI for "cpu", GPU memory and
// NCCL for "cuda" (CudaRun.cpp). Once the steps run, an error on a rank
// prints that rank's message and ends the job with MPI_Abort, since the
// other ranks may be inside a collective that will never complete.
//
// Checkpoints (Checkpoint.h) are saved between steps in three phases with
// the same agreement after each, so that a rank that fails to write its
// shard stops the commit on rank 0: `latest` keeps naming the previous
// checkpoint and every rank exits non-zero.
//
// The launcher's own traffic (agreements, checkpoint reports, the final
// summary) is not counted in the communicator's per-collective bytes: those
// are the artifact's, the figures that the compiler's communication report
// predicts.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/ArtifactLibrary.h"
#include "dsc/runtime/Checkpoint.h"
#include "dsc/runtime/Comm.h"
#include "dsc/runtime/CpuBinding.h"
#include "dsc/runtime/JobAgreement.h"
#include "dsc/runtime/MemoryPool.h"
#include "dsc/runtime/NvmeStore.h"
#include "dsc/runtime/OutputFile.h"
#include "dsc/runtime/RankInfo.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/SafeTensors.h"
#include "dsc/runtime/StartupWatchdog.h"
#include "dsc/runtime/Watchdog.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace dsc::rt {

namespace {

constexpr int kErrorExitCode = 1;

/// The message of the exception being handled; generated code could throw
/// something that is no std::exception.
std::string describeCurrentException() {
  try {
    throw;
  } catch (const std::exception &error) {
    return error.what();
  } catch (...) {
    return "unknown exception (not a std::exception)";
  }
}

/// What a setup phase left on this rank: 0 and no message when it worked.
struct Outcome {
  int code = 0;
  std::string message;
};

template <typename Body> Outcome attempt(Body &&body) {
  try {
    body();
    return {};
  } catch (const UsageError &error) {
    return {kUsageExitCode, error.what()};
  } catch (...) {
    return {kErrorExitCode, describeCurrentException()};
  }
}

/// The launcher's coordination between ranks, on its own communicator.
class Control {
public:
  Control() {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    try {
      timeoutSeconds_ = collectiveTimeoutFromEnvironment();
    } catch (const Error &) {
      // Reported by the first setup phase, on every rank alike.
    }
  }
  ~Control() { MPI_Comm_free(&comm_); }
  Control(const Control &) = delete;
  Control &operator=(const Control &) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  /// The largest `code` of all ranks. Waits under a watchdog: a rank stuck
  /// in setup ends the job after DSC_COLLECTIVE_TIMEOUT seconds.
  int agree(int code) {
    CollectiveWatchdog watchdog(timeoutSeconds_);
    CollectiveRecord record = watchdog.begin(CollectiveKind::AllReduce, 1,
                                             CommDType::I32, ReduceOp::Max);
    int result = 0;
    MPI_Request request;
    MPI_Iallreduce(&code, &result, 1, MPI_INT, MPI_MAX, comm_, &request);
    wait(watchdog, record, request);
    return result;
  }

  /// Every rank's digest, in rank order, on every rank; under the same
  /// watchdog as agree().
  std::vector<JobDigest> allGather(const JobDigest &digest) {
    constexpr int kWords = sizeof(JobDigest) / sizeof(uint64_t);
    static_assert(sizeof(JobDigest) == kWords * sizeof(uint64_t));
    uint64_t mine[kWords] = {digest.artifact, digest.state, digest.options};
    std::vector<uint64_t> all(static_cast<size_t>(size_) * kWords);
    CollectiveWatchdog watchdog(timeoutSeconds_);
    CollectiveRecord record =
        watchdog.begin(CollectiveKind::AllGather, kWords, CommDType::I64);
    MPI_Request request;
    MPI_Iallgather(mine, kWords, MPI_UINT64_T, all.data(), kWords,
                   MPI_UINT64_T, comm_, &request);
    wait(watchdog, record, request);
    std::vector<JobDigest> digests(static_cast<size_t>(size_));
    for (size_t r = 0; r < digests.size(); ++r)
      digests[r] = {all[r * kWords], all[r * kWords + 1],
                    all[r * kWords + 2]};
    return digests;
  }

  /// Every rank's `text`, in rank order, on rank 0; empty elsewhere.
  std::vector<std::string> gather(const std::string &text) {
    int length = static_cast<int>(text.size());
    std::vector<int> lengths(rank_ == 0 ? size_ : 0);
    MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm_);
    std::vector<int> offsets(lengths.size());
    int total = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
      offsets[i] = total;
      total += lengths[i];
    }
    std::string all(static_cast<size_t>(total), '\0');
    MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(),
                offsets.data(), MPI_CHAR, 0, comm_);
    std::vector<std::string> texts;
    for (size_t i = 0; i < lengths.size(); ++i)
      texts.push_back(all.substr(static_cast<size_t>(offsets[i]),
                                 static_cast<size_t>(lengths[i])));
    return texts;
  }

private:
  void wait(const CollectiveWatchdog &watchdog, const CollectiveRecord &record,
            MPI_Request &request) {
    bool done = watchdog.waitUntilComplete(record, [&] {
      int flag = 0;
      MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
      return flag != 0;
    });
    if (!done) {
      std::fprintf(stderr,
                   "dsc-run: rank %d: the other ranks did not finish setting "
                   "up in time\n%s\n",
                   rank_, watchdog.timeoutReport(rank_, record).c_str());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, kCollectiveTimeoutExitCode);
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  double timeoutSeconds_ = kDefaultCollectiveTimeoutSeconds;
};

/// Ends a setup phase on every rank: 0 when all ranks succeeded, else the
/// largest exit code, after rank 0 printed each distinct message once.
int settle(Control &control, const Outcome &outcome) {
  int code = control.agree(outcome.code);
  if (code == 0)
    return 0;
  std::vector<std::string> messages = control.gather(outcome.message);
  if (control.rank() != 0)
    return code;
  std::map<std::string, std::vector<int>> ranksOf; // message -> ranks
  std::vector<std::string> order;
  for (int r = 0; r < static_cast<int>(messages.size()); ++r) {
    const std::string &message = messages[static_cast<size_t>(r)];
    if (message.empty())
      continue;
    if (ranksOf[message].empty())
      order.push_back(message);
    ranksOf[message].push_back(r);
  }
  for (const std::string &message : order) {
    const std::vector<int> &ranks = ranksOf[message];
    if (static_cast<int>(ranks.size()) == control.size())
      std::fprintf(stderr, "dsc-run: error: %s\n", message.c_str());
    else
      std::fprintf(stderr, "dsc-run: error: %s: %s\n",
                   rankList(ranks).c_str(), message.c_str());
  }
  if (code == kUsageExitCode)
    std::fprintf(stderr, "dsc-run: 'dsc-run --help' shows the usage\n");
  std::fflush(stderr);
  return code;
}

/// 0 when every rank runs what rank 0 runs (JobAgreement.h); else rank 0
/// prints what differs and on which ranks, and every rank returns 1.
int checkRanksAgree(Control &control, const JobDigest &digest,
                    const JobDescription &description) {
  std::vector<JobDigest> digests = control.allGather(digest);
  bool agreed = true;
  for (const JobDigest &other : digests)
    agreed = agreed && other == digests.front();
  if (agreed)
    return 0;
  std::vector<std::string> texts = control.gather(description.serialize());
  if (control.rank() == 0) {
    std::vector<JobDescription> descriptions;
    for (const std::string &text : texts)
      descriptions.push_back(JobDescription::deserialize(text));
    for (const std::string &line : describeDisagreement(digests, descriptions))
      std::fprintf(stderr, "dsc-run: error: %s\n", line.c_str());
    std::fprintf(stderr, "dsc-run: every rank must run the same artifact on "
                         "the same state with the same options; stopped "
                         "before the first step\n");
    std::fflush(stderr);
  }
  return kErrorExitCode;
}

/// This rank's summary, one line per figure, each prefixed "[rank R]".
/// The memory figures are the target's pools: host memory, or with
/// "memory=device" GPU memory (and the pinned host staging beside it). The
/// collectives' figures are per group (RunStepContext::groupStats): the
/// World's lines as "collective=KIND ...", those of the Expert,
/// ExpertData, Tensor, Data and Pipeline groups, when the artifact issued
/// any, prefixed "group=NAME" (a pipeline's sends and receives as
/// collective=send and collective=recv), then those of the sums over some
/// stages of the pipeline ("group=pipeline[0,3]": a tied weight's).
/// The memory of the steps of staged KD before its stop ("teacher") or
/// after it ("student") that this run ran, first to last.
struct StagedKdPhase {
  const char *name;
  int64_t first, last;
  MemoryUse memory;
};

/// The phases of staged KD in a run of steps firstStep to lastStep:
/// `teacherSteps` is the memory measured at the stop, `now` at the end.
std::vector<StagedKdPhase>
stagedKdPhases(const DataSchedulePlan &schedule, bool eval, int64_t firstStep,
               int64_t lastStep, const std::optional<MemoryUse> &teacherSteps,
               const MemoryUse &now) {
  if (!schedule.kdStopStep || eval || lastStep < firstStep)
    return {};
  const int64_t stop = *schedule.kdStopStep;
  std::vector<StagedKdPhase> phases;
  if (firstStep <= stop)
    phases.push_back({"teacher", firstStep, std::min(stop, lastStep),
                      teacherSteps ? *teacherSteps : now});
  if (lastStep > stop)
    phases.push_back({"student", std::max(stop + 1, firstStep), lastStep, now});
  return phases;
}

/// The largest arena of the step variants without the teacher (staged KD's
/// steps after its stop).
size_t studentArenaBytes(const std::vector<StepVariant> &variants) {
  int64_t largest = 0;
  for (const StepVariant &v : variants)
    if (!v.teacher)
      largest = std::max(largest, v.arenaBytes);
  return static_cast<size_t>(largest);
}

/// " peak_memory_bytes=... arena_high_water_bytes=... state_bytes=...
/// io_bytes=..." and the fields of the tiers the run used.
void printMemory(std::ostream &out, const MemoryUse &memory) {
  size_t peak = memory.arena + memory.state + memory.io;
  out << "peak_memory_bytes=" << peak
      << " arena_high_water_bytes=" << memory.arena
      << " state_bytes=" << memory.state << " io_bytes=" << memory.io;
  if (!memory.where.empty())
    out << " memory=" << memory.where
        << " pinned_host_bytes=" << memory.pinnedHost;
  if (memory.hostState || memory.hostArena)
    out << " host_state_bytes=" << memory.hostState
        << " host_arena_bytes=" << memory.hostArena;
  if (memory.nvmeState)
    out << " nvme_state_bytes=" << memory.nvmeState;
}

/// The run's figures on `rank`: its memory (the largest of staged KD's
/// phases, and a line for each), transfers and collectives.
std::string summary(int rank, const MemoryUse &memory,
                    const RunStepContext &context,
                    const std::vector<StagedKdPhase> &phases) {
  std::ostringstream out;
  std::string prefix = "[rank " + std::to_string(rank) + "] ";
  // Each pool's peak over the run: the teacher's steps hold at least what
  // the student's do.
  MemoryUse peak = phases.empty() ? memory : phases.front().memory;
  out << prefix;
  printMemory(out, peak);
  out << "\n";
  for (const StagedKdPhase &phase : phases) {
    out << prefix << "staged_kd=" << phase.name << " steps=" << phase.first
        << "-" << phase.last << " ";
    printMemory(out, phase.memory);
    out << "\n";
  }
  for (TransferDirection direction :
       {TransferDirection::DeviceToHost, TransferDirection::HostToDevice}) {
    const RunStepContext::TransferCounters &counters =
        context.transfers(direction);
    out << prefix << "transfer="
        << (direction == TransferDirection::DeviceToHost ? "d2h" : "h2d")
        << " calls=" << counters.calls << " bytes=" << counters.bytes << "\n";
  }
  // ZeRO-Infinity's reads and writes of NVMe states.
  if (memory.nvmeState)
    for (bool read : {true, false}) {
      const RunStepContext::TransferCounters &counters =
          read ? context.nvmeReads() : context.nvmeWrites();
      out << prefix << "nvme=" << (read ? "read" : "write")
          << " calls=" << counters.calls << " bytes=" << counters.bytes << "\n";
    }
  std::vector<std::pair<std::string, const CommStats *>> groups;
  for (CommGroup group : {CommGroup::World, CommGroup::Expert,
                          CommGroup::ExpertData, CommGroup::Tensor,
                          CommGroup::Data, CommGroup::Pipeline})
    groups.emplace_back(name(group), &context.groupStats(group));
  for (const auto &[group, stats] : context.stageGroupStats())
    groups.emplace_back(group, &stats);
  for (const auto &[group, statsOfGroup] : groups) {
    const CommStats &stats = *statsOfGroup;
    CollectiveCounters total = stats.total();
    bool world = group == name(CommGroup::World);
    if (!world && total.calls == 0)
      continue;
    std::string lead = prefix;
    if (!world)
      lead += "group=" + group + " ";
    for (size_t k = 0; k < kCollectiveKindCount; ++k) {
      auto kind = static_cast<CollectiveKind>(k);
      const CollectiveCounters &counters = stats[kind];
      if (counters.calls)
        out << lead << "collective=" << name(kind)
            << " calls=" << counters.calls
            << " bytes_sent=" << counters.bytesSent << "\n";
    }
    out << lead << "collective=total calls=" << total.calls
        << " bytes_sent=" << total.bytesSent << "\n";
  }
  return out.str();
}

/// Saves the state after step `job.step` into `root` on every rank: rank 0
/// prepares, every rank writes its shard, rank 0 commits (Checkpoint.h).
/// Returns 0, or the exit status once the messages are printed.
int saveCheckpoint(Control &control, const std::string &root,
                   const CheckpointJob &job, const PipelineStageInfos &stages,
                   const ArtifactInfo &info, RunTarget &target) {
  const int rank = control.rank();
  auto start = std::chrono::steady_clock::now();
  auto phase = [&](auto &&body) {
    Outcome outcome = attempt([&] {
      try {
        body();
      } catch (const std::exception &error) {
        throw Error("checkpoint " + checkpointStepName(job.step) +
                    " not saved, latest unchanged: " + error.what());
      }
    });
    return settle(control, outcome);
  };
  int code = phase([&] {
    if (rank == 0)
      beginCheckpoint(root, job.step);
  });
  std::string report, directory;
  if (code == 0)
    code = phase([&] {
      MemoryPool scratch("checkpoint");
      report = writeCheckpointShard(
          root, job, stages,
          target.hostStates(info, rank, job.worldSize, scratch), rank);
    });
  if (code == 0) {
    std::vector<std::string> reports = control.gather(report);
    code = phase([&] {
      if (rank == 0)
        directory = commitCheckpoint(root, job, stages, reports);
    });
  }
  if (code != 0) {
    if (rank == 0)
      abandonCheckpoint(root, job.step);
    return code;
  }
  if (rank == 0) {
    std::chrono::duration<double> elapsed =
        std::chrono::steady_clock::now() - start;
    std::fprintf(stderr, "dsc-run: saved checkpoint %s (%d shard(s), %.3f s)\n",
                 directory.c_str(), job.worldSize, elapsed.count());
    std::fflush(stderr);
  }
  return 0;
}

/// DSC_COLLECTIVE_TIMEOUT, or the default when it is malformed (the first
/// setup phase reports that, on every rank alike).
double startupTimeoutSeconds() {
  try {
    return collectiveTimeoutFromEnvironment();
  } catch (const Error &) {
    return kDefaultCollectiveTimeoutSeconds;
  }
}

/// The start-up watchdog's expiry, on its thread: says where this rank was
/// stuck and ends it with the collective watchdog's status; once MPI is up
/// through MPI_Abort, so that the launcher ends every rank.
[[noreturn]] void endStuckStartup(const std::string &phase, double seconds,
                                  bool mpiUp) {
  std::string rank = "?";
  try {
    rank = std::to_string(detectRankFromEnvironment().rank);
  } catch (const Error &) {
  }
  std::fprintf(stderr,
               "dsc-run: rank %s: error: start-up did not finish within %g s "
               "(DSC_COLLECTIVE_TIMEOUT) while %s\n",
               rank.c_str(), seconds, phase.c_str());
  std::fflush(stderr);
  if (mpiUp)
    MPI_Abort(MPI_COMM_WORLD, kCollectiveTimeoutExitCode);
  std::_Exit(kCollectiveTimeoutExitCode);
}

/// The layers of FeedPlan::expCountsOutputs: each output's name after
/// `moe.exp_counts.` (empty for a model whose block has no module path).
std::vector<std::string> expertLayerNames(const ArtifactInfo &info,
                                          const FeedPlan &plan) {
  std::vector<std::string> names;
  for (int32_t index : plan.expCountsOutputs) {
    std::string name = info.outputs[index].name;
    names.push_back(name.substr(std::min(name.size(),
                                         sizeof("moe.exp_counts.") - 1)));
  }
  return names;
}

/// The outputs of FeedPlan::lossTermOutputs, by name.
std::vector<std::string> lossTermNames(const ArtifactInfo &info,
                                       const FeedPlan &plan) {
  std::vector<std::string> names;
  for (int32_t index : plan.lossTermOutputs)
    names.push_back(info.outputs[index].name);
  return names;
}

/// What --nvme-path's check found: O_DIRECT on rank 0's line; each rank
/// that falls back to buffered I/O says why (ranks on other nodes may see
/// another file system under the same path).
void printNvmePath(int rank, const std::string &path,
                   const NvmePathReport &report) {
  if (report.direct && rank == 0)
    std::fprintf(stderr, "dsc-run: NVMe path %s: O_DIRECT supported\n",
                 path.c_str());
  else if (!report.direct)
    std::fprintf(stderr,
                 "dsc-run: rank %d: NVMe path %s: %s; buffered I/O\n", rank,
                 path.c_str(), report.reason.c_str());
  std::fflush(stderr);
}

double readScalar(const void *buffer, ElementType type) {
  if (type == ElementType::F64)
    return *static_cast<const double *>(buffer);
  return *static_cast<const float *>(buffer);
}

int runJob(const std::vector<std::string> &args, StartupWatchdog &startup) {
  startup.enter("joining the job (MPI_Comm_dup), waiting for every rank");
  Control control;
  const int rank = control.rank(), size = control.size();

  // Phase 1: what every rank can check without touching any file.
  startup.enter("checking the command line");
  RunOptions options;
  Outcome outcome = attempt([&] {
    RankInfo launcher = detectRankFromEnvironment();
    checkRankAgrees(launcher, rank, size, "MPI_COMM_WORLD");
    (void)collectiveTimeoutFromEnvironment();
    options = parseRunOptions(args);
  });
  if (int code = settle(control, outcome))
    return code;

  // Phase 2: the artifact, its target (a CUDA artifact's GPU first), the
  // data, the weights, every buffer.
  std::unique_ptr<ArtifactLibrary> artifact;
  std::unique_ptr<RunTarget> target;
  FeedPlan plan;
  std::optional<InputFeed> data;
  std::vector<void *> inputs; // the artifact's host input buffers
  std::unique_ptr<StepLog> log;
  std::unique_ptr<LtdIndexDump> ltdDump; // --dump-ltd-indices, rank 0
  std::optional<Checkpoint> resumed;
  std::optional<NvmePathReport> nvmePath;
  JobDigest digest;
  JobDescription description;
  startup.enter("loading the artifact, the data and the state");
  outcome = attempt([&] {
    artifact = ArtifactLibrary::open(options.artifact);
    artifact->selectPipelineStage(rank, size);
    const ArtifactInfo &info = artifact->info();
    applyArtifactRunSettings(options, artifact->runSettings(), options.artifact);
    if (!options.nvmePath.empty()) {
      // A file size limit (ulimit -f) then fails the write that passes it
      // with EFBIG, an error that names the file, instead of killing us.
      std::signal(SIGXFSZ, SIG_IGN);
      nvmePath = checkNvmePath(options.nvmePath);
    }
    if (options.dataSchedule.empty() != artifact->variants().empty())
      throw Error(options.artifact + ": " +
                  (artifact->variants().empty()
                       ? "compiled-in data schedules but no step variants"
                       : "step variants but no compiled-in data schedules"));
    plan = planFeeds(info, options, size);
    // From here on --batch and --seq are the artifact's, given or not.
    options.batch = plan.trainBatch;
    options.seq = plan.seqLen;
    target = makeRunTarget(info.target);
    target->prepare(rank);
    target->setNvmePath(options.nvmePath);
    data.emplace(options.data, plan, info);
    // Cheap checks first: the checkpoint's metadata and shard headers or
    // the weights file's header, the checkpoint root, the metrics file, and
    // one batch (the data must hold a sequence), before any tensor is read.
    std::optional<SafeTensorsFile> weights;
    if (!options.resume.empty()) {
      resumed = Checkpoint::open(options.resume);
      resumed->checkModel(info);
      resumed->checkJob(options.batch, options.seq);
      // The masks of an uninterrupted run: the checkpoint's seed.
      if (!options.seedGiven && resumed->job().seed)
        options.seed = *resumed->job().seed;
    } else {
      weights = SafeTensorsFile::open(options.weights);
    }
    // Staged KD: a run that starts after the teacher's last step never
    // runs it, so never reads it (evaluation runs variant 0, with it).
    const DataSchedulePlan &stages = options.dataSchedule;
    const int64_t firstStep = resumed ? resumed->job().step + 1 : 1;
    const bool teacherRead =
        hasTeacher(info) && (options.eval || stages.teacherRuns(firstStep));
    std::string until =
        stages.kdStopStep
            ? " (it distills until step " + std::to_string(*stages.kdStopStep) +
                  "; a run that starts after it needs none)"
            : std::string();
    check(!teacherRead || !options.teacherWeights.empty(),
          options.artifact + ": the artifact distills from a teacher; give "
                             "its weights with --teacher-weights FILE" + until);
    check(hasTeacher(info) || options.teacherWeights.empty(),
          "--teacher-weights: " + options.artifact +
              " has no teacher (compile it with --distill-from)");
    std::optional<SafeTensorsFile> teacher;
    if (teacherRead)
      teacher = SafeTensorsFile::open(options.teacherWeights);
    else if (!options.teacherWeights.empty() && rank == 0)
      std::fprintf(stderr,
                   "dsc-run: note: --teacher-weights is not read: staged KD "
                   "stopped after step %lld, before this run's first step "
                   "%lld\n",
                   static_cast<long long>(*stages.kdStopStep),
                   static_cast<long long>(firstStep));
    if (!options.save.empty())
      createCheckpointRoot(options.save);
    if (rank == 0) {
      log = std::make_unique<StepLog>(
          options.stepsPerPrint, firstStep, firstStep + options.steps - 1,
          options.metrics.empty()
              ? nullptr
              : std::make_unique<MetricsCsv>(options.metrics,
                                             options.dataSchedule.changesLengths(),
                                             expertLayerNames(info, plan),
                                             lossTermNames(info, plan)),
          options.csvMonitor.empty()
              ? nullptr
              : std::make_unique<CsvMonitor>(options.csvMonitor));
    }
    if (rank == 0 && !options.dumpOutputs.empty())
      (void)resolveOutputFile(options.dumpOutputs); // written after step 1
    if (!options.dumpStates.empty()) // written after the last step
      (void)resolveOutputFile(dumpStatesPath(options.dumpStates, rank));
    if (!options.dumpLtdIndices.empty()) {
      check(options.dataSchedule.randomLtd || options.dataSchedule.ltdDraw,
            "--dump-ltd-indices: " + options.artifact +
                " drops no tokens (compile it with random-LTD: --ltd-kept "
                "or a random_ltd schedule)");
      if (rank == 0)
        ltdDump = std::make_unique<LtdIndexDump>(options.dumpLtdIndices);
    }
    // A run that starts after staged KD's stop sizes its arena for the
    // steps without the teacher only.
    if (hasTeacher(info) && !teacherRead) {
      ArtifactInfo student = info;
      student.arenaBytes = studentArenaBytes(artifact->variants());
      target->allocate(student);
    } else {
      target->allocate(info);
    }
    for (int32_t i = 0; i < info.numInputs; ++i)
      inputs.push_back(target->hostInput(i));
    data->fill(0, dataRankOf(info, rank, size), plan.dataRanks, inputs);
    if (resumed)
      target->loadStates(info, *resumed);
    else
      target->loadStates(info, *weights);
    if (teacher)
      target->loadTeacherStates(info, *teacher);
    if (size > 1)
      describeJob(options, resumed ? &*resumed : nullptr, digest, description);
  });
  if (int code = settle(control, outcome))
    return code;
  if (nvmePath)
    printNvmePath(rank, options.nvmePath, *nvmePath);

  // Before the first collective whose sizes depend on the artifact: ranks
  // that run different artifacts would crash in it.
  startup.enter("comparing what every rank runs");
  if (size > 1)
    if (int code = checkRanksAgree(control, digest, description))
      return code;

  // Phase 3: the communicator, collective over MPI_COMM_WORLD (MPI, or NCCL
  // for a CUDA artifact, which fails on every rank alike).
  RunStepContext *stepContext = nullptr;
  startup.enter("connecting the artifact's communicator");
  outcome = attempt([&] {
    stepContext = &target->connect();
    stepContext->setTraining(!options.eval);
    stepContext->setSeed(static_cast<uint64_t>(options.seed));
  });
  if (int code = settle(control, outcome))
    return code;
  // From here on the collective watchdog watches every wait.
  startup.disarm();

  const ArtifactInfo &info = artifact->info();
  const ElementType lossType = info.outputs[plan.lossOutput].type;
  RunStepContext &context = *stepContext;
  // A resumed run continues the numbering and the data where the saved one
  // stopped: step N + 1 feeds batch N.
  const int64_t firstStep = resumed ? resumed->job().step + 1 : 1;
  const int64_t lastStep = firstStep + options.steps - 1;
  if (rank == 0) {
    std::string model = info.model && *info.model
                            ? std::string(" (model ") + info.model + ")"
                            : std::string();
    std::string accumulation =
        info.gradAccumSteps > 1
            ? " (" + std::to_string(info.gradAccumSteps) +
                  " micro-batches of " + std::to_string(plan.microBatch) +
                  " per rank: gradient accumulation)"
            : std::string();
    std::string experts = info.expertParallelSize > 1
                              ? " (expert-parallel size " +
                                    std::to_string(info.expertParallelSize) +
                                    ")"
                              : std::string();
    if (pipelineParallelSize(info) > 1)
      experts += " (mesh: tensor " + std::to_string(tensorParallelSize(info)) +
                 " x data " + std::to_string(plan.dataRanks) + " x pipeline " +
                 std::to_string(pipelineParallelSize(info)) +
                 ", tensor innermost; " +
                 std::to_string(info.pipelineParallelSize) +
                 " stages each running all micro-batches of a step in one "
                 "call)";
    else if (info.tensorParallelSize > 1)
      experts += " (mesh: tensor " + std::to_string(info.tensorParallelSize) +
                 " x data " + std::to_string(plan.dataRanks) +
                 ", tensor innermost)";
    std::fprintf(stderr,
                 "dsc-run: %s%s on %d rank(s)%s: global batch %lld%s, "
                 "sequence %lld, %lld step(s)\n",
                 options.artifact.c_str(), model.c_str(), size, experts.c_str(),
                 static_cast<long long>(options.batch), accumulation.c_str(),
                 static_cast<long long>(options.seq),
                 static_cast<long long>(options.steps));
    // mpirun's default binding for small jobs holds a rank to one core,
    // where its OpenMP threads then take turns.
    const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    int ranksOnNode = local ? std::atoi(local) : size;
    if (std::optional<std::string> warning =
            cpuBindingWarning(rank, allowedCpus(), onlineCpus(), ranksOnNode))
      std::fprintf(stderr, "%s\n", warning->c_str());
    if (!options.eval && !artifactTrains(info))
      std::fprintf(stderr,
                   "dsc-run: note: %s was compiled without a training step "
                   "(dsc-compile --eval): every step is forward and loss "
                   "only\n",
                   options.artifact.c_str());
    if (resumed) {
      const int savedStages = resumed->job().pipelineParallelSize;
      std::string stages =
          savedStages > 1
              ? " in " + std::to_string(savedStages) + " pipeline stages"
              : std::string();
      std::fprintf(stderr,
                   "dsc-run: resuming from %s (saved by %d rank(s)%s): steps "
                   "%lld to %lld%s\n",
                   resumed->directory().c_str(), resumed->job().worldSize,
                   stages.c_str(), static_cast<long long>(firstStep),
                   static_cast<long long>(lastStep),
                   options.weights.empty()
                       ? ""
                       : "; --weights is ignored, the state is the "
                         "checkpoint's");
    }
    std::fflush(stderr);
  }

  // With gradient accumulation one step is N calls of the artifact, each
  // on the next micro-batch of the data (--batch / N samples over all
  // ranks); only the N-th reduces the gradients and the loss (the mean of
  // the micro-batches') and updates, and every output is read after it.
  const int64_t microSteps = info.gradAccumSteps;
  const bool trains = !options.eval && artifactTrains(info);
  int64_t skippedSteps = 0; // loss scaling: overflowed steps so far
  auto save = [&](int64_t step) {
    CheckpointJob job{step,        size,          info.model ? info.model : "",
                      info.target, options.batch, options.seq, options.seed,
                      pipelineParallelSize(info)};
    return saveCheckpoint(control, options.save, job, artifact->stageInfos(),
                          info, *target);
  };
  // --steps 0 --save: the state as loaded, with the states rewrites add
  // filled in by their rules, so that any implementation can start from it.
  if (options.steps == 0 && !options.save.empty())
    if (int code = save(firstStep - 1))
      return code;
  // Data schedules: each step runs the variant of its sequence length and
  // kept tokens, with or without the teacher of staged KD, the same on
  // every rank (a function of the step number); evaluation runs the
  // full-length variant 0. DeepSpeed's layer-token counter is a sum over
  // the steps so far, resumed runs included.
  const DataSchedulePlan &schedule = options.dataSchedule;
  const std::vector<StepVariant> &variants = artifact->variants();
  auto variantOf = [&](int64_t step) -> size_t {
    if (variants.empty() || options.eval)
      return 0;
    auto [seqlen, kept] = schedule.stepLengths(step, variants.front().seqlen);
    const bool teacher = schedule.teacherRuns(step);
    for (size_t i = 0; i < variants.size(); ++i)
      if (variants[i].seqlen == seqlen && variants[i].kept == kept &&
          (variants[i].teacher != 0) == teacher)
        return i;
    throw Error(options.artifact + ": no step variant for step " +
                std::to_string(step) + " (sequence length " +
                std::to_string(seqlen) + ", " + std::to_string(kept) +
                " kept tokens, " + (teacher ? "with" : "without") +
                " the teacher)");
  };
  auto keptOfStep = [&](int64_t step) {
    return randomLtdKept(*schedule.randomLtd, step);
  };
  int64_t layerTokens =
      schedule.randomLtd && !options.eval
          ? consumedLayerTokens(*schedule.randomLtd, options.batch,
                                firstStep - 1, keptOfStep)
          : 0;
  if (rank == 0 && !variants.empty()) {
    std::fprintf(stderr, "dsc-run: %zu step variants (data schedules):",
                 variants.size());
    for (const StepVariant &v : variants)
      std::fprintf(stderr, " [seqlen %lld kept %lld%s: %.4g FLOPs, arena %lld B]",
                   static_cast<long long>(v.seqlen),
                   static_cast<long long>(v.kept),
                   !schedule.kdStopStep ? ""
                   : v.teacher          ? " teacher"
                                        : " no teacher",
                   v.flops, static_cast<long long>(v.arenaBytes));
    std::fprintf(stderr, "\n");
    std::fflush(stderr);
  }
  std::optional<MemoryUse> teacherSteps; // staged KD: up to the stop
  for (int64_t step = firstStep; step <= lastStep; ++step) {
    try {
      if (rank == 0 && schedule.kdStopStep && !options.eval &&
          step == *schedule.kdStopStep + 1) {
        std::fprintf(stderr,
                     "dsc-run: staged KD stopped after step %lld: from step "
                     "%lld the student trains alone (the teacher does not "
                     "run)\n",
                     static_cast<long long>(*schedule.kdStopStep),
                     static_cast<long long>(step));
        std::fflush(stderr);
      }
      // The teacher's states and the arena only its steps needed go at
      // the stop, on every rank; the memory before it is the teacher's
      // steps' (the summary reports both).
      if (schedule.kdStopStep && !options.eval && step > firstStep &&
          step == *schedule.kdStopStep + 1) {
        teacherSteps = target->memoryUse();
        MemoryUse released = target->releaseTeacher(
            info, studentArenaBytes(variants));
        if (rank == 0) {
          std::fprintf(stderr,
                       "dsc-run: released the teacher's states (%zu bytes, "
                       "%zu of them on the host) and %zu bytes of arena "
                       "(rank 0)\n",
                       released.state + released.hostState, released.hostState,
                       released.arena);
          std::fflush(stderr);
        }
      }
      auto start = std::chrono::steady_clock::now();
      const size_t variant = variantOf(step);
      for (int64_t micro = 0; micro < microSteps; ++micro) {
        // The ranks of a tensor group (Megatron's mesh: consecutive ranks)
        // read the same micro-batch: their data-parallel rank's.
        const int dataRank = dataRankOf(info, rank, size);
        data->fill((step - 1) * microSteps + micro, dataRank, plan.dataRanks,
                   inputs);
        // This rank's first sample of the micro-batch in the optimizer
        // step's global batch (the order fill() deals them: micro-batch by
        // micro-batch, each split over the ranks).
        context.beginStep(step,
                          (micro * plan.dataRanks + dataRank) * plan.microBatch,
                          /*endsOptimizerStep=*/micro == microSteps - 1);
        if (variants.empty())
          artifact->step(context);
        else
          artifact->step(context, variant);
        context.completePipelineSends();
      }
      std::chrono::duration<double> elapsed =
          std::chrono::steady_clock::now() - start;
      if (rank == 0) {
        double loss = readScalar(target->hostOutput(plan.lossOutput), lossType);
        const int64_t seqlen =
            variants.empty() ? options.seq : variants[variant].seqlen;
        StepRecord record = makeStepRecord(step, loss, lossType, elapsed.count(),
                                           options.batch, seqlen);
        if (schedule.changesLengths())
          record.seqlen = seqlen;
        if (schedule.randomLtd && !options.eval) {
          record.ltdKept = variants[variant].kept;
          layerTokens += consumedLayerTokens(*schedule.randomLtd, options.batch,
                                             1, [&](int64_t) { return keptOfStep(step); });
          record.layerTokens = layerTokens;
        }
        auto output = [&](int32_t index) {
          return readScalar(target->hostOutput(index),
                            info.outputs[index].type);
        };
        if (plan.lrOutput >= 0)
          record.lr = output(plan.lrOutput);
        if (plan.lossScaleOutput >= 0)
          record.lossScale = output(plan.lossScaleOutput);
        if (plan.skippedOutput >= 0) {
          skippedSteps += output(plan.skippedOutput) != 0 ? 1 : 0;
          record.skipped = skippedSteps;
        }
        if (plan.gradNormOutput >= 0)
          record.gradNorm = output(plan.gradNormOutput);
        for (int32_t index : plan.lossTermOutputs)
          record.lossTerms.emplace_back(info.outputs[index].name,
                                        output(index));
        if (plan.moeDroppedOutput >= 0)
          record.moeDropped =
              static_cast<int64_t>(output(plan.moeDroppedOutput));
        for (int32_t index : plan.expCountsOutputs) {
          const auto *counts =
              static_cast<const int64_t *>(target->hostOutput(index));
          record.expCounts.emplace_back(
              counts, counts + info.outputs[index].shape[0]);
        }
        MemoryUse memory = target->memoryUse();
        record.memoryBytes = memory.arena + memory.state + memory.io;
        log->add(record);
        if (!options.dumpOutputs.empty() && step == firstStep)
          dumpOutputs(options.dumpOutputs, info, *target);
        if (ltdDump) {
          // A scheduled artifact's variant says the step's lengths; a fixed
          // one drops its compiled kept length out of each variant's
          // sequence (every token when that is shorter).
          const RandomLtdDraw &fixed = schedule.ltdDraw.value_or(RandomLtdDraw{});
          RandomLtdDraw draw{seqlen, std::min(fixed.kept, seqlen), fixed.seed};
          if (schedule.randomLtd)
            draw = {seqlen, variants[variant].kept, schedule.randomLtd->seed};
          ltdDump->append(step, options.batch, draw,
                          static_cast<uint64_t>(options.seed));
        }
        // Without loss scaling nothing skips such a step: its update has
        // made the weights non-finite, so stop before any save can.
        if (!std::isfinite(record.loss) && trains && plan.lossScaleOutput < 0)
          throw Error("step " + std::to_string(step) + ": the loss is " +
                      formatLoss(record.loss, record.lossType) +
                      "; training stops here, no checkpoint of this state "
                      "is saved");
      }
    } catch (...) {
      std::fprintf(stderr, "dsc-run: rank %d: error: %s\n", rank,
                   describeCurrentException().c_str());
      std::fflush(stderr);
      // The other ranks may be inside a collective that will never complete.
      if (size > 1)
        MPI_Abort(MPI_COMM_WORLD, kErrorExitCode);
      return kErrorExitCode;
    }
    bool saveDue = step == lastStep || (options.saveInterval > 0 &&
                                        step % options.saveInterval == 0);
    if (!options.save.empty() && saveDue)
      if (int code = save(step))
        return code;
  }

  if (!options.dumpStates.empty()) {
    Outcome dumped = attempt([&] {
      dumpStates(dumpStatesPath(options.dumpStates, rank), info, *target);
    });
    if (int code = settle(control, dumped))
      return code;
  }

  std::vector<std::string> summaries =
      control.gather(summary(
          rank, target->memoryUse(), context,
          stagedKdPhases(schedule, options.eval, firstStep, lastStep,
                         teacherSteps, target->memoryUse())));
  for (const std::string &text : summaries)
    std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  return 0;
}

} // namespace

int runMain(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const std::string &arg : args)
    if (arg == "--help" || arg == "-h") {
      std::fputs(runUsage().c_str(), stdout);
      return 0;
    }

  // Armed before MPI_Init: a rank that never starts leaves the others
  // inside MPI_Init, which no collective watchdog sees.
  std::atomic<bool> mpiUp{false};
  StartupWatchdog startup(
      startupTimeoutSeconds(),
      "in MPI_Init, waiting for every rank of the job to start",
      [&](const std::string &phase, double seconds) {
        endStuckStartup(phase, seconds, mpiUp.load());
      });

  // Serialized: a CPU artifact's collectives run on its collectives
  // stream's worker thread (never two MPI calls at once). The CPU target
  // checks the level MPI provides when an artifact needs it.
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = 0;
  if (!initialized && MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED,
                                      &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "dsc-run: error: MPI_Init_thread failed\n");
    return kErrorExitCode;
  }
  mpiUp = true;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int code = kErrorExitCode;
  try {
    code = runJob(args, startup);
  } catch (...) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "dsc-run: rank %d: error: %s\n", rank,
                 describeCurrentException().c_str());
    std::fflush(stderr);
    if (size > 1)
      MPI_Abort(MPI_COMM_WORLD, kErrorExitCode);
  }
  startup.disarm();
  MPI_Finalize();
  return code;
}

} // namespace dsc::rt

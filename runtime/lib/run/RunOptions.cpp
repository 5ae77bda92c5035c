//===- RunOptions.cpp - dsc-run's command line ----------------------------===//

#include "dsc/runtime/Run.h"

#include <cerrno>
#include <cstdlib>

namespace dsc::rt {

namespace {

int64_t parsePositive(const std::string &option, const std::string &text) {
  bool digits = !text.empty();
  for (char c : text)
    digits = digits && c >= '0' && c <= '9';
  errno = 0;
  long long value = digits ? std::strtoll(text.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE || value <= 0)
    throw UsageError(option + " needs a positive integer, got '" + text + "'");
  return value;
}

} // namespace

std::string runUsage() {
  return "usage: mpirun -np N dsc-run ARTIFACT --weights W.safetensors "
         "--data D.bin|D.safetensors\n"
         "               --steps S [--batch B] [--seq T] [--eval] "
         "[--metrics FILE.csv]\n"
         "               [--steps-per-print N] [--csv-monitor DIR]\n"
         "               [--save DIR [--save-interval K]] [--resume DIR]\n"
         "               [--seed N] [--dump-outputs FILE.safetensors]\n"
         "               [--dump-ltd-indices FILE] [--dump-states FILE]\n"
         "               [--nvme-path DIR] [--teacher-weights FILE]\n"
         "\n"
         "Runs the step artifact ARTIFACT (a shared library from dsc-compile) "
         "S times on\n"
         "every rank of the job; see docs/running.md.\n"
         "\n"
         "  --weights FILE   safetensors file holding every state the "
         "artifact names\n"
         "  --teacher-weights FILE  the teacher's own weights, for an "
         "artifact compiled with\n"
         "                   --distill-from (every run, resumed ones too)\n"
         "  --data FILE      token file (flat little-endian uint16, as "
         "python -m dsc.data writes),\n"
         "                   feeding inputs 'tokens' and 'targets'; or "
         "FILE.safetensors: samples\n"
         "                   for any inputs, one tensor per input named "
         "after it, samples first\n"
         "  --batch B        samples per step, DeepSpeed's train_batch_size "
         "(default: the\n"
         "                   artifact's micro batch x ranks x gradient "
         "accumulation steps)\n"
         "  --seq T          sequence length (default: the artifact's); "
         "either, given, must\n"
         "                   equal the artifact's\n"
         "  --steps S        steps to run, printed as step=1..S on rank 0 "
         "(resumed: N+1..N+S); 0 with --save: save the initial state\n"
         "  --eval           forward and loss only: the state is not "
         "updated\n"
         "  --metrics FILE   CSV of step,loss,step_time_s,samples_per_s,"
         "tokens_per_s,lr,\n"
         "                   grad_norm,loss_scale,memory_gib,time, every "
         "step (rank 0)\n"
         "  --steps-per-print N  a step line every N steps, the first and "
         "last always\n"
         "                   (default: the config's steps_per_print compiled "
         "into the\n"
         "                   artifact, else 1)\n"
         "  --csv-monitor DIR  DeepSpeed csv_monitor files in DIR (default: "
         "the config's\n"
         "                   csv_monitor output_path/job_name, else none)\n"
         "  --save DIR       save a checkpoint into DIR after the last step "
         "(DIR/step_<N>,\n"
         "                   DIR/latest); DIR must be shared by every rank\n"
         "  --save-interval K  also save after every step that K divides\n"
         "  --resume DIR     take the state from the checkpoint that "
         "DIR/latest names (or\n"
         "                   DIR itself, a step_<N> directory) instead of "
         "--weights, and\n"
         "                   run steps N+1..N+S, from data batch N\n"
         "  --seed N         the run's random seed (dropout masks; default "
         "1234): with the\n"
         "                   step and the sample, all a random draw depends "
         "on\n"
         "  --dump-outputs FILE  write every output of the first step (loss, "
         "and gradients\n"
         "                   of an artifact compiled with --gradients) to "
         "FILE (rank 0)\n"
         "  --dump-ltd-indices FILE  write the tokens random-LTD keeps in every "
         "step,\n"
         "                   a line STEP SAMPLE I0 I1 ... per sample of the "
         "global batch (rank 0)\n"
         "  --dump-states FILE  write every state the rank holds after the "
         "last step (its\n"
         "                   shard where partitioned; a teacher's too) to FILE "
         "(rank 0),\n"
         "                   FILE.rank<r> (rank r > 0)\n"
         "  --nvme-path DIR  directory of the NVMe tier's per-rank files "
         "(default: the\n"
         "                   config's nvme_path compiled into the artifact); "
         "checked at start\n"
         "  -h, --help       this text\n";
}

RunOptions parseRunOptions(const std::vector<std::string> &args) {
  RunOptions options;
  for (const std::string &arg : args)
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      return options;
    }

  bool seenSteps = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0 || arg == "--") {
      if (!arg.empty() && arg[0] == '-' && arg != "-")
        throw UsageError("unknown option '" + arg + "'");
      if (!options.artifact.empty())
        throw UsageError("more than one artifact given ('" + options.artifact +
                         "' and '" + arg + "')");
      options.artifact = arg;
      continue;
    }
    std::string name = arg, value;
    bool hasValue = false;
    if (size_t eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      hasValue = true;
    }
    if (name == "--eval") {
      if (hasValue)
        throw UsageError("--eval takes no value");
      options.eval = true;
      continue;
    }
    auto takeValue = [&]() -> std::string {
      if (hasValue)
        return value;
      if (i + 1 >= args.size())
        throw UsageError(name + " needs a value");
      return args[++i];
    };
    if (name == "--weights")
      options.weights = takeValue();
    else if (name == "--teacher-weights")
      options.teacherWeights = takeValue();
    else if (name == "--data")
      options.data = takeValue();
    else if (name == "--metrics") {
      options.metrics = takeValue();
      if (options.metrics.empty())
        throw UsageError("--metrics needs a file name");
    }
    else if (name == "--batch")
      options.batch = parsePositive(name, takeValue());
    else if (name == "--seq")
      options.seq = parsePositive(name, takeValue());
    else if (name == "--steps") {
      // 0 only with --save: the initial state as a checkpoint (below).
      std::string text = takeValue();
      options.steps = text == "0" ? 0 : parsePositive(name, text);
      seenSteps = true;
    }
    else if (name == "--dump-outputs") {
      options.dumpOutputs = takeValue();
      if (options.dumpOutputs.empty())
        throw UsageError("--dump-outputs needs a file name");
    } else if (name == "--dump-ltd-indices") {
      options.dumpLtdIndices = takeValue();
      if (options.dumpLtdIndices.empty())
        throw UsageError("--dump-ltd-indices needs a file name");
    } else if (name == "--dump-states") {
      options.dumpStates = takeValue();
      if (options.dumpStates.empty())
        throw UsageError("--dump-states needs a file name");
    } else if (name == "--save" || name == "--resume") {
      std::string &dir = name == "--save" ? options.save : options.resume;
      dir = takeValue();
      if (dir.empty())
        throw UsageError(name + " needs a directory");
    } else if (name == "--save-interval")
      options.saveInterval = parsePositive(name, takeValue());
    else if (name == "--steps-per-print")
      options.stepsPerPrint = parsePositive(name, takeValue());
    else if (name == "--csv-monitor") {
      options.csvMonitor = takeValue();
      if (options.csvMonitor.empty())
        throw UsageError("--csv-monitor needs a directory");
    }
    else if (name == "--nvme-path") {
      options.nvmePath = takeValue();
      if (options.nvmePath.empty())
        throw UsageError("--nvme-path needs a directory");
    }
    else if (name == "--seed") {
      std::string text = takeValue();
      options.seed = text == "0" ? 0 : parsePositive(name, text);
      options.seedGiven = true;
    }
    else
      throw UsageError("unknown option '" + name + "'");
  }

  if (options.artifact.empty())
    throw UsageError("no artifact given");
  auto require = [](bool present, const char *name) {
    if (!present)
      throw UsageError(std::string("missing required option ") + name);
  };
  // A resumed run takes its state from the checkpoint.
  require(!options.weights.empty() || !options.resume.empty(), "--weights");
  require(!options.data.empty(), "--data");
  require(seenSteps, "--steps");
  if (options.steps == 0 && options.save.empty())
    throw UsageError("--steps needs a positive integer, got '0' (0 only with "
                     "--save DIR: the initial state, rewrites' new states "
                     "filled in, as a checkpoint)");
  if (options.saveInterval > 0 && options.save.empty())
    throw UsageError("--save-interval needs --save DIR");
  return options;
}

void applyArtifactRunSettings(RunOptions &options, const std::string &settings,
                              const std::string &where) {
  size_t begin = 0;
  while (begin < settings.size()) {
    size_t end = settings.find('\n', begin);
    if (end == std::string::npos)
      end = settings.size();
    std::string line = settings.substr(begin, end - begin);
    begin = end + 1;
    if (line.empty())
      continue;
    size_t eq = line.find('=');
    std::string key = line.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : line.substr(eq + 1);
    if (key == "steps_per_print") {
      int64_t every = 0;
      try {
        every = parsePositive("steps_per_print", value);
      } catch (const UsageError &error) {
        throw Error(where + ": compiled-in " + error.what());
      }
      if (options.stepsPerPrint == 0)
        options.stepsPerPrint = every;
    } else if (key == "csv_monitor" && !value.empty()) {
      if (options.csvMonitor.empty())
        options.csvMonitor = value;
    } else if (key == "nvme_path" && !value.empty()) {
      if (options.nvmePath.empty())
        options.nvmePath = value;
    } else if (isDataScheduleSetting(key)) {
      if (std::optional<std::string> problem =
              readDataScheduleSetting(options.dataSchedule, key, value))
        throw Error(where + ": " + *problem);
    } else {
      throw Error(where + ": unknown compiled-in run setting '" + line + "'");
    }
  }
  if (std::optional<std::string> problem =
          checkDataSchedulePlan(options.dataSchedule))
    throw Error(where + ": " + *problem);
}

} // namespace dsc::rt

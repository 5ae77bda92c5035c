//===- dsc-ckpt.cpp - describe a checkpoint, export its weights -----------===//
//
//   dsc-ckpt info CKPT_DIR
//   dsc-ckpt export CKPT_DIR -o model.safetensors
//   dsc-ckpt blocks WEIGHTS.safetensors --prefix h --keep 0,2 -o student.safetensors
//
// CKPT_DIR is a `dsc-run --save` directory (its `latest` step) or a step
// directory. The logic is in the runtime (dsc/runtime/CheckpointExport.h);
// see docs/running.md, "Exporting the weights". Bad input is one message
// naming the file or directory and exit status 1; a command line that
// makes no sense, the usage and exit status 2, as dsc-run does.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/BlockSubset.h"
#include "dsc/runtime/CheckpointExport.h"
#include "dsc/runtime/Error.h"

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

using namespace dsc::rt;

namespace {

constexpr int kErrorExitCode = 1;
constexpr int kUsageExitCode = 2;

const char *const kUsage =
    "usage: dsc-ckpt info CKPT_DIR\n"
    "       dsc-ckpt export CKPT_DIR -o OUT.safetensors\n"
    "       dsc-ckpt blocks WEIGHTS.safetensors --prefix P --keep I,J,... -o "
    "OUT.safetensors\n"
    "\n"
    "CKPT_DIR is a dsc-run --save directory (the step its 'latest' names) or "
    "a step_<N>\n"
    "directory; see docs/running.md.\n"
    "\n"
    "  info     the saving job, the tensors by role, what ZeRO partitioned, "
    "one line\n"
    "           per tensor\n"
    "  export   write the model's parameters and buffers, whole, as fp32 "
    "(an fp32\n"
    "           master copy where the checkpoint holds one), to one "
    "safetensors file,\n"
    "           whatever the ZeRO stage and world size that saved them\n"
    "  blocks   a shallower model's weights from a deeper one's (a student "
    "from its\n"
    "           teacher, docs/distillation.md): the blocks P.<I>, P.<J>, "
    "... of\n"
    "           WEIGHTS renumbered P.0, P.1, ..., every tensor outside P's "
    "blocks copied\n"
    "  --prefix P  the blocks' names' prefix (transformer.h for the zoo's GPT-2)\n"
    "  --keep I,J,...  the blocks kept, in the student's order\n"
    "  -o FILE  the file export (or blocks) writes: a regular file is replaced "
    "atomically, a\n"
    "           character device or FIFO written to, a symbolic link "
    "followed\n"
    "  -h, --help  this text\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string command, checkpoint, output, prefix;
  std::vector<int64_t> keep;
};

/// "0,2,5" as block indices.
std::vector<int64_t> parseBlocks(const std::string &text) {
  std::vector<int64_t> blocks;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    std::string item = text.substr(start, end == std::string::npos
                                              ? std::string::npos
                                              : end - start);
    if (item.empty() || item.size() > 15 ||
        item.find_first_not_of("0123456789") != std::string::npos)
      throw UsageError("--keep takes block numbers separated by commas, got '" +
                       text + "'");
    blocks.push_back(std::stoll(item));
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  return blocks;
}

Options parse(const std::vector<std::string> &args) {
  Options options;
  bool outputGiven = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (arg == "-o" || arg == "--output") {
      if (i + 1 == args.size())
        throw UsageError(arg + " needs a file name");
      options.output = args[++i];
      outputGiven = true;
    } else if (arg == "--prefix" || arg == "--keep") {
      if (i + 1 == args.size())
        throw UsageError(arg + " needs a value");
      if (arg == "--prefix")
        options.prefix = args[++i];
      else
        options.keep = parseBlocks(args[++i]);
    } else if (arg.rfind("--output=", 0) == 0) {
      options.output = arg.substr(9);
      outputGiven = true;
    } else if (!arg.empty() && arg[0] == '-') {
      throw UsageError("unknown option '" + arg + "'");
    } else if (options.command.empty()) {
      options.command = arg;
    } else if (options.checkpoint.empty()) {
      options.checkpoint = arg;
    } else {
      throw UsageError("unexpected argument '" + arg + "'");
    }
  }
  if (options.command.empty())
    throw UsageError("no command (info, export or blocks)");
  if (options.command != "info" && options.command != "export" &&
      options.command != "blocks")
    throw UsageError("unknown command '" + options.command +
                     "' (info, export or blocks)");
  bool blocks = options.command == "blocks";
  if (blocks && (options.prefix.empty() || options.keep.empty() ||
                 options.checkpoint.empty() || options.output.empty()))
    throw UsageError("blocks needs WEIGHTS.safetensors, --prefix P, --keep "
                     "I,J,... and -o OUT.safetensors");
  if (!blocks && (!options.prefix.empty() || !options.keep.empty()))
    throw UsageError("--prefix and --keep are for blocks");
  if (options.checkpoint.empty())
    throw UsageError(options.command + " needs a checkpoint directory");
  if (outputGiven && options.output.empty())
    throw UsageError("-o needs a file name, got ''");
  if (options.command != "info" && options.output.empty())
    throw UsageError("export needs -o OUT.safetensors");
  if (options.command == "info" && !options.output.empty())
    throw UsageError("info writes no file: -o is for export");
  return options;
}

int run(const Options &options) {
  if (options.command == "blocks") {
    SafeTensorsFile weights = SafeTensorsFile::open(options.checkpoint);
    std::vector<RenamedTensor> tensors = writeBlockSubset(
        weights, options.prefix, options.keep, options.output);
    std::printf("dsc-ckpt: wrote %zu tensor(s) of %s (blocks %s.",
                tensors.size(), options.checkpoint.c_str(),
                options.prefix.c_str());
    for (size_t j = 0; j < options.keep.size(); ++j)
      std::printf("%s%lld", j ? "," : "", (long long)options.keep[j]);
    std::printf(" as %s.0..%zu) to %s\n", options.prefix.c_str(),
                options.keep.size() - 1, options.output.c_str());
    return 0;
  }
  Checkpoint checkpoint = Checkpoint::open(options.checkpoint);
  if (options.command == "info") {
    std::fputs(describeCheckpoint(checkpoint).c_str(), stdout);
    return 0;
  }
  std::vector<ExportedTensor> tensors =
      exportWeights(checkpoint, options.output);
  size_t masters = 0;
  for (const ExportedTensor &tensor : tensors)
    masters += tensor.source != tensor.name;
  std::printf("dsc-ckpt: exported %zu tensor(s) (%zu from master copies) of "
              "checkpoint %s to %s\n",
              tensors.size(), masters, checkpoint.directory().c_str(),
              options.output.c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const std::string &arg : args)
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  try {
    return run(parse(args));
  } catch (const UsageError &error) {
    std::fprintf(stderr, "dsc-ckpt: error: %s\n%s", error.what(), kUsage);
    return kUsageExitCode;
  } catch (const std::exception &error) {
    std::fprintf(stderr, "dsc-ckpt: error: %s\n", error.what());
    return kErrorExitCode;
  } catch (...) {
    std::fprintf(stderr, "dsc-ckpt: error: unknown exception\n");
    return kErrorExitCode;
  }
}

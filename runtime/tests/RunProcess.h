//===- RunProcess.h - run a tool under timeout(1) for tests -----*- C++ -*-===//
//
// What the tests of the dsc-run binary (RunToolTest.cpp,
// CheckpointToolTest.cpp) share: starting a process under timeout(1), so
// that no test can hang, with its stdout and stderr captured in files of a
// scratch directory, and the mpirun command line of the CMake cache.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_TESTS_RUNPROCESS_H
#define DSC_RUNTIME_TESTS_RUNPROCESS_H

#include "ScratchDir.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <sstream>
#include <string>
#include <vector>

extern char **environ;

namespace dsc::rt::test {

struct Result {
  int status = -1; // exit status, or 128 + signal
  std::string out, err;
};

inline std::vector<std::string> split(const std::string &list, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(list);
  for (std::string part; std::getline(stream, part, separator);)
    if (!part.empty())
      parts.push_back(part);
  return parts;
}

/// Runs `argv` with `env` added to the environment, under timeout(1).
/// OpenMPI's session files go to `dir`: in the shared default place, a job
/// ending beside one starting can remove the directory the other is
/// creating, and that job then fails in orte_init (seen under ctest -j2).
inline Result runProcess(const ScratchDir &dir, std::vector<std::string> argv,
                         const std::vector<std::string> &env = {},
                         int timeoutSeconds = 90) {
  std::vector<std::string> full = {
      "timeout", "-k", "5", std::to_string(timeoutSeconds), "env",
      "OMPI_MCA_orte_tmpdir_base=" + dir.file("mpi-session")};
  full.insert(full.end(), env.begin(), env.end());
  full.insert(full.end(), argv.begin(), argv.end());
  std::vector<char *> args;
  for (std::string &arg : full)
    args.push_back(arg.data());
  args.push_back(nullptr);

  std::string outPath = dir.file("stdout.txt"),
              errPath = dir.file("stderr.txt");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, outPath.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, errPath.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  Result result;
  int spawned =
      posix_spawnp(&pid, "timeout", &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    result.err = "posix_spawnp failed";
    return result;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.status =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = readBytes(outPath);
  result.err = readBytes(errPath);
  return result;
}

/// The test artifact `name` (run.cmake's dsc_test_artifact).
inline std::string artifact(const std::string &name) {
  return std::string(DSC_TEST_ARTIFACT_DIR) + "/" + name + ".so";
}

/// The mpirun command line of the CMake cache (DSC_MPIRUN, '|'-separated).
inline std::vector<std::string> mpirunCommand() {
  return split(DSC_MPIRUN, '|');
}

inline size_t occurrences(const std::string &text, const std::string &what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1))
    ++count;
  return count;
}

} // namespace dsc::rt::test

#endif // DSC_RUNTIME_TESTS_RUNPROCESS_H

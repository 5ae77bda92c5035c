//===- ScratchDir.h - a temporary directory for file tests ------*- C++ -*-===//
//
// Tests of the io component build their inputs, corrupt ones included, as
// files in a fresh directory that is removed when the test ends.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_TESTS_SCRATCHDIR_H
#define DSC_RUNTIME_TESTS_SCRATCHDIR_H

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

namespace dsc::rt::test {

class ScratchDir {
public:
  ScratchDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "dsc-rt-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir &) = delete;
  ScratchDir &operator=(const ScratchDir &) = delete;

  const std::string &path() const { return path_; }
  /// The path of `name` in the directory.
  std::string file(const std::string &name) const { return path_ + "/" + name; }
  /// Writes `bytes` to `name` and returns its path.
  std::string write(const std::string &name, const std::string &bytes) const {
    std::string p = file(name);
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

private:
  std::string path_;
};

/// The whole content of `path` (empty when it cannot be read).
inline std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

} // namespace dsc::rt::test

#endif // DSC_RUNTIME_TESTS_SCRATCHDIR_H

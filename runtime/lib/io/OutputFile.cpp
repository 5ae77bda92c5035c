//===- OutputFile.cpp - outputs: replaced if regular, else written in place ===//

#include "dsc/runtime/OutputFile.h"

#include "PosixFile.h"
#include "dsc/runtime/Error.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>

namespace dsc::rt {

namespace {

namespace fs = std::filesystem;

/// Linux's limit (ELOOP), so that a loop of links is an error, not a hang.
constexpr int kMaxLinkHops = 40;

[[noreturn]] void refuse(const std::string &path, const std::string &why) {
  throw Error(path + ": cannot write: " + why);
}

/// `path` with every symbolic link in its last component followed; a link
/// to a missing file gives that file's path (written as a new file).
std::string followLinks(const std::string &path) {
  fs::path current = path;
  for (int hop = 0; hop < kMaxLinkHops; ++hop) {
    struct stat st;
    if (::lstat(current.c_str(), &st) != 0 || !S_ISLNK(st.st_mode))
      return current.string();
    std::error_code error;
    fs::path target = fs::read_symlink(current, error);
    if (error)
      refuse(path, "cannot read the symbolic link " + current.string() + ": " +
                       error.message());
    current = target.is_absolute() ? target : current.parent_path() / target;
  }
  refuse(path, "too many levels of symbolic links");
}

std::string kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "it is a directory";
  if (S_ISBLK(mode))
    return "it is a block device";
  if (S_ISSOCK(mode))
    return "it is a socket";
  return "it is not a regular file";
}

} // namespace

OutputTarget resolveOutputFile(const std::string &path) {
  if (path.empty() || path.back() == '/')
    throw Error("'" + path + "': the output must name a file");
  OutputTarget target{followLinks(path), false};
  struct stat st;
  if (::stat(target.path.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode))
      return target;
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      target.inPlace = true;
      return target;
    }
    refuse(path, kindOf(st.st_mode) + "; an output is a regular file "
                                      "(replaced), a character device or a "
                                      "FIFO (written to)");
  }
  if (errno != ENOENT && errno != ENOTDIR)
    refuse(path, std::strerror(errno));
  // A new file: its directory must exist.
  fs::path parent = fs::path(target.path).parent_path();
  if (parent.empty())
    parent = ".";
  struct stat dir;
  if (::stat(parent.c_str(), &dir) != 0)
    refuse(path, errno == ENOENT ? "directory " + parent.string() +
                                       " does not exist"
                                 : parent.string() + ": " +
                                       std::strerror(errno));
  if (!S_ISDIR(dir.st_mode))
    refuse(path, parent.string() + " is not a directory");
  return target;
}

namespace detail {

void writeOutputFile(const std::string &path,
                     const std::function<void(PosixFile &)> &write) {
  OutputTarget target = resolveOutputFile(path);
  if (!target.inPlace) {
    replaceFileAtomically(target.path, write);
    return;
  }
  PosixFile file = PosixFile::openForWritingInPlace(target.path);
  write(file);
  file.close();
}

} // namespace detail

} // namespace dsc::rt

//===- OutputFile.h - where a file the user named is written ----*- C++ -*-===//
//
// dsc-run --dump-outputs and dsc-ckpt export -o write where the user says.
// Replacing a file atomically (a temporary file beside it, then a rename)
// keeps the old file whole until the new one is complete, but renamed over
// /dev/null it replaces the device with a regular file (for whoever may
// rename there, such as root), and over a FIFO it replaces the pipe a
// reader waits on. So the rename is for regular files and new paths; a
// symbolic link is followed (the link stays, the file it names is
// written); a character device or a FIFO is opened and written in place;
// a directory, a block device or a socket is refused.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_OUTPUTFILE_H
#define DSC_RUNTIME_OUTPUTFILE_H

#include <string>

namespace dsc::rt {

struct OutputTarget {
  std::string path;     // the file to write: `path` with links followed
  bool inPlace = false; // a character device or FIFO: opened, not replaced
};

/// Where and how an output named `path` is written. Throws Error naming
/// `path` ("PATH: cannot write: ...") for an empty name or one ending in
/// '/', a directory, a new file whose directory is missing or is no
/// directory, a block device, a socket, and a loop of symbolic links.
OutputTarget resolveOutputFile(const std::string &path);

} // namespace dsc::rt

#endif // DSC_RUNTIME_OUTPUTFILE_H

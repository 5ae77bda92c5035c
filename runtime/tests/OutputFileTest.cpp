//===- OutputFileTest.cpp - outputs: replaced, written in place, refused --===//
//
// A regular file or a new path is replaced atomically; a symbolic link is
// followed; a character device or FIFO is written in place and stays what
// it was; a directory, socket or loop of links is refused (OutputFile.h).
// Devices are reached through links in a scratch directory, so that no test
// can replace a system device even if this broke.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/Error.h"
#include "dsc/runtime/OutputFile.h"
#include "dsc/runtime/SafeTensors.h"

#include "ErrorOf.h"
#include "ScratchDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace dsc::rt {
namespace {

using test::readBytes;
using test::errorOf;
using test::ScratchDir;
using ::testing::HasSubstr;

const float kValues[3] = {1.0f, -2.5f, 3.25f};

/// Writes one small tensor to `path`.
void writeSmall(const std::string &path) {
  writeSafeTensors(path, {{"x", DType::F32, {3}, kValues}});
}

/// The bytes writeSmall writes, from a regular file.
std::string smallBytes(const ScratchDir &dir) {
  writeSmall(dir.file("reference.safetensors"));
  return readBytes(dir.file("reference.safetensors"));
}

mode_t lmode(const std::string &path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode;
}

TEST(OutputFileTest, RegularFilesAndNewPathsAreReplaced) {
  ScratchDir dir;
  EXPECT_FALSE(resolveOutputFile(dir.file("new")).inPlace);
  std::string old = dir.write("old", "previous");
  OutputTarget target = resolveOutputFile(old);
  EXPECT_EQ(target.path, old);
  EXPECT_FALSE(target.inPlace);
  writeSmall(old);
  EXPECT_EQ(readBytes(old), smallBytes(dir));
}

TEST(OutputFileTest, LinksAreFollowedAndStay) {
  ScratchDir dir;
  std::string file = dir.write("file", "previous");
  ASSERT_EQ(::symlink("file", dir.file("link").c_str()), 0);
  ASSERT_EQ(::symlink("link", dir.file("link2").c_str()), 0);
  EXPECT_EQ(resolveOutputFile(dir.file("link2")).path, file);
  writeSmall(dir.file("link2"));
  EXPECT_TRUE(S_ISLNK(lmode(dir.file("link2"))));
  EXPECT_TRUE(S_ISLNK(lmode(dir.file("link"))));
  EXPECT_EQ(readBytes(file), smallBytes(dir));
  // A link to a missing file: the file is created where the link points.
  ASSERT_EQ(::symlink("created", dir.file("dangling").c_str()), 0);
  writeSmall(dir.file("dangling"));
  EXPECT_TRUE(S_ISLNK(lmode(dir.file("dangling"))));
  EXPECT_EQ(readBytes(dir.file("created")), smallBytes(dir));
}

TEST(OutputFileTest, AFifoIsWrittenInPlace) {
  ScratchDir dir;
  std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(resolveOutputFile(fifo).inPlace);
  std::string expected = smallBytes(dir);
  // The reader opens the FIFO while the writer waits for it.
  auto received = std::async(std::launch::async, [&] { return readBytes(fifo); });
  writeSmall(fifo);
  EXPECT_EQ(received.get(), expected);
  EXPECT_TRUE(S_ISFIFO(lmode(fifo)));
}

TEST(OutputFileTest, CharacterDevicesAreWrittenInPlace) {
  ScratchDir dir;
  ASSERT_EQ(::symlink("/dev/null", dir.file("null").c_str()), 0);
  OutputTarget null = resolveOutputFile(dir.file("null"));
  EXPECT_EQ(null.path, "/dev/null");
  EXPECT_TRUE(null.inPlace);
  writeSmall(dir.file("null"));
  EXPECT_TRUE(S_ISLNK(lmode(dir.file("null"))));
  EXPECT_TRUE(S_ISCHR(lmode("/dev/null")));
  // A full device: the write's own error, nothing replaced.
  ASSERT_EQ(::symlink("/dev/full", dir.file("full").c_str()), 0);
  EXPECT_THAT(errorOf([&] { writeSmall(dir.file("full")); }),
              HasSubstr("/dev/full: cannot write: No space left on device"));
  EXPECT_TRUE(S_ISCHR(lmode("/dev/full")));
}

TEST(OutputFileTest, RefusesWhatIsNoFile) {
  ScratchDir dir;
  EXPECT_THAT(errorOf([&] { resolveOutputFile(""); }),
              HasSubstr("'': the output must name a file"));
  EXPECT_THAT(errorOf([&] { resolveOutputFile(dir.file("sub/")); }),
              HasSubstr("the output must name a file"));
  EXPECT_THAT(errorOf([&] { resolveOutputFile(dir.path()); }),
              HasSubstr(dir.path() + ": cannot write: it is a directory"));
  EXPECT_THAT(errorOf([&] { resolveOutputFile(dir.file("no/such/x")); }),
              HasSubstr("cannot write: directory " + dir.file("no/such") +
                        " does not exist"));
  std::string file = dir.write("file", "x");
  EXPECT_THAT(errorOf([&] { resolveOutputFile(file + "/x"); }),
              HasSubstr(file + "/x: cannot write: " + file +
                        " is not a directory"));

  std::string socketPath = dir.file("sock");
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(socketPath.size(), sizeof(address.sun_path));
  std::copy(socketPath.begin(), socketPath.end(), address.sun_path);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address),
            0);
  EXPECT_THAT(errorOf([&] { writeSmall(socketPath); }),
              HasSubstr("sock: cannot write: it is a socket; an output is a "
                        "regular file (replaced), a character device or a "
                        "FIFO (written to)"));
  EXPECT_TRUE(S_ISSOCK(lmode(socketPath)));
  ::close(fd);

  ASSERT_EQ(::symlink("b", dir.file("a").c_str()), 0);
  ASSERT_EQ(::symlink("a", dir.file("b").c_str()), 0);
  EXPECT_THAT(errorOf([&] { resolveOutputFile(dir.file("a")); }),
              HasSubstr("too many levels of symbolic links"));
}

} // namespace
} // namespace dsc::rt

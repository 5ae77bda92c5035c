//===- JobAgreementTest.cpp - what the ranks compare before step 1 -------===//
//
// The digests that dsc-run's ranks exchange (JobAgreement.h): a file's
// digest is its bytes', whatever its path; the options that must agree are
// the ones that change what the ranks do together; and the message names
// each side of a disagreement with its ranks.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/Error.h"
#include "dsc/runtime/JobAgreement.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/Xxh64.h"

#include "ErrorOf.h"
#include "ScratchDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

namespace dsc::rt {
namespace {

using test::errorOf;
using test::ScratchDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(JobAgreementTest, FileDigestIsTheDigestOfTheBytes) {
  ScratchDir dir;
  std::string bytes(3 << 20, '\0'); // several read chunks
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<char>(i * 131 % 251);
  std::string a = dir.write("a.bin", bytes);
  std::string copy = dir.write("copy.bin", bytes);
  EXPECT_EQ(fileDigest(a), Xxh64::of(bytes.data(), bytes.size()));
  EXPECT_EQ(fileDigest(a), fileDigest(copy));
  bytes[bytes.size() / 2] ^= 1;
  EXPECT_NE(fileDigest(a), fileDigest(dir.write("flipped.bin", bytes)));
  EXPECT_EQ(fileDigest(dir.write("empty.bin", "")), Xxh64::of("", 0));
}

TEST(JobAgreementTest, FileDigestRefusesWhatIsNoRegularFile) {
  ScratchDir dir;
  EXPECT_THAT(errorOf([&] { fileDigest(dir.file("missing")); }),
              HasSubstr("missing: cannot open: No such file or directory"));
  EXPECT_THAT(errorOf([&] { fileDigest(dir.path()); }),
              HasSubstr(": not a regular file"));
  // Opening a FIFO for reading would wait for a writer forever.
  std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(errorOf([&] { fileDigest(fifo); }),
              HasSubstr("fifo: not a regular file"));
}

RunOptions options(const std::vector<std::string> &extra) {
  std::vector<std::string> args = {"a.so",  "--weights", "w.safetensors",
                                   "--data", "d.bin",    "--batch",
                                   "4",      "--seq",    "16",
                                   "--steps", "5"};
  args.insert(args.end(), extra.begin(), extra.end());
  return parseRunOptions(args);
}

TEST(JobAgreementTest, SharedOptionsLeaveOutPathsAndRankZerosOutputs) {
  EXPECT_EQ(sharedOptionsText(options({})), "--batch 4 --seq 16 --steps 5 --seed 1234");
  EXPECT_EQ(sharedOptionsText(options({"--metrics", "m.csv", "--dump-outputs",
                                       "o.safetensors"})),
            "--batch 4 --seq 16 --steps 5 --seed 1234");
  // Rank 0's random-LTD index dump is its own output too.
  RunOptions dumping = options({"--dump-ltd-indices", "kept.txt"});
  EXPECT_EQ(dumping.dumpLtdIndices, "kept.txt");
  EXPECT_EQ(sharedOptionsText(dumping), "--batch 4 --seq 16 --steps 5 --seed 1234");
  EXPECT_THROW(options({"--dump-ltd-indices", ""}), UsageError);
  EXPECT_EQ(sharedOptionsText(options(
                {"--eval", "--save", "ckpt", "--save-interval", "2"})),
            "--batch 4 --seq 16 --steps 5 --seed 1234 --eval --save --save-interval 2");
  EXPECT_EQ(sharedOptionsText(options({"--resume", "ckpt"})),
            "--batch 4 --seq 16 --steps 5 --seed 1234 --resume");
}

TEST(JobAgreementTest, DescribeJobHashesTheArtifactAndTheWeights) {
  ScratchDir dir;
  RunOptions run = options({});
  run.artifact = dir.write("a.so", "artifact bytes");
  run.weights = dir.write("w.safetensors", "weights bytes");
  JobDigest digest;
  JobDescription description;
  describeJob(run, nullptr, digest, description);
  EXPECT_EQ(digest.artifact, Xxh64::of("artifact bytes", 14));
  EXPECT_EQ(digest.state, Xxh64::of("weights bytes", 13));
  EXPECT_EQ(description.artifact, run.artifact);
  EXPECT_EQ(description.state, "weights " + run.weights);
  EXPECT_EQ(description.options, "--batch 4 --seq 16 --steps 5 --seed 1234");

  JobDigest moreSteps;
  run.steps = 6;
  describeJob(run, nullptr, moreSteps, description);
  EXPECT_NE(moreSteps.options, digest.options);
  EXPECT_EQ(moreSteps.artifact, digest.artifact);

  run.weights = dir.file("gone.safetensors");
  EXPECT_THAT(errorOf([&] { describeJob(run, nullptr, digest, description); }),
              HasSubstr("gone.safetensors: cannot open"));
}

TEST(JobAgreementTest, DescriptionSurvivesTheTrip) {
  JobDescription description{"a b.so", "weights w.safetensors",
                             "--batch 4 --seq 16 --steps 5 --seed 1234"};
  JobDescription back = JobDescription::deserialize(description.serialize());
  EXPECT_EQ(back.artifact, description.artifact);
  EXPECT_EQ(back.state, description.state);
  EXPECT_EQ(back.options, description.options);
}

TEST(JobAgreementTest, AgreementIsNoMessage) {
  JobDigest same{1, 2, 3};
  EXPECT_TRUE(describeDisagreement({same, same, same}, {}).empty());
}

TEST(JobAgreementTest, DisagreementNamesEachSideWithItsRanks) {
  std::vector<JobDigest> digests = {{1, 7, 9}, {2, 7, 9}, {1, 7, 9}, {1, 8, 9}};
  std::vector<JobDescription> descriptions = {
      {"s0.so", "weights w.safetensors", "--steps 5"},
      {"s3.so", "weights w.safetensors", "--steps 5"},
      {"s0.so", "weights w.safetensors", "--steps 5"},
      {"s0.so", "weights other.safetensors", "--steps 5"}};
  EXPECT_THAT(
      describeDisagreement(digests, descriptions),
      ElementsAre("the ranks run different artifacts: ranks 0, 2, 3: s0.so "
                  "(digest 0000000000000001); rank 1: s3.so (digest "
                  "0000000000000002)",
                  "the ranks loaded different states: ranks 0, 1, 2: weights "
                  "w.safetensors (digest 0000000000000007); rank 3: weights "
                  "other.safetensors (digest 0000000000000008)"));
  // Without the descriptions, the digests alone.
  EXPECT_THAT(describeDisagreement({{1, 2, 3}, {1, 2, 4}}, {}),
              ElementsAre("the ranks were given different options: rank 0: "
                          "(digest 0000000000000003); rank 1: (digest "
                          "0000000000000004)"));
}

TEST(JobAgreementTest, RankList) {
  EXPECT_EQ(rankList({2}), "rank 2");
  EXPECT_EQ(rankList({0, 1, 3}), "ranks 0, 1, 3");
}

} // namespace
} // namespace dsc::rt

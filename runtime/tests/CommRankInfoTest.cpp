// detectRankFromEnvironment over a map instead of the real environment.

#include "dsc/runtime/Error.h"
#include "dsc/runtime/RankInfo.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace dsc::rt;

namespace {

using Env = std::map<std::string, std::string>;

RankInfo detect(const Env &env) {
  return detectRankFromEnvironment(
      [&env](const char *name) -> std::optional<std::string> {
        auto it = env.find(name);
        if (it == env.end())
          return std::nullopt;
        return it->second;
      });
}

/// The Error message of detect(env), or "" when it does not throw.
std::string errorOf(const Env &env) {
  try {
    detect(env);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(CommRankInfo, NoLauncherMeansRankZeroOfOne) {
  RankInfo info = detect({});
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.size, 1);
  EXPECT_EQ(info.source, RankSource::None);
}

TEST(CommRankInfo, OpenMpiComesFirst) {
  RankInfo info = detect({{"OMPI_COMM_WORLD_RANK", "2"},
                          {"OMPI_COMM_WORLD_SIZE", "4"},
                          {"PMIX_RANK", "1"},
                          {"SLURM_PROCID", "3"},
                          {"SLURM_NTASKS", "8"},
                          {"RANK", "5"},
                          {"WORLD_SIZE", "6"}});
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.size, 4);
  EXPECT_EQ(info.source, RankSource::OpenMpi);
  EXPECT_EQ(info.rankVariable, "OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(info.sizeVariable, "OMPI_COMM_WORLD_SIZE");
}

TEST(CommRankInfo, PmixTakesTheSizeFromAnotherLauncher) {
  RankInfo info = detect({{"PMIX_RANK", "1"},
                          {"SLURM_PROCID", "3"},
                          {"SLURM_NTASKS", "8"},
                          {"WORLD_SIZE", "6"}});
  EXPECT_EQ(info.source, RankSource::Pmix);
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.size, 8);
  EXPECT_EQ(info.sizeVariable, "SLURM_NTASKS");

  info = detect({{"PMIX_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  EXPECT_EQ(info.size, 2);
  EXPECT_EQ(info.sizeVariable, "OMPI_COMM_WORLD_SIZE");
}

TEST(CommRankInfo, PmixWithoutAnySizeLeavesTheSizeUnknown) {
  RankInfo info = detect({{"PMIX_RANK", "7"}});
  EXPECT_EQ(info.source, RankSource::Pmix);
  EXPECT_EQ(info.rank, 7);
  EXPECT_FALSE(info.size.has_value());
}

TEST(CommRankInfo, SlurmBeforeWorldSize) {
  RankInfo info = detect({{"SLURM_PROCID", "3"},
                          {"SLURM_NTASKS", "8"},
                          {"RANK", "5"},
                          {"WORLD_SIZE", "6"}});
  EXPECT_EQ(info.source, RankSource::Slurm);
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.size, 8);
}

TEST(CommRankInfo, RankAndWorldSize) {
  RankInfo info = detect({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  EXPECT_EQ(info.source, RankSource::WorldSizeEnv);
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.size, 1);
}

TEST(CommRankInfo, MalformedValuesNameTheVariable) {
  EXPECT_EQ(errorOf({{"RANK", "abc"}, {"WORLD_SIZE", "2"}}),
            "RANK='abc' is not a non-negative integer");
  EXPECT_EQ(errorOf({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}),
            "RANK='-1' is not a non-negative integer");
  EXPECT_EQ(errorOf({{"RANK", ""}, {"WORLD_SIZE", "2"}}),
            "RANK='' is not a non-negative integer");
  EXPECT_EQ(errorOf({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "0"}}),
            "SLURM_NTASKS='0' is not a positive integer");
  EXPECT_EQ(
      errorOf({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2x"}}),
      "OMPI_COMM_WORLD_SIZE='2x' is not a positive integer");
  for (const char *bad : {" 1", "+1", "1 ", "1.0", "99999999999"})
    EXPECT_EQ(errorOf({{"PMIX_RANK", bad}}),
              std::string("PMIX_RANK='") + bad +
                  "' is not a non-negative integer");
}

TEST(CommRankInfo, RankMustBeBelowSize) {
  EXPECT_EQ(errorOf({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}}),
            "SLURM_PROCID=4 is not below SLURM_NTASKS=4");
  EXPECT_EQ(errorOf({{"PMIX_RANK", "2"}, {"WORLD_SIZE", "2"}}),
            "PMIX_RANK=2 is not below WORLD_SIZE=2");
}

TEST(CommRankInfo, MissingSizeVariable) {
  EXPECT_EQ(errorOf({{"OMPI_COMM_WORLD_RANK", "0"}}),
            "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not");
  EXPECT_EQ(errorOf({{"RANK", "0"}}), "RANK is set but WORLD_SIZE is not");
}

TEST(CommRankInfo, AgreementWithTheLibrary) {
  RankInfo info = detect({{"RANK", "1"}, {"WORLD_SIZE", "4"}});
  EXPECT_NO_THROW(checkRankAgrees(info, 1, 4, "MPI_COMM_WORLD"));
  try {
    checkRankAgrees(info, 2, 4, "MPI_COMM_WORLD");
    FAIL() << "a rank mismatch must throw";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "the launcher says rank 1 (RANK) but "
                           "MPI_COMM_WORLD says rank 2");
  }
  try {
    checkRankAgrees(info, 1, 3, "MPI_COMM_WORLD");
    FAIL() << "a size mismatch must throw";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "the launcher says 4 ranks (WORLD_SIZE) but "
                           "MPI_COMM_WORLD says 3");
  }
  // Nothing known, nothing compared.
  EXPECT_NO_THROW(checkRankAgrees(detect({}), 3, 8, "MPI_COMM_WORLD"));
  EXPECT_NO_THROW(
      checkRankAgrees(detect({{"PMIX_RANK", "3"}}), 3, 8, "MPI_COMM_WORLD"));
  EXPECT_THROW(
      checkRankAgrees(detect({{"PMIX_RANK", "2"}}), 3, 8, "MPI_COMM_WORLD"),
      Error);
}

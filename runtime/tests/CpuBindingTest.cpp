//===- CpuBindingTest.cpp - the warning about mpirun's core binding -------===//

#include "dsc/runtime/CpuBinding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace dsc::rt;
using ::testing::HasSubstr;

TEST(CpuBinding, OneRankBoundToOneOfTwoCoresIsWarned) {
  // `mpirun -np 1` on a 2-core machine: OpenMPI binds the rank to a core.
  std::optional<std::string> warning = cpuBindingWarning(0, 1, 2, 1);
  ASSERT_TRUE(warning);
  EXPECT_THAT(*warning, HasSubstr("rank 0 may run on 1 of the 2 CPUs"));
  EXPECT_THAT(*warning, HasSubstr("--bind-to none"));
  EXPECT_THAT(*warning, HasSubstr("--map-by slot:PE=2"));
}

TEST(CpuBinding, ARankWithItsShareIsNotWarned) {
  EXPECT_FALSE(cpuBindingWarning(0, 2, 2, 1));   // --bind-to none
  EXPECT_FALSE(cpuBindingWarning(0, 8, 16, 2));  // 16 cores, 2 ranks, 8 each
  EXPECT_FALSE(cpuBindingWarning(0, 16, 16, 2)); // unbound
}

TEST(CpuBinding, AsManyRanksAsCoresIsNotWarned) {
  // One core per rank is the rank's share: binding costs nothing.
  EXPECT_FALSE(cpuBindingWarning(1, 1, 2, 2));
  EXPECT_FALSE(cpuBindingWarning(3, 1, 4, 4));
  EXPECT_FALSE(cpuBindingWarning(0, 1, 2, 4)); // oversubscribed
}

TEST(CpuBinding, FewerCoresThanTheShareIsWarned) {
  std::optional<std::string> warning = cpuBindingWarning(2, 2, 16, 2);
  ASSERT_TRUE(warning);
  EXPECT_THAT(*warning, HasSubstr("rank 2 may run on 2 of the 16 CPUs"));
  EXPECT_THAT(*warning, HasSubstr("its 8 cores"));
}

TEST(CpuBinding, UnknownCountsAreNotWarned) {
  EXPECT_FALSE(cpuBindingWarning(0, 0, 2, 1));
  EXPECT_FALSE(cpuBindingWarning(0, 1, 0, 1));
  EXPECT_FALSE(cpuBindingWarning(0, 1, 2, 0));
}

TEST(CpuBinding, ThisProcessHasCpus) {
  EXPECT_GE(allowedCpus(), 1);
  EXPECT_GE(onlineCpus(), allowedCpus());
}

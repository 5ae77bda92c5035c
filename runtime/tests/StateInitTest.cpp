//===- StateInitTest.cpp - filling the states a rewrite added --------------===//
//
// Experts upcycled from a dense tensor repeat it along their leading
// dimension, and drawn states follow the documented generator, on every
// rank's slice of a partitioned state alike; a weights file without the
// dense tensor is an error that names it.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/ArtifactLibrary.h"
#include "dsc/runtime/Float16.h"
#include "dsc/runtime/MemoryPool.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/SafeTensors.h"
#include "dsc/runtime/Xxh64.h"

#include "ErrorOf.h"
#include "ScratchDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace dsc::rt;
using dsc::rt::test::ScratchDir;
using test::errorOf;

namespace {

/// 3 experts of a dense [2, 2] weight, whole or over 2 ranks (12 elements:
/// 6 per rank), and a drawn gate [3, 2].
struct Experts {
  int64_t stacked[3] = {3, 2, 2};
  int64_t shard[1] = {6};
  int64_t gateShape[2] = {3, 2};
  StateDesc whole{{"experts.w", ElementType::F32, 3, stacked},
                  StateRole::Parameter,
                  0,
                  nullptr,
                  0,
                  "w",
                  0.0,
                  0};
  StateDesc partitioned{{"experts.w", ElementType::F32, 1, shard},
                        StateRole::Parameter,
                        3,
                        stacked,
                        0,
                        "w",
                        0.0,
                        0};
  StateDesc gate{{"gate.weight", ElementType::F32, 2, gateShape},
                 StateRole::Parameter,
                 0,
                 nullptr,
                 0,
                 nullptr,
                 0.5,
                 7};
};

TEST(StateInit, UpcycledExpertsRepeatTheDenseTensor) {
  ScratchDir dir;
  const float dense[4] = {1, 2, 3, 4};
  writeSafeTensors(dir.file("w.safetensors"), {{"w", DType::F32, {2, 2}, dense}});
  auto weights = SafeTensorsFile::open(dir.file("w.safetensors"));
  Experts e;
  std::vector<float> all(12, -1);
  readState(e.whole, weights, 0, 1, all.data());
  EXPECT_EQ(all, (std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4}));
  // Rank 1 of 2 holds elements 6..11 of the whole.
  std::vector<float> slice(6, -1);
  readState(e.partitioned, weights, 1, 1, slice.data());
  EXPECT_EQ(slice, (std::vector<float>{3, 4, 1, 2, 3, 4}));
}

TEST(StateInit, AStateOfItsSourcesShapeIsItsCopy) {
  // Residual MoE: the dense block's tensors under their new names.
  ScratchDir dir;
  const float dense[4] = {1, 2, 3, 4};
  writeSafeTensors(dir.file("w.safetensors"), {{"w", DType::F32, {2, 2}, dense}});
  auto weights = SafeTensorsFile::open(dir.file("w.safetensors"));
  int64_t shape[2] = {2, 2};
  StateDesc moved{{"mlp.w", ElementType::F32, 2, shape}, StateRole::Parameter,
                  0, nullptr, 0, "w", 0.0, 0};
  std::vector<float> copy(4, -1);
  readState(moved, weights, 0, 1, copy.data());
  EXPECT_EQ(copy, (std::vector<float>{1, 2, 3, 4}));
  int64_t wrong[2] = {2, 3};
  moved.tensor.shape = wrong;
  std::vector<float> six(6);
  EXPECT_THAT(errorOf([&] { readState(moved, weights, 0, 1, six.data()); }),
              testing::HasSubstr("tensor 'w' is F32 [2, 2], but the artifact "
                                 "expects F32 [2, 3]"));
}

TEST(StateInit, ForEachStateAcceptsAFileWithoutTheExperts) {
  ScratchDir dir;
  const float dense[4] = {1, 2, 3, 4};
  writeSafeTensors(dir.file("w.safetensors"), {{"w", DType::F32, {2, 2}, dense}});
  Experts e;
  StateDesc states[2] = {e.whole, e.gate};
  ArtifactInfo info{};
  info.worldSize = 1;
  info.expertParallelSize = 1;
  info.numStates = 2;
  info.states = states;
  MemoryPool pool("states");
  std::vector<void *> buffers =
      loadStates(info, SafeTensorsFile::open(dir.file("w.safetensors")), pool);
  ASSERT_EQ(buffers.size(), 2u);
  EXPECT_EQ(static_cast<float *>(buffers[0])[5], 2.0f);
  EXPECT_EQ(static_cast<float *>(buffers[1])[3],
            float(initUniformValue("gate.weight", 7, 3, 0.5)));
}

TEST(StateInit, TheDenseTensorMustBeThere) {
  ScratchDir dir;
  const float other[4] = {};
  writeSafeTensors(dir.file("w.safetensors"), {{"v", DType::F32, {2, 2}, other}});
  Experts e;
  std::vector<float> all(12);
  EXPECT_EQ(errorOf([&] {
              readState(e.whole,
                        SafeTensorsFile::open(dir.file("w.safetensors")), 0, 1,
                        all.data());
            }),
            dir.file("w.safetensors") +
                ": no tensor 'w', which state 'experts.w' repeats (it is the "
                "dense tensor the experts, or a residual MoE's dense block, "
                "start from)");
  writeSafeTensors(dir.file("w.safetensors"), {{"w", DType::F32, {4}, other}});
  EXPECT_EQ(errorOf([&] {
              readState(e.whole,
                        SafeTensorsFile::open(dir.file("w.safetensors")), 0, 1,
                        all.data());
            }),
            dir.file("w.safetensors") +
                ": tensor 'w' is F32 [4], but the artifact expects F32 [2, 2]");
}

TEST(StateInit, DrawsFollowTheDocumentedGenerator) {
  // The generator written out independently: XXH64 of the name, plus the
  // Weyl step per element, SplitMix64's finaliser, the top 24 bits.
  const std::string name = "gate.weight";
  for (int64_t i : {0, 1, 5, 1000}) {
    uint64_t x = Xxh64::of(name.data(), name.size(), 7);
    x += 0x9E3779B97F4A7C15ull * uint64_t(i + 1);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    double expected = (double(x >> 40) * 0x1p-23 - 1.0) * 0.5;
    EXPECT_EQ(initUniformValue(name, 7, i, 0.5), expected) << i;
  }
  // Within the bound, roughly centred, and keyed by the name and the seed.
  double sum = 0;
  for (int64_t i = 0; i < 10000; ++i) {
    double v = initUniformValue(name, 7, i, 0.5);
    ASSERT_GE(v, -0.5);
    ASSERT_LT(v, 0.5);
    sum += v;
  }
  // Mean of 10^4 draws of U(-0.5, 0.5): standard deviation 0.0029.
  EXPECT_LT(std::fabs(sum / 10000), 0.015);
  EXPECT_NE(initUniformValue(name, 7, 0, 0.5), initUniformValue(name, 8, 0, 0.5));
  EXPECT_NE(initUniformValue(name, 7, 0, 0.5),
            initUniformValue("gate.bias", 7, 0, 0.5));
}

TEST(StateInit, AMasterDrawsItsParametersValues) {
  // Mixed precision: the bf16 parameter is its fp32 master rounded.
  ScratchDir dir;
  writeSafeTensors(dir.file("w.safetensors"), {});
  auto weights = SafeTensorsFile::open(dir.file("w.safetensors"));
  int64_t shape[1] = {5};
  StateDesc param{{"g", ElementType::BF16, 1, shape},
                  StateRole::Parameter,
                  0,
                  nullptr,
                  0,
                  nullptr,
                  0.25,
                  3};
  StateDesc master{{"g.master", ElementType::F32, 1, shape},
                   StateRole::Master,
                   0,
                   nullptr,
                   0,
                   nullptr,
                   0.25,
                   3};
  std::vector<uint16_t> narrow(5);
  std::vector<float> wide(5);
  readState(param, weights, 0, 1, narrow.data());
  readState(master, weights, 0, 1, wide.data());
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(wide[size_t(i)], float(initUniformValue("g", 3, i, 0.25)));
    EXPECT_EQ(narrow[size_t(i)], floatToBf16(wide[size_t(i)]));
  }
}

TEST(StateInit, EveryRankDrawsItsSliceOfTheSameTensor) {
  ScratchDir dir;
  writeSafeTensors(dir.file("w.safetensors"), {});
  auto weights = SafeTensorsFile::open(dir.file("w.safetensors"));
  int64_t shape[2] = {3, 2}, shard[1] = {4};
  StateDesc whole{{"g", ElementType::F32, 2, shape},
                  StateRole::Parameter,
                  0,
                  nullptr,
                  0,
                  nullptr,
                  0.25,
                  3};
  StateDesc part{{"g", ElementType::F32, 1, shard},
                 StateRole::Parameter,
                 2,
                 shape,
                 0,
                 nullptr,
                 0.25,
                 3};
  std::vector<float> all(6), r0(4), r1(4);
  readState(whole, weights, 0, 1, all.data());
  readState(part, weights, 0, 1, r0.data());
  readState(part, weights, 1, 1, r1.data());
  EXPECT_EQ(std::vector<float>(all.begin(), all.begin() + 4), r0);
  EXPECT_EQ(std::vector<float>(all.begin() + 4, all.end()),
            std::vector<float>(r1.begin(), r1.begin() + 2));
  // The last rank's tail is padding: zero.
  EXPECT_EQ(r1[2], 0.0f);
  EXPECT_EQ(r1[3], 0.0f);
}

/// A [4, 3] tensor partitioned over the Expert group of expert-parallel
/// size 2 in a job of 4 ranks: shards of 6 elements (two rows, i.e. two
/// experts); ranks 0 and 2 hold rows 0-1, ranks 1 and 3 rows 2-3.
struct ExpertRows {
  int64_t whole[2] = {4, 3};
  int64_t shard[1] = {6};
  StateDesc state{{"experts.w", ElementType::F32, 1, shard},
                  StateRole::Parameter,
                  2,
                  whole,
                  int32_t(CommGroup::Expert),
                  nullptr,
                  0.0,
                  0};
};

/// ExpertRows' whole tensor, element i = i + 0.5, in a weights file in
/// `dir`.
std::vector<float> writeExpertRows(const ScratchDir &dir) {
  std::vector<float> whole(12);
  for (int i = 0; i < 12; ++i)
    whole[size_t(i)] = float(i) + 0.5f;
  writeSafeTensors(dir.file("w.safetensors"),
                   {{"experts.w", DType::F32, {4, 3}, whole.data()}});
  return whole;
}

TEST(StateInit, ExpertDataPartitionsCutTheRanksExperts) {
  // ZeRO's partition of the rank's experts over its expert-data group: 8
  // ranks, P = 2 (rows 0-1 or 2-3: 6 elements), D = 4, shards of 2, the
  // last index of each group holding none of them (padding only).
  ExpertRows e;
  int64_t shard[1] = {2};
  e.state.tensor.shape = shard;
  e.state.partitionGroup = int32_t(CommGroup::ExpertData);
  const std::vector<int64_t> begins = {0, 6, 2, 8, 4, 10, 6, 12};
  const std::vector<int64_t> counts = {2, 2, 2, 2, 2, 2, 0, 0};
  for (int r = 0; r < 8; ++r) {
    StateSlice slice = stateSlice(e.state, r, 2);
    EXPECT_EQ(slice.begin, begins[size_t(r)]) << r;
    EXPECT_EQ(slice.count, counts[size_t(r)]) << r;
  }
  // From a weights file holding the whole tensor: rank 3 (experts 2-3,
  // index 1 of its expert-data group) holds elements 8 and 9.
  ScratchDir dir;
  writeExpertRows(dir);
  SafeTensorsFile weights = SafeTensorsFile::open(dir.file("w.safetensors"));
  std::vector<float> mine(2, -1.0f);
  readState(e.state, weights, 3, 2, mine.data());
  EXPECT_EQ(mine, (std::vector<float>{8.5f, 9.5f}));
  readState(e.state, weights, 7, 2, mine.data());
  EXPECT_EQ(mine, (std::vector<float>{0.0f, 0.0f}));
}

/// Experts under tensor parallelism (DeepSpeed-TED): experts.b, [4, 4] (4
/// experts of 4 hidden features, a column-parallel bias) holding i + 0.5 at
/// element i, one block per expert; at W = 4, P = 2, T = 2 rank r (t = r %
/// 2, expert index e = (r / 2) % 2) holds features 2t, 2t + 1 of experts 2e
/// and 2e + 1: `slices[r]`.
struct TedExperts {
  int64_t whole[2] = {4, 4};
  const std::vector<std::vector<float>> slices = {
      {0.5f, 1.5f, 4.5f, 5.5f}, {2.5f, 3.5f, 6.5f, 7.5f},
      {8.5f, 9.5f, 12.5f, 13.5f}, {10.5f, 11.5f, 14.5f, 15.5f}};
  ScratchDir dir;

  /// `shape` of the rank's part, partitioned over `group`.
  StateDesc state(const int64_t *shape, int32_t rank, CommGroup group) {
    StateDesc desc{{"experts.b", ElementType::F32, rank, shape},
                   StateRole::Parameter,
                   2,
                   whole,
                   int32_t(group),
                   nullptr,
                   0.0,
                   0};
    desc.partitionBlocks = 4;
    return desc;
  }
  SafeTensorsFile weights() {
    std::vector<float> values(16);
    for (int i = 0; i < 16; ++i)
      values[size_t(i)] = float(i) + 0.5f;
    writeSafeTensors(dir.file("w.safetensors"),
                     {{"experts.b", DType::F32, {4, 4}, values.data()}});
    return SafeTensorsFile::open(dir.file("w.safetensors"));
  }
};

TEST(StateInit, TedExpertSlicesHoldTheirExpertsTensorSlices) {
  TedExperts ted;
  int64_t local[2] = {2, 2};
  StateDesc state = ted.state(local, 2, CommGroup::Expert);
  SafeTensorsFile weights = ted.weights();
  for (int r = 0; r < 4; ++r) {
    StateSlice slice = stateSlice(state, r, 2, 2);
    EXPECT_EQ(slice.total(), 4) << r;
    std::vector<float> mine(4, -1.0f);
    readState(state, weights, r, 2, mine.data(), 2);
    EXPECT_EQ(mine, ted.slices[size_t(r)]) << r;
  }
}

TEST(StateInit, TedExpertShardsHoldRunsOfTheirSlice) {
  // The same experts at W = 8, partitioned by ZeRO over expert-data groups
  // of D = 8 / (2 * 2) = 2: each rank's slice of 4 elements (2 blocks of 2)
  // in shards of 2, here one block each. Rank r: t = r % 2, e = (r / 2) %
  // 2, expert-data index d = r / 4, holding block d of slices[2e + t].
  TedExperts ted;
  int64_t shard[1] = {2};
  StateDesc state = ted.state(shard, 1, CommGroup::ExpertData);
  SafeTensorsFile weights = ted.weights();
  for (int r = 0; r < 8; ++r) {
    const std::vector<float> &slice = ted.slices[size_t(r % 4)];
    const size_t d = size_t(r / 4);
    std::vector<float> mine(2, -1.0f);
    readState(state, weights, r, 2, mine.data(), 2);
    EXPECT_EQ(mine, (std::vector<float>{slice[2 * d], slice[2 * d + 1]}))
        << r;
    EXPECT_EQ(stateSlice(state, r, 2, 2).first, int64_t(2 * d)) << r;
  }
}

TEST(StateInit, ExpertPartitionedStatesHoldTheirRanksExperts) {
  ExpertRows e;
  const std::vector<int64_t> begins = {0, 6, 0, 6};
  for (int r = 0; r < 4; ++r) {
    StateSlice slice = stateSlice(e.state, r, 2);
    EXPECT_EQ(slice.begin, begins[size_t(r)]) << r;
    EXPECT_EQ(slice.count, 6) << r;
  }
  // ZeRO's partition of the same tensor over the 4 ranks differs: 3 each.
  StateDesc zero = e.state;
  int64_t zeroShard[1] = {3};
  zero.tensor.shape = zeroShard;
  zero.partitionGroup = int32_t(CommGroup::World);
  EXPECT_EQ(stateSlice(zero, 1, 2).begin, 3);
  EXPECT_EQ(stateSlice(zero, 1, 2).count, 3);

  // From a weights file holding the whole tensor.
  ScratchDir dir;
  std::vector<float> whole = writeExpertRows(dir);
  auto weights = SafeTensorsFile::open(dir.file("w.safetensors"));
  for (int r = 0; r < 4; ++r) {
    std::vector<float> mine(6, -1);
    readState(e.state, weights, r, 2, mine.data());
    auto rows = whole.begin() + (r % 2) * 6;
    EXPECT_EQ(mine, std::vector<float>(rows, rows + 6)) << r;
  }
  // With P = 4 and shards of 3 (one row), rank 2 holds row 2.
  int64_t rowShard[1] = {3};
  StateDesc perRow = e.state;
  perRow.tensor.shape = rowShard;
  std::vector<float> row(3, -1);
  readState(perRow, weights, 2, 4, row.data());
  EXPECT_EQ(row, (std::vector<float>{6.5f, 7.5f, 8.5f}));
}

TEST(StateInit, TensorParallelSlicesTakeTheirColumnsOfEachBlock) {
  // A row-parallel weight [2, 6] over T = 2 with 2 blocks (one per row):
  // the whole viewed as [2, 2, 3], rank r holds [:, r % 2, :], on ranks
  // r and r + 2 alike (T = 2 of W = 4).
  int64_t whole[2] = {2, 6};
  int64_t local[2] = {2, 3};
  StateDesc state{{"proj.w", ElementType::F32, 2, local},
                  StateRole::Parameter,
                  2,
                  whole,
                  int32_t(CommGroup::Tensor),
                  nullptr,
                  0.0,
                  0,
                  MemoryTier::Device,
                  2};
  StateSlice slice = stateSlice(state, 3, 1, 2);
  EXPECT_EQ(slice.begin, 3);
  EXPECT_EQ(slice.count, 3);
  EXPECT_EQ(slice.blocks, 2);
  EXPECT_EQ(slice.stride, 6);
  EXPECT_EQ(slice.total(), 6);
  EXPECT_EQ(slice.whole(4), 10);

  ScratchDir dir;
  std::vector<float> values(12);
  for (int i = 0; i < 12; ++i)
    values[size_t(i)] = float(i);
  writeSafeTensors(dir.file("w.safetensors"),
                   {{"proj.w", DType::F32, {2, 6}, values.data()}});
  auto weights = SafeTensorsFile::open(dir.file("w.safetensors"));
  const std::vector<std::vector<float>> expected = {{0, 1, 2, 6, 7, 8},
                                                    {3, 4, 5, 9, 10, 11}};
  for (int r = 0; r < 4; ++r) {
    std::vector<float> mine(6, -1);
    readState(state, weights, r, 1, mine.data(), 2);
    EXPECT_EQ(mine, expected[size_t(r % 2)]) << r;
  }
  // A bf16 slice of the fp32 tensor is rounded block by block.
  state.tensor.type = ElementType::BF16;
  std::vector<uint16_t> narrow(6);
  readState(state, weights, 1, 1, narrow.data(), 2);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_EQ(bf16ToFloat(narrow[i]), expected[1][i]) << i;
}

TEST(StateInit, ExpertPartitionedStatesFillTheirSliceOfTheRule) {
  ScratchDir dir;
  const float dense[3] = {1, 2, 3};
  writeSafeTensors(dir.file("w.safetensors"), {{"w", DType::F32, {3}, dense}});
  auto weights = SafeTensorsFile::open(dir.file("w.safetensors"));
  // Upcycled: every row (expert) the dense tensor, on every rank.
  ExpertRows e;
  e.state.initFrom = "w";
  for (int r = 0; r < 4; ++r) {
    std::vector<float> mine(6, -1);
    readState(e.state, weights, r, 2, mine.data());
    EXPECT_EQ(mine, (std::vector<float>{1, 2, 3, 1, 2, 3})) << r;
  }
  // Drawn: element i of the whole tensor is draw i, whichever rank holds
  // it; ranks with the same index in the group draw the same values.
  ExpertRows d;
  d.state.initUniform = 0.5;
  d.state.initSeed = 11;
  for (int r = 0; r < 4; ++r) {
    std::vector<float> mine(6, -1);
    readState(d.state, weights, r, 2, mine.data());
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(mine[size_t(i)],
                float(initUniformValue("experts.w", 11, (r % 2) * 6 + i, 0.5)))
          << r << " " << i;
  }
}

} // namespace

namespace {
/// A [5, 6] row-parallel weight (5 blocks) sliced over a tensor group of
/// T = 2 (rank r % 2 holds columns [3t, 3t + 3) of every row: 15 elements)
/// and partitioned by ZeRO over its data group of D = 3 (6 ranks): shards
/// of 5, which start and end inside rows.
struct SliceShards {
  int64_t shape[2] = {5, 6}, shard[1] = {5};
  StateDesc state{{"proj.w", ElementType::F32, 1, shard},
                  StateRole::Parameter,
                  2,
                  shape,
                  int32_t(CommGroup::Data),
                  nullptr,
                  0.5,
                  7,
                  MemoryTier::Device,
                  5};
  /// The whole tensor's indices that rank `rank` holds, in order.
  static std::vector<int64_t> expected(int rank) {
    int t = rank % 2, d = rank / 2;
    std::vector<int64_t> slice;
    for (int64_t row = 0; row < 5; ++row)
      for (int64_t c = 0; c < 3; ++c)
        slice.push_back(row * 6 + t * 3 + c);
    return std::vector<int64_t>(slice.begin() + 5 * d,
                                slice.begin() + 5 * d + 5);
  }
};
} // namespace

TEST(StateInit, DataGroupShardOfATensorSliceRunsAcrossItsBlocks) {
  SliceShards s;
  ScratchDir dir;
  std::vector<float> whole(30);
  for (size_t i = 0; i < whole.size(); ++i)
    whole[i] = float(i);
  writeSafeTensors(dir.file("w.safetensors"),
                   {{"proj.w", DType::F32, {5, 6}, whole.data()}});
  auto weights = SafeTensorsFile::open(dir.file("w.safetensors"));
  for (int rank = 0; rank < 6; ++rank) {
    std::vector<float> got(5, -1.0f);
    readState(s.state, weights, rank, 1, got.data(), 2);
    std::vector<float> want;
    for (int64_t i : SliceShards::expected(rank))
      want.push_back(float(i));
    EXPECT_EQ(got, want) << "rank " << rank;
    StateSlice slice = stateSlice(s.state, rank, 1, 2);
    ASSERT_EQ(slice.total(), 5);
    for (int64_t i = 0; i < 5; ++i)
      EXPECT_EQ(slice.whole(i), SliceShards::expected(rank)[size_t(i)]);
  }
}

TEST(StateInit, DataGroupShardOfATensorSliceDrawsTheWholeTensorsValues) {
  SliceShards s;
  ScratchDir dir;
  writeSafeTensors(dir.file("w.safetensors"), {});
  auto weights = SafeTensorsFile::open(dir.file("w.safetensors"));
  for (int rank : {1, 4}) {
    std::vector<float> got(5);
    readState(s.state, weights, rank, 1, got.data(), 2);
    for (int64_t i = 0; i < 5; ++i)
      EXPECT_EQ(got[size_t(i)],
                float(initUniformValue("proj.w", 7,
                                       SliceShards::expected(rank)[size_t(i)],
                                       0.5)));
  }
}

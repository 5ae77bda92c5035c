// MpiCommunicator over several ranks (run by mpirun -np N, N >= 2): every
// collective's values, in and out of place, for every dtype; the byte
// counters; sequence numbers; the launcher's rank.
//
// Each rank's input is a known function of (rank, index), so every rank can
// work out what the others sent and hence the expected result.

#include "dsc/runtime/Error.h"
#include "dsc/runtime/MpiComm.h"
#include "dsc/runtime/RankInfo.h"

#include "ErrorOf.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace dsc::rt;
using dsc::rt::test::errorOf;

namespace {

constexpr CommDType kAllDTypes[] = {CommDType::F32, CommDType::F64,
                                    CommDType::I32, CommDType::I64,
                                    CommDType::BF16, CommDType::F16};

/// Small integers, positive and negative: exact in every dtype (bf16 holds
/// integers up to 256 exactly, f16 up to 2048) and in every sum of a few
/// ranks.
double input(int rank, std::size_t index) {
  return double(int(index % 5) - 2) * (rank + 1) + double(index % 7);
}

std::uint16_t toBf16(double value) {
  float f = float(value); // exact in bf16: truncation is exact
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return std::uint16_t(bits >> 16);
}

double fromBf16(std::uint16_t value) {
  std::uint32_t bits = std::uint32_t(value) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// A buffer of `values` in `dtype`.
std::vector<unsigned char> encode(const std::vector<double> &values,
                                  CommDType dtype) {
  std::vector<unsigned char> bytes(values.size() * byteSize(dtype));
  for (std::size_t i = 0; i < values.size(); ++i) {
    unsigned char *at = bytes.data() + i * byteSize(dtype);
    auto put = [at](auto value) { std::memcpy(at, &value, sizeof value); };
    switch (dtype) {
    case CommDType::F32:
      put(float(values[i]));
      break;
    case CommDType::F64:
      put(values[i]);
      break;
    case CommDType::I32:
      put(std::int32_t(values[i]));
      break;
    case CommDType::I64:
      put(std::int64_t(values[i]));
      break;
    case CommDType::BF16:
      put(toBf16(values[i]));
      break;
    case CommDType::F16:
      put(_Float16(values[i]));
      break;
    }
  }
  return bytes;
}

/// `count` values of `dtype` at `bytes`.
std::vector<double> decode(const unsigned char *bytes, std::size_t count,
                           CommDType dtype) {
  std::vector<double> values(count);
  for (std::size_t i = 0; i < count; ++i) {
    const unsigned char *at = bytes + i * byteSize(dtype);
    auto get = [at](auto value) {
      std::memcpy(&value, at, sizeof value);
      return value;
    };
    switch (dtype) {
    case CommDType::F32:
      values[i] = get(float());
      break;
    case CommDType::F64:
      values[i] = get(double());
      break;
    case CommDType::I32:
      values[i] = get(std::int32_t());
      break;
    case CommDType::I64:
      values[i] = double(get(std::int64_t()));
      break;
    case CommDType::BF16:
      values[i] = fromBf16(get(std::uint16_t()));
      break;
    case CommDType::F16:
      values[i] = double(get(_Float16()));
      break;
    }
  }
  return values;
}

/// input(rank, first), ..., input(rank, first + count - 1).
std::vector<double> inputs(int rank, std::size_t count, std::size_t first = 0) {
  std::vector<double> values(count);
  for (std::size_t i = 0; i < count; ++i)
    values[i] = input(rank, first + i);
  return values;
}

/// Element-wise op over every rank's inputs(rank, count, first).
std::vector<double> reduced(int size, std::size_t count, ReduceOp op,
                            std::size_t first = 0) {
  std::vector<double> result = inputs(0, count, first);
  for (int rank = 1; rank < size; ++rank)
    for (std::size_t i = 0; i < count; ++i) {
      double value = input(rank, first + i);
      result[i] =
          op == ReduceOp::Sum ? result[i] + value : std::max(result[i], value);
    }
  return result;
}

/// What allToAll delivers to `rank`: block j is block `rank` of rank j's
/// inputs(j, size * count).
std::vector<double> exchanged(int rank, int size, std::size_t count) {
  std::vector<double> result;
  for (int from = 0; from < size; ++from)
    for (double value : inputs(from, count, std::size_t(rank) * count))
      result.push_back(value);
  return result;
}

constexpr std::size_t kCount = 13; // not a multiple of the rank count

std::size_t ranks(const Communicator &comm) { return std::size_t(comm.size()); }

} // namespace

TEST(CommMpi, RankAgreesWithTheLauncher) {
  MpiCommunicator comm;
  int worldRank = -1, worldSize = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  EXPECT_EQ(comm.rank(), worldRank);
  EXPECT_EQ(comm.size(), worldSize);
  RankInfo info = detectRankFromEnvironment();
  EXPECT_EQ(info.source, RankSource::OpenMpi);
  EXPECT_EQ(info.rank, worldRank);
  EXPECT_EQ(info.size, worldSize);
}

TEST(CommMpi, AllReduceEveryDTypeAndOp) {
  MpiCommunicator comm;
  for (CommDType dtype : kAllDTypes)
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
      SCOPED_TRACE(std::string(name(dtype)) + " " + name(op));
      std::vector<double> expected = reduced(comm.size(), kCount, op);

      std::vector<unsigned char> send =
          encode(inputs(comm.rank(), kCount), dtype);
      std::vector<unsigned char> recv(send.size());
      comm.allReduce(send.data(), recv.data(), kCount, dtype, op);
      EXPECT_EQ(decode(recv.data(), kCount, dtype), expected);
      EXPECT_EQ(decode(send.data(), kCount, dtype),
                inputs(comm.rank(), kCount));

      // In place.
      comm.allReduce(send.data(), send.data(), kCount, dtype, op);
      EXPECT_EQ(decode(send.data(), kCount, dtype), expected);
    }
}

TEST(CommMpi, AllReduceWithPartlyOverlappingBuffers) {
  MpiCommunicator comm;
  const CommDType dtype = CommDType::F64;
  std::vector<unsigned char> buffer =
      encode(inputs(comm.rank(), kCount + 1), dtype);
  // recv starts one element after send: send must be read before it is
  // overwritten.
  comm.allReduce(buffer.data(), buffer.data() + byteSize(dtype), kCount, dtype,
                 ReduceOp::Sum);
  EXPECT_EQ(decode(buffer.data() + byteSize(dtype), kCount, dtype),
            reduced(comm.size(), kCount, ReduceOp::Sum));
}

TEST(CommMpi, AllGather) {
  MpiCommunicator comm;
  const std::size_t n = ranks(comm);
  for (CommDType dtype : kAllDTypes) {
    SCOPED_TRACE(name(dtype));
    std::vector<double> expected;
    for (int rank = 0; rank < comm.size(); ++rank)
      for (double value : inputs(rank, kCount))
        expected.push_back(value);
    const std::size_t blockBytes = kCount * byteSize(dtype);

    std::vector<unsigned char> send =
        encode(inputs(comm.rank(), kCount), dtype);
    std::vector<unsigned char> recv(n * blockBytes);
    comm.allGather(send.data(), recv.data(), kCount, dtype);
    EXPECT_EQ(decode(recv.data(), n * kCount, dtype), expected);

    // In place, MPI's layout: this rank's block already in its slot.
    std::vector<unsigned char> inPlace(n * blockBytes);
    unsigned char *ownBlock =
        inPlace.data() + std::size_t(comm.rank()) * blockBytes;
    std::memcpy(ownBlock, send.data(), blockBytes);
    comm.allGather(ownBlock, inPlace.data(), kCount, dtype);
    EXPECT_EQ(decode(inPlace.data(), n * kCount, dtype), expected);

    // Aliased at the start (not in place except on rank 0).
    std::vector<unsigned char> aliased(n * blockBytes);
    std::memcpy(aliased.data(), send.data(), blockBytes);
    comm.allGather(aliased.data(), aliased.data(), kCount, dtype);
    EXPECT_EQ(decode(aliased.data(), n * kCount, dtype), expected);
  }
}

TEST(CommMpi, ReduceScatter) {
  MpiCommunicator comm;
  const std::size_t n = ranks(comm);
  const std::size_t first = std::size_t(comm.rank()) * kCount;
  for (CommDType dtype : kAllDTypes)
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
      SCOPED_TRACE(std::string(name(dtype)) + " " + name(op));
      std::vector<double> expected = reduced(comm.size(), kCount, op, first);

      std::vector<unsigned char> send =
          encode(inputs(comm.rank(), n * kCount), dtype);
      std::vector<unsigned char> recv(kCount * byteSize(dtype));
      comm.reduceScatter(send.data(), recv.data(), kCount, dtype, op);
      EXPECT_EQ(decode(recv.data(), kCount, dtype), expected);

      // In place: the result lands at the start of the input.
      comm.reduceScatter(send.data(), send.data(), kCount, dtype, op);
      EXPECT_EQ(decode(send.data(), kCount, dtype), expected);
    }
}

TEST(CommMpi, BroadcastFromEveryRoot) {
  MpiCommunicator comm;
  for (CommDType dtype : kAllDTypes)
    for (int root = 0; root < comm.size(); ++root) {
      SCOPED_TRACE(std::string(name(dtype)) + " root " + std::to_string(root));
      std::vector<double> expected = inputs(root, kCount);
      std::vector<unsigned char> mine =
          encode(inputs(comm.rank(), kCount), dtype);

      std::vector<unsigned char> recv(mine.size());
      comm.broadcast(comm.rank() == root ? mine.data() : nullptr, recv.data(),
                     kCount, dtype, root);
      EXPECT_EQ(decode(recv.data(), kCount, dtype), expected);

      comm.broadcast(mine.data(), mine.data(), kCount, dtype, root);
      EXPECT_EQ(decode(mine.data(), kCount, dtype), expected);
    }
}

TEST(CommMpi, AllToAll) {
  MpiCommunicator comm;
  const std::size_t n = ranks(comm);
  for (CommDType dtype : kAllDTypes) {
    SCOPED_TRACE(name(dtype));
    std::vector<double> expected = exchanged(comm.rank(), comm.size(), kCount);
    std::vector<unsigned char> send =
        encode(inputs(comm.rank(), n * kCount), dtype);
    std::vector<unsigned char> recv(send.size());
    comm.allToAll(send.data(), recv.data(), kCount, dtype);
    EXPECT_EQ(decode(recv.data(), n * kCount, dtype), expected);

    comm.allToAll(send.data(), send.data(), kCount, dtype);
    EXPECT_EQ(decode(send.data(), n * kCount, dtype), expected);
  }
}

TEST(CommMpi, BarrierAndEmptyCollectives) {
  MpiCommunicator comm;
  comm.barrier();
  comm.allReduce(nullptr, nullptr, 0, CommDType::F32, ReduceOp::Sum);
  comm.allGather(nullptr, nullptr, 0, CommDType::I64);
  comm.allToAll(nullptr, nullptr, 0, CommDType::BF16);
  EXPECT_EQ(comm.lastSequenceNumber(), 4u);
}

TEST(CommMpi, SequenceNumbersAgreeOnEveryRank) {
  MpiCommunicator comm;
  std::int64_t value = 1;
  for (int i = 0; i < 5; ++i)
    comm.allReduce(&value, &value, 1, CommDType::I64, ReduceOp::Max);
  comm.barrier();
  std::int64_t before = std::int64_t(comm.lastSequenceNumber());
  EXPECT_EQ(before, 6);
  std::vector<std::int64_t> everyRank(ranks(comm));
  comm.allGather(&before, everyRank.data(), 1, CommDType::I64);
  for (std::int64_t sequence : everyRank)
    EXPECT_EQ(sequence, before);
  EXPECT_EQ(comm.lastSequenceNumber(), 7u);
}

TEST(CommMpi, BadArgumentsThrowOnEveryRankAndIssueNothing) {
  MpiCommunicator comm;
  float buffer[2] = {};
  EXPECT_THROW(comm.broadcast(buffer, buffer, 2, CommDType::F32, comm.size()),
               Error);
  EXPECT_THROW(
      comm.allReduce(buffer, nullptr, 2, CommDType::F32, ReduceOp::Sum), Error);
  EXPECT_EQ(comm.lastSequenceNumber(), 0u);
  comm.barrier(); // the ranks are still in step
}

TEST(CommMpi, ByteCountersFollowTheFormulas) {
  MpiCommunicator comm;
  const std::uint64_t n = ranks(comm);
  const int rank = comm.rank();
  std::vector<unsigned char> big(n * 4096 * 8);
  unsigned char *b = big.data();
  comm.allReduce(b, b, 1000, CommDType::F32, ReduceOp::Sum);    // 4000 bytes
  comm.allReduce(b, b, 7, CommDType::F64, ReduceOp::Max);       // 56 bytes
  comm.allGather(b, big.data() + rank * 20, 5, CommDType::I32); // 20 bytes
  comm.reduceScatter(b, b, 6, CommDType::I64, ReduceOp::Sum);   // 48 bytes
  comm.broadcast(b, b, 9, CommDType::BF16, 0);                  // 18 bytes
  comm.broadcast(b, b, 9, CommDType::BF16, comm.size() - 1);    // 18 bytes
  comm.barrier();
  comm.allToAll(b, b, 3, CommDType::F32); // 12 bytes

  // The formulas of CommStats.h, written out again.
  auto lastOfRing = [&](int root) {
    return rank == (root + comm.size() - 1) % comm.size();
  };
  const CommStats &stats = comm.stats();
  EXPECT_EQ(stats[CollectiveKind::AllReduce].calls, 2u);
  EXPECT_EQ(stats[CollectiveKind::AllReduce].bytesSent,
            2 * (n - 1) * 4000 / n + 2 * (n - 1) * 56 / n);
  EXPECT_EQ(stats[CollectiveKind::AllGather].bytesSent, (n - 1) * 20);
  EXPECT_EQ(stats[CollectiveKind::ReduceScatter].bytesSent, (n - 1) * 48);
  EXPECT_EQ(stats[CollectiveKind::Broadcast].calls, 2u);
  EXPECT_EQ(stats[CollectiveKind::Broadcast].bytesSent,
            (lastOfRing(0) ? 0u : 18u) +
                (lastOfRing(comm.size() - 1) ? 0u : 18u));
  EXPECT_EQ(stats[CollectiveKind::Barrier].calls, 1u);
  EXPECT_EQ(stats[CollectiveKind::Barrier].bytesSent, 0u);
  EXPECT_EQ(stats[CollectiveKind::AllToAll].bytesSent, (n - 1) * 12);
  EXPECT_EQ(stats.total().calls, 8u);
  if (n == 2) // the figures by hand for the usual run
    EXPECT_EQ(stats.total().bytesSent, 4000u + 56 + 20 + 48 + 18 + 12);
}

TEST(CommMpi, SendsNeverWaitForTheirReceiver) {
  // Every rank sends to the next and the previous rank before it receives
  // anything: with sends that waited for their receiver (MPI's rendezvous
  // above its eager limit: 4 MB here) this would hang.
  MpiCommunicator comm;
  const int n = comm.size(), rank = comm.rank();
  const int next = (rank + 1) % n, previous = (rank + n - 1) % n;
  const std::size_t count = std::size_t(1) << 20;
  std::vector<float> out(count), in(count);
  for (std::size_t i = 0; i < count; ++i)
    out[i] = float(rank * 1000 + int(i % 997));
  comm.send(out.data(), count, CommDType::F32, next, /*tag=*/3);
  std::int64_t small[2] = {rank, -rank};
  comm.send(small, 2, CommDType::I64, previous, /*tag=*/0);
  std::fill(out.begin(), out.end(), -1.0f); // the send took a copy
  std::int64_t got[2] = {};
  comm.recv(got, 2, CommDType::I64, next, 0);
  comm.recv(in.data(), count, CommDType::F32, previous, 3);
  comm.completeSends();
  EXPECT_EQ(got[0], next);
  EXPECT_EQ(got[1], -next);
  for (std::size_t i = 0; i < count; i += 4099)
    EXPECT_EQ(in[i], float(previous * 1000 + int(i % 997))) << i;
  const CommStats &stats = comm.stats();
  EXPECT_EQ(stats[CollectiveKind::Send].calls, 2u);
  EXPECT_EQ(stats[CollectiveKind::Send].bytesSent, count * 4 + 16);
  EXPECT_EQ(stats[CollectiveKind::Recv].calls, 2u);
  EXPECT_EQ(stats[CollectiveKind::Recv].bytesSent, 0u);
  comm.barrier();
}

TEST(CommMpi, ReceiveOfAnotherSizeIsAnError) {
  MpiCommunicator comm;
  const int n = comm.size(), rank = comm.rank();
  float values[3] = {1, 2, 3};
  comm.send(values, 3, CommDType::F32, (rank + 1) % n, 0);
  float two[2];
  EXPECT_EQ(errorOf([&] {
              comm.recv(two, 2, CommDType::F32, (rank + n - 1) % n, 0);
            }),
            "recv: rank " + std::to_string((rank + n - 1) % n) +
                " sent 3 f32 elements with tag 0, expected 2");
  comm.completeSends();
  EXPECT_EQ(errorOf([&] { comm.send(values, 1, CommDType::F32, rank, 0); }),
            "send: peer " + std::to_string(rank) + " is not another rank of " +
                std::to_string(n));
  comm.barrier();
}

TEST(CommMpi, CommunicatorsNumberTheirOwnCollectives) {
  MpiCommunicator first, second;
  std::int32_t value = first.rank();
  first.allReduce(&value, &value, 1, CommDType::I32, ReduceOp::Sum);
  second.barrier();
  second.barrier();
  EXPECT_EQ(value, first.size() * (first.size() - 1) / 2);
  EXPECT_EQ(first.lastSequenceNumber(), 1u);
  EXPECT_EQ(second.lastSequenceNumber(), 2u);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  testing::InitGoogleTest(&argc, argv);
  int result = RUN_ALL_TESTS();
  MPI_Finalize();
  return result;
}

// The local backend and the Communicator defaults: ordering, errors that name both sides,
// failure propagation without hangs, and the direct alltoall/allgather/barrier.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "clbo/collectives/communicator.hpp"
#include "clbo/collectives/counting.hpp"
#include "clbo/collectives/local.hpp"
#include "clbo/core/error.hpp"
#include "coll_test_util.hpp"

namespace clbo {
namespace {

using namespace std::chrono_literals;

std::string message_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  }
  return "";
}

TEST(LocalBackend, MessagesArriveInOrderPerSenderAndTag) {
  std::vector<int> got;
  run_local(3, [&](Communicator& comm) {
    if (comm.rank() == 0) {
      for (int v : {1, 2, 3}) comm.send(1, &v, sizeof v, 1000);
      const int other = 40;
      comm.send(1, &other, sizeof other, 1001);
    } else if (comm.rank() == 2) {
      const int v = 50;
      comm.send(1, &v, sizeof v, 1000);
    } else {
      // Receive in an order unrelated to the send order: only (sender, tag) FIFOs matter.
      int v = 0;
      comm.recv(0, &v, sizeof v, 1001);
      got.push_back(v);
      comm.recv(2, &v, sizeof v, 1000);
      got.push_back(v);
      for (int i = 0; i < 3; ++i) {
        comm.recv(0, &v, sizeof v, 1000);
        got.push_back(v);
      }
    }
  });
  EXPECT_EQ(got, (std::vector<int>{40, 50, 1, 2, 3}));
}

TEST(LocalBackend, SendCopiesThePayload) {
  run_local(2, [](Communicator& comm) {
    if (comm.rank() == 0) {
      std::vector<float> v{1.f, 2.f};
      comm.send(1, v.data(), 8, 1000);
      v[0] = 99.f;  // changing the source after send must not change the message
      comm.barrier();
    } else {
      comm.barrier();
      std::vector<float> v(2);
      comm.recv(0, v.data(), 8, 1000);
      EXPECT_EQ(v[0], 1.f);
    }
  });
}

TEST(LocalBackend, SizeMismatchNamesSenderReceiverTagAndSizes) {
  try {
    run_local(2, [](Communicator& comm) {
      std::vector<char> buf(8);
      if (comm.rank() == 0) {
        comm.send(1, buf.data(), 8, 1005);
      } else {
        comm.recv(0, buf.data(), 4, 1005);
      }
    });
    FAIL() << "a size mismatch must throw";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1 expected 4 bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("from rank 0"), std::string::npos) << what;
    EXPECT_NE(what.find("tag 1005"), std::string::npos) << what;
    EXPECT_NE(what.find("has 8 bytes"), std::string::npos) << what;
  }
}

TEST(LocalBackend, ExceptionInOneRankReleasesTheOthersAndIsRethrown) {
  std::exception_ptr error;
  const bool finished = test::finishes_within(
      20s,
      [] {
        run_local(4, [](Communicator& comm) {
          if (comm.rank() == 2) {
            std::this_thread::sleep_for(20ms);  // let the others block first
            throw std::runtime_error("rank two failed on purpose");
          }
          int v = 0;
          comm.recv(2, &v, sizeof v, 1000);  // never arrives
        });
      },
      &error);
  ASSERT_TRUE(finished) << "run_local hung after one rank threw";
  ASSERT_TRUE(error);
  // The original exception, not one of the abort-induced ones.
  EXPECT_THROW(std::rethrow_exception(error), std::runtime_error);
  EXPECT_EQ(message_of(error), "rank two failed on purpose");
}

TEST(LocalBackend, ExceptionWhileOthersAreInACollectiveDoesNotHang) {
  std::exception_ptr error;
  const bool finished = test::finishes_within(
      20s,
      [] {
        run_local(8, [](Communicator& comm) {
          if (comm.rank() == 5) throw InputError("test", "field", "value", "bad on purpose");
          std::vector<float> in(8 * 3, 1.f), out(8 * 3);
          comm.alltoall(in.data(), out.data(), 3 * sizeof(float));
          comm.barrier();
        });
      },
      &error);
  ASSERT_TRUE(finished);
  EXPECT_THROW(std::rethrow_exception(error), InputError);
}

TEST(LocalBackend, DeadlockIsReportedInsteadOfHanging) {
  std::exception_ptr error;
  const bool finished = test::finishes_within(
      20s,
      [] {
        run_local(3, [](Communicator& comm) {
          if (comm.rank() == 2) return;  // returns without sending what rank 1 waits for
          int v = 0;
          comm.recv(comm.rank() == 0 ? 1 : 2, &v, sizeof v, 1000);
        });
      },
      &error);
  ASSERT_TRUE(finished);
  ASSERT_TRUE(error);
  const std::string what = message_of(error);
  EXPECT_NE(what.find("deadlock"), std::string::npos) << what;
  EXPECT_NE(what.find("rank 0 waits for rank 1 (tag 1000)"), std::string::npos) << what;
  EXPECT_NE(what.find("rank 2 has returned"), std::string::npos) << what;
}

TEST(LocalBackend, UnreceivedMessagesAreAnError) {
  try {
    run_local(2, [](Communicator& comm) {
      if (comm.rank() == 0) {
        const int v = 1;
        comm.send(1, &v, sizeof v, 1000);
      }
    });
    FAIL() << "a message nobody received must be reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("4 bytes from rank 0 to rank 1 with tag 1000"),
              std::string::npos)
        << e.what();
  }
}

TEST(LocalBackend, RejectsBadWorldSizeAndPeers) {
  EXPECT_THROW(run_local(0, [](Communicator&) {}), InputError);
  EXPECT_THROW(run_local(-3, [](Communicator&) {}), InputError);
  EXPECT_THROW(run_local(2,
                         [](Communicator& comm) {
                           const int v = 0;
                           comm.send(2, &v, sizeof v, 1000);
                         }),
               Error);
  EXPECT_THROW(run_local(2,
                         [](Communicator& comm) {
                           int v = 0;
                           comm.recv(-1, &v, sizeof v, 1000);
                         }),
               Error);
}

TEST(LocalBackend, SingleRankRunsAndCollectivesAreLocalCopies) {
  int calls = 0;
  run_local(1, [&](Communicator& comm) {
    ++calls;
    EXPECT_EQ(comm.rank(), 0);
    EXPECT_EQ(comm.size(), 1);
    EXPECT_EQ(comm.backend_name(), "local");
    CountingCommunicator counted(comm);
    const std::vector<float> in{1.f, 2.f};
    std::vector<float> out(2);
    counted.alltoall(in.data(), out.data(), 8);
    EXPECT_EQ(out, in);
    out.assign(2, 0.f);
    counted.allgather(in.data(), out.data(), 8);
    EXPECT_EQ(out, in);
    counted.barrier();
    EXPECT_EQ(counted.bytes_sent(), 0u);
    EXPECT_EQ(counted.messages_sent(), 0u);
  });
  EXPECT_EQ(calls, 1);
}

// Element e of the block rank `from` sends to rank `to`: unique across (from, to, e).
uint32_t tagged(int from, int to, size_t e) {
  return static_cast<uint32_t>(from) << 24 | static_cast<uint32_t>(to) << 16 |
         static_cast<uint32_t>(e);
}

TEST(Communicator, AlltoallDeliversBlockJToRankJ) {
  for (int p : {1, 2, 3, 5, 8}) {
    for (size_t elems : {size_t{0}, size_t{1}, size_t{7}}) {
      const auto traffic = test::run_counted(p, [&](CountingCommunicator& comm, int r) {
        std::vector<uint32_t> in(static_cast<size_t>(p) * elems), out(in.size(), 0xFFFFFFFF);
        for (int j = 0; j < p; ++j) {
          for (size_t e = 0; e < elems; ++e) in[j * elems + e] = tagged(r, j, e);
        }
        comm.alltoall(in.data(), out.data(), elems * 4);
        for (int j = 0; j < p; ++j) {
          for (size_t e = 0; e < elems; ++e) {
            EXPECT_EQ(out[j * elems + e], tagged(j, r, e)) << "p " << p << " rank " << r;
          }
        }
      });
      CommCall call{CollKind::kAlltoall, elems, DType::kF32, "test"};
      test::expect_traffic_matches(make_plan(call, p), traffic);
      for (const auto& t : traffic) EXPECT_EQ(t.bytes_sent, (p - 1) * elems * 4);
    }
  }
}

TEST(Communicator, AllgatherInPlaceAndOutOfPlace) {
  for (int p : {1, 2, 3, 5, 8}) {
    for (bool in_place : {false, true}) {
      const size_t elems = 5;
      const auto traffic = test::run_counted(p, [&](CountingCommunicator& comm, int r) {
        std::vector<uint32_t> own(elems), out(static_cast<size_t>(p) * elems, 0xFFFFFFFF);
        for (size_t e = 0; e < elems; ++e) own[e] = tagged(r, 0, e);
        if (in_place) {
          std::copy(own.begin(), own.end(), out.begin() + static_cast<ptrdiff_t>(r * elems));
          comm.allgather(out.data() + r * elems, out.data(), elems * 4);
        } else {
          comm.allgather(own.data(), out.data(), elems * 4);
        }
        for (int j = 0; j < p; ++j) {
          for (size_t e = 0; e < elems; ++e) EXPECT_EQ(out[j * elems + e], tagged(j, 0, e));
        }
      });
      CommCall call{CollKind::kAllgather, elems, DType::kF32, "test"};
      test::expect_traffic_matches(make_plan(call, p), traffic);
    }
  }
}

TEST(Communicator, BarrierHoldsEveryRankUntilAllArrive) {
  for (int p : {2, 3, 5, 8}) {
    constexpr int kRounds = 5;
    std::vector<std::atomic<int>> arrived(kRounds);
    run_local(p, [&](Communicator& comm) {
      for (int round = 0; round < kRounds; ++round) {
        // A different late rank each round.
        if (comm.rank() == round % p) std::this_thread::sleep_for(5ms);
        arrived[round].fetch_add(1);
        comm.barrier();
        EXPECT_EQ(arrived[round].load(), p) << "left the barrier early, round " << round;
      }
    });
  }
}

TEST(CountingCommunicator, CountsSendsAndReceivesOfItsRankOnly) {
  const auto traffic = test::run_counted(3, [](CountingCommunicator& comm, int r) {
    std::vector<char> buf(100);
    if (r == 0) {
      comm.send(1, buf.data(), 10, 1000);
      comm.send(2, buf.data(), 20, 1000);
      comm.send(2, buf.data(), 0, 1001);
    } else {
      comm.recv(0, buf.data(), r == 1 ? 10 : 20, 1000);
      if (r == 2) comm.recv(0, buf.data(), 0, 1001);
    }
  });
  EXPECT_EQ(traffic[0].bytes_sent, 30u);
  EXPECT_EQ(traffic[0].messages_sent, 3u);
  EXPECT_EQ(traffic[0].bytes_received, 0u);
  EXPECT_EQ(traffic[1].bytes_received, 10u);
  EXPECT_EQ(traffic[2].bytes_received, 20u);
  EXPECT_EQ(traffic[1].bytes_sent + traffic[2].bytes_sent, 0u);
}

}  // namespace
}  // namespace clbo

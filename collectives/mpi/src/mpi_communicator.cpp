// MpiCommunicator: Communicator over MPI (see clbo/collectives/mpi.hpp).
#include <fmt/format.h>
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>
#include <vector>

#include "clbo/collectives/mpi.hpp"
#include "clbo/core/error.hpp"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace clbo {

namespace {

// MPI counts are ints: larger point-to-point payloads travel as several messages of at most
// this many bytes, in order, under the same tag.
constexpr size_t kMaxMessage = size_t{1} << 30;

void mpi_check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(fmt::format("mpi: {} failed: {}", what, std::string(text, static_cast<size_t>(len))));
}

size_t pieces_of(size_t bytes) {
  return bytes == 0 ? 1 : (bytes + kMaxMessage - 1) / kMaxMessage;
}

const char* at(const void* base, size_t offset) {
  return static_cast<const char*>(base) + offset;
}
char* at(void* base, size_t offset) {
  return static_cast<char*>(base) + offset;
}

// Polling: tight for the first kSpin (a message on a fast network arrives within it), then
// in short sleeps. Sleeping, not yielding: sched_yield hands the CPU to any runnable process
// until the next scheduler tick (milliseconds on a busy machine), and meanwhile this rank
// neither answers its peers' rendezvous nor refills its sockets, so its links run idle. A
// sleeper is woken by its timer and preempts promptly, and while it sleeps, oversubscribed
// peers (more ranks than cores) have the CPU.
// The nap, 20 µs unless CLBO_MPI_POLL_NAP_US (1..100000) sets it: an expert override for
// measuring what the naps cost where ranks share cores (docs/validation.md, "CPU
// contention": each napping rank takes 10-15% of a core). Read once; a bad value is an error.
std::chrono::microseconds poll_nap() {
  static const std::chrono::microseconds nap = [] {
    const char* v = std::getenv("CLBO_MPI_POLL_NAP_US");
    if (!v || !*v) return std::chrono::microseconds{20};
    char* end = nullptr;
    const long us = std::strtol(v, &end, 10);
    if (*end != '\0' || us < 1 || us > 100000)
      throw InputError("environment", "CLBO_MPI_POLL_NAP_US", v,
                       "the MPI poller's nap: an integer number of microseconds in 1..100000");
    return std::chrono::microseconds{us};
  }();
  return nap;
}

class Poller {
 public:
  explicit Poller(double timeout_s)
      : start_(std::chrono::steady_clock::now()),
        deadline_(start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(timeout_s))) {}
  // Returns false once the deadline has passed.
  bool pause() {
    const auto now = std::chrono::steady_clock::now();
    if (now - start_ >= kSpin) std::this_thread::sleep_for(nap_);
    return now < deadline_;
  }

 private:
  static constexpr std::chrono::microseconds kSpin{50};
  const std::chrono::microseconds nap_ = poll_nap();
  std::chrono::steady_clock::time_point start_, deadline_;
};

}  // namespace

MpiSession::MpiSession() : uncaught_(std::uncaught_exceptions()) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    mpi_check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    owns_ = true;
  }
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!owns_ || finalized) return;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (std::uncaught_exceptions() > uncaught_ && size > 1) {
    // Unwinding from an error: a peer may never arrive at MPI_Finalize.
    std::fprintf(stderr, "clbo: error: mpi: aborting the job after an error on this rank\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
}

void MpiSession::abort_job(const std::string& message, int code) {
  int rank = 0, size = 1, initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
  std::fprintf(stderr, "clbo: error: rank %d of %d: %s\n", rank, size, message.c_str());
  std::fflush(stderr);
  if (initialized && !finalized) {
    if (size > 1) MPI_Abort(MPI_COMM_WORLD, code);
    MPI_Finalize();
  }
  std::exit(code);
}

bool mpi_library_cuda_support() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;  // built against a library without the CUDA extension
#endif
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string v(text, static_cast<size_t>(len));
  const auto cut = v.find_first_of(",\n");
  return cut == std::string::npos ? v : v.substr(0, cut);
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, MpiOptions options)
    : comm_(comm), options_(options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw Error("mpi: MPI is not initialized (create a clbo::MpiSession first)");
  // Errors come back as codes (turned into clbo::Error) instead of aborting the job.
  mpi_check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  mpi_check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  const bool supported = mpi_library_cuda_support();
  switch (options_.cuda_aware) {
    case MpiOptions::CudaAware::kAuto:
      cuda_aware_ = supported;
      break;
    case MpiOptions::CudaAware::kOn:
      if (!supported)
        throw Error(fmt::format(
            "mpi: cuda_aware = on, but this MPI library ({}) reports no CUDA support "
            "(MPIX_Query_cuda_support); use cuda_aware = auto or off to stage through host memory",
            mpi_library_version()));
      cuda_aware_ = true;
      break;
    case MpiOptions::CudaAware::kOff:
      cuda_aware_ = false;
      break;
  }
  if (!(options_.timeout_s > 0))
    throw Error(fmt::format("mpi: timeout_s must be positive, got {}", options_.timeout_s));
  poll_nap();  // a bad CLBO_MPI_POLL_NAP_US fails here, before any message
  // The poller's naps are 20 µs; the kernel's default timer slack (50 µs) would stretch each
  // to about 70 µs, on top of the message's own latency.
  ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
}

void MpiCommunicator::wait_all(int count, MPI_Request* requests, const char* what) {
  Poller poll(options_.timeout_s);
  for (;;) {
    int done = 0;
    mpi_check(MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE), what);
    if (done) return;
    if (!poll.pause())
      throw Error(fmt::format(
          "mpi: rank {} of {} timed out after {} s waiting for {}: some rank did not take part "
          "(stopped, crashed, or in a different collective or message size); the limit is the "
          "MPI timeout option (--timeout)",
          rank_, size_, options_.timeout_s, what));
  }
}

void MpiCommunicator::send(int peer, const void* data, size_t bytes, int tag) {
  const size_t n = pieces_of(bytes);
  for (size_t k = 0; k < n; ++k) {
    const size_t off = k * kMaxMessage, len = std::min(kMaxMessage, bytes - off);
    MPI_Request req;
    mpi_check(MPI_Isend(at(data, off), static_cast<int>(len), MPI_BYTE, peer, tag, comm_, &req),
              "MPI_Isend");
    wait_all(1, &req, "a send to complete");
  }
  if (peer != rank_) count_sent(bytes, n);
}

void MpiCommunicator::recv(int peer, void* data, size_t bytes, int tag) {
  const size_t n = pieces_of(bytes);
  for (size_t k = 0; k < n; ++k) {
    const size_t off = k * kMaxMessage, len = std::min(kMaxMessage, bytes - off);
    MPI_Message msg;
    MPI_Status status;
    int found = 0;
    Poller poll(options_.timeout_s);
    for (;;) {
      mpi_check(MPI_Improbe(peer, tag, comm_, &found, &msg, &status), "MPI_Improbe");
      if (found) break;
      if (!poll.pause())
        throw Error(
            fmt::format("mpi: rank {} of {} timed out after {} s waiting for {} bytes from rank "
                        "{} (tag {}): rank {} stopped, crashed or sent something else; the limit "
                        "is the MPI timeout option (--timeout)",
                        rank_, size_, options_.timeout_s, bytes, peer, tag, peer));
    }
    int got = 0;
    mpi_check(MPI_Get_count(&status, MPI_BYTE, &got), "MPI_Get_count");
    if (static_cast<size_t>(got) != len) {
      // A matched probe removes the message from MPI's queue: receive and drop it, so the
      // error leaves no half-consumed state behind.
      std::vector<char> drop(static_cast<size_t>(got));
      MPI_Mrecv(drop.data(), got, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
      throw Error(
          fmt::format("mpi: rank {} expected a message of {} bytes from rank {} (tag {}) "
                      "but it has {} bytes: the ranks disagree on the message size",
                      rank_, len, peer, tag, got));
    }
    mpi_check(MPI_Mrecv(at(data, off), static_cast<int>(len), MPI_BYTE, &msg, MPI_STATUS_IGNORE),
              "MPI_Mrecv");
  }
}

void MpiCommunicator::sendrecv(int dst, const void* send_data, size_t send_bytes, int src,
                               void* recv_data, size_t recv_bytes, int tag) {
  // All sends are posted before the receive, so two ranks exchanging with each other never
  // wait on each other whatever the message sizes.
  const size_t n = pieces_of(send_bytes);
  std::vector<MPI_Request> reqs(n);
  for (size_t k = 0; k < n; ++k) {
    const size_t off = k * kMaxMessage, len = std::min(kMaxMessage, send_bytes - off);
    mpi_check(
        MPI_Isend(at(send_data, off), static_cast<int>(len), MPI_BYTE, dst, tag, comm_, &reqs[k]),
        "MPI_Isend");
  }
  recv(src, recv_data, recv_bytes, tag);
  wait_all(static_cast<int>(n), reqs.data(), "a send to complete");
  if (dst != rank_) count_sent(send_bytes, n);
}

void MpiCommunicator::alltoall(const void* sendbuf, void* recvbuf, size_t bytes_per_rank) {
  if (options_.check_headers) agree(CallHeader::make("alltoall", bytes_per_rank, 1));
  if (bytes_per_rank == 0) return;
  if (bytes_per_rank > static_cast<size_t>(INT32_MAX)) {
    Communicator::alltoall(sendbuf, recvbuf, bytes_per_rank);  // chunked sendrecv steps
    return;
  }
  const int b = static_cast<int>(bytes_per_rank);
  MPI_Request req;
  mpi_check(MPI_Ialltoall(sendbuf, b, MPI_BYTE, recvbuf, b, MPI_BYTE, comm_, &req),
            "MPI_Ialltoall");
  wait_all(1, &req, "MPI_Ialltoall");
  count_sent(static_cast<uint64_t>(size_ - 1) * bytes_per_rank, static_cast<uint64_t>(size_ - 1));
}

void MpiCommunicator::allgather(const void* sendbuf, void* recvbuf, size_t bytes_per_rank) {
  if (options_.check_headers) agree(CallHeader::make("allgather", bytes_per_rank, 1));
  if (bytes_per_rank == 0) return;
  if (bytes_per_rank > static_cast<size_t>(INT32_MAX)) {
    Communicator::allgather(sendbuf, recvbuf, bytes_per_rank);
    return;
  }
  const int b = static_cast<int>(bytes_per_rank);
  const bool in_place = sendbuf == at(recvbuf, static_cast<size_t>(rank_) * bytes_per_rank);
  MPI_Request req;
  mpi_check(MPI_Iallgather(in_place ? MPI_IN_PLACE : sendbuf, b, MPI_BYTE, recvbuf, b, MPI_BYTE,
                           comm_, &req),
            "MPI_Iallgather");
  wait_all(1, &req, "MPI_Iallgather");
  count_sent(static_cast<uint64_t>(size_ - 1) * bytes_per_rank, static_cast<uint64_t>(size_ - 1));
}

void MpiCommunicator::barrier() {
  MPI_Request req;
  mpi_check(MPI_Ibarrier(comm_, &req), "MPI_Ibarrier");
  wait_all(1, &req, "MPI_Ibarrier");
}

void MpiCommunicator::agree(const CallHeader& header, const Settings* settings) {
  std::vector<CallHeader> all(static_cast<size_t>(size_));
  MPI_Request req;
  mpi_check(MPI_Iallgather(&header, sizeof(CallHeader), MPI_BYTE, all.data(), sizeof(CallHeader),
                           MPI_BYTE, comm_, &req),
            "MPI_Iallgather (call header)");
  wait_all(1, &req, "the call header of every rank");
  // Every rank holds the same p headers and scans them in the same order, so every rank
  // takes the same branch and throws the same message.
  const int differs = first_config_mismatch(all.data(), size_);
  if (differs < 0 || !settings) {
    check_call_headers(all.data(), size_, "mpi");
    return;
  }
  // Only the configuration differs: exchange the settings themselves to name the one.
  const std::string mine = settings->encode();
  const uint64_t len = mine.size();
  std::vector<uint64_t> lens(static_cast<size_t>(size_));
  mpi_check(MPI_Iallgather(&len, 1, MPI_UINT64_T, lens.data(), 1, MPI_UINT64_T, comm_, &req),
            "MPI_Iallgather (settings length)");
  wait_all(1, &req, "the settings length of every rank");
  std::vector<int> counts(static_cast<size_t>(size_)), displs(static_cast<size_t>(size_));
  uint64_t total = 0;
  for (int j = 0; j < size_; ++j) {
    if (lens[j] > (uint64_t{1} << 20))
      throw Error(fmt::format("mpi: rank {} sent a settings list of {} bytes", j, lens[j]));
    counts[j] = static_cast<int>(lens[j]);
    displs[j] = static_cast<int>(total);
    total += lens[j];
  }
  std::string gathered(total, '\0');
  mpi_check(MPI_Iallgatherv(mine.data(), static_cast<int>(len), MPI_BYTE, gathered.data(),
                            counts.data(), displs.data(), MPI_BYTE, comm_, &req),
            "MPI_Iallgatherv (settings)");
  wait_all(1, &req, "the settings of every rank");
  const auto of = [&](int j) {
    return Settings::decode(std::string_view(gathered).substr(displs[j], lens[j]),
                            fmt::format("rank {}", j));
  };
  throw Error(describe_settings_mismatch(of(0), of(differs), differs, header.op_name(), "mpi"));
}

}  // namespace clbo

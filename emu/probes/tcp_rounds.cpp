// clbo-tcp-rounds: TCP's own all-to-all on warm connections, in rounds of a few sizes, run on
// every emulated host at once (emu/clbo_emu/runner.py, warm_rounds; docs/validation.md,
// "Concurrent TCP flows").
//
//   clbo-tcp-rounds INDEX PORT SIZES REPS START GAPS IP,IP,...
//
// Host INDEX of the IPs keeps one connection to every other host and one from each; for every
// size in SIZES (bytes per pair, comma-separated) it runs REPS rounds in which it sends SIZE
// bytes on each outgoing connection and receives SIZE bytes on each incoming one, all at
// once. Round k starts at the wall-clock time START + the gaps of the rounds before it (GAPS:
// seconds, one per size): the hosts share the machine's clock, so they start together without
// talking. A round's time runs from its scheduled start to the last byte sent and received
// here, so a host that starts late counts its lateness, and says how late it was (late_s: a
// round that begins after its set time, because the mesh was not up yet or the host was not
// scheduled, measures that delay too; the reader leaves such rounds out).
//
// Why compiled, with one thread and poll(): the round's own cost must be small next to the
// wire time of 64-256 KiB per pair. The Python probe started a thread per connection per
// round, which cost 0.9-6.8 ms a round on 2-8 hosts, as much as the effect measured.
//
// Prints one JSON line:
//   {"hosts": n, "rounds": [{"bytes_per_pair": S, "seconds": [...], "late_s": [...]}]}.
// It listens on its own IP only and contacts only the addresses on the command line (tests
// run it on 127.0.0.x).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "clbo-tcp-rounds: %s\n", what.c_str());
  std::exit(2);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');) out.push_back(part);
  return out;
}

double number(const std::string& s, const char* what) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0') die(std::string("bad ") + what + ": '" + s + "'");
  return v;
}

double wall_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

double mono_now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

void tune(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int listen_on(const std::string& ip, int port, int backlog) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) die("bad address '" + ip + "'");
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, backlog) != 0)
    die("cannot listen on " + ip + ":" + std::to_string(port) + ": " + std::strerror(errno));
  return fd;
}

// Waits up to `seconds` for fd to become readable; dies naming `what` when it does not.
void wait_readable(int fd, double seconds, const std::string& what) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(seconds * 1000)) != 1)
    die(what + ": nothing within " + std::to_string(static_cast<int>(seconds)) + " s");
}

// Connects to ip:port, retrying while the peer's listener is not up yet (10 s at most).
int connect_to(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) die("bad address '" + ip + "'");
  const double end = mono_now() + 10;
  while (true) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    close(fd);
    if (mono_now() > end) die("cannot connect to " + ip + ": " + std::strerror(errno));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void sleep_until_wall(double t) {
  while (true) {
    const double left = t - wall_now();
    if (left <= 0) return;
    std::this_thread::sleep_for(std::chrono::duration<double>(left > 2e-3 ? left - 1e-3 : 0));
    if (left <= 2e-3) {
      while (wall_now() < t) {
      }
      return;
    }
  }
}

// One round: every outgoing socket sends `bytes`, every incoming one receives `bytes`.
// `round` names it in errors.
void exchange(const std::vector<int>& out, const std::vector<int>& in, size_t bytes,
              const std::vector<char>& data, std::vector<char>& sink, const std::string& round) {
  std::vector<size_t> sent(out.size(), 0), got(in.size(), 0);
  std::vector<pollfd> fds;
  while (true) {
    fds.clear();
    for (size_t i = 0; i < out.size(); ++i)
      if (sent[i] < bytes) fds.push_back({out[i], POLLOUT, 0});
    for (size_t i = 0; i < in.size(); ++i)
      if (got[i] < bytes) fds.push_back({in[i], POLLIN, 0});
    if (fds.empty()) return;
    if (poll(fds.data(), fds.size(), 10000) <= 0)
      die(round + ": stalled for 10 s (" + std::to_string(fds.size()) + " sockets unfinished)");
    for (size_t i = 0; i < out.size(); ++i) {
      if (sent[i] >= bytes) continue;
      const ssize_t n = send(out[i], data.data(), std::min(data.size(), bytes - sent[i]),
                             MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) sent[i] += static_cast<size_t>(n);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
        die(round + ": send failed: " + std::strerror(errno));
    }
    for (size_t i = 0; i < in.size(); ++i) {
      if (got[i] >= bytes) continue;
      const ssize_t n =
          recv(in[i], sink.data(), std::min(sink.size(), bytes - got[i]), MSG_DONTWAIT);
      if (n > 0) got[i] += static_cast<size_t>(n);
      if (n == 0)
        die(round + ": a peer closed its connection after " + std::to_string(got[i]) + " bytes");
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
        die(round + ": recv failed: " + std::strerror(errno));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8)
    die("usage: clbo-tcp-rounds INDEX PORT SIZES REPS START GAPS IP,IP,... (see its header)");
  const int index = static_cast<int>(number(argv[1], "INDEX"));
  const int port = static_cast<int>(number(argv[2], "PORT"));
  std::vector<size_t> sizes;
  for (const auto& s : split(argv[3])) sizes.push_back(static_cast<size_t>(number(s, "size")));
  const int reps = static_cast<int>(number(argv[4], "REPS"));
  const double start = number(argv[5], "START");
  std::vector<double> gaps;
  for (const auto& s : split(argv[6])) gaps.push_back(number(s, "gap"));
  const std::vector<std::string> ips = split(argv[7]);
  const int n = static_cast<int>(ips.size());
  if (n < 2 || index < 0 || index >= n) die("INDEX must name one of at least two IPs");
  if (sizes.empty() || gaps.size() != sizes.size() || reps < 1)
    die("GAPS has " + std::to_string(gaps.size()) + " values for " + std::to_string(sizes.size()) +
        " SIZES, and REPS (" + std::to_string(reps) + ") must be at least 1");

  // The mesh: this host accepts one connection from every other and opens one to each; the
  // first byte on an accepted connection names its host.
  const int lst = listen_on(ips[static_cast<size_t>(index)], port, n);
  std::vector<int> in(static_cast<size_t>(n), -1), out;
  std::thread acceptor([&] {
    for (int k = 0; k < n - 1; ++k) {
      wait_readable(lst, 30, "waiting for the other hosts to connect");
      const int fd = accept(lst, nullptr, nullptr);
      if (fd < 0) die(std::string("accept failed: ") + std::strerror(errno));
      wait_readable(fd, 30, "waiting for a connected host to say which it is");
      unsigned char who = 0;
      if (recv(fd, &who, 1, MSG_WAITALL) != 1) die("a connected host said nothing");
      if (who >= n || who == index || in[who] >= 0)
        die("a connected host says it is host " + std::to_string(who) + " of " + std::to_string(n) +
            " (this is " + std::to_string(index) + ")");
      in[who] = fd;
    }
  });
  for (int j = 0; j < n; ++j) {
    if (j == index) continue;
    const int fd = connect_to(ips[static_cast<size_t>(j)], port);
    const unsigned char me = static_cast<unsigned char>(index);
    if (send(fd, &me, 1, MSG_NOSIGNAL) != 1) die("cannot greet " + ips[static_cast<size_t>(j)]);
    out.push_back(fd);
  }
  acceptor.join();
  std::vector<int> incoming;
  for (int fd : in)
    if (fd >= 0) incoming.push_back(fd);
  for (int fd : out) tune(fd);
  for (int fd : incoming) tune(fd);

  size_t biggest = 1;
  for (size_t s : sizes) biggest = std::max(biggest, s);
  const std::vector<char> data(std::min<size_t>(biggest, 1 << 20), 0);
  std::vector<char> sink(1 << 20);
  auto list = [](const std::vector<double>& v) {
    std::string out = "[";
    char buf[32];
    for (size_t i = 0; i < v.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%s%.9f", i ? ", " : "", v[i]);
      out += buf;
    }
    return out + "]";
  };
  std::string json = "{\"hosts\": " + std::to_string(n) + ", \"rounds\": [";
  double at = start;
  for (size_t k = 0; k < sizes.size(); ++k) {
    std::vector<double> seconds, lateness;
    for (int r = 0; r < reps; ++r) {
      sleep_until_wall(at);
      const double late = std::max(0.0, wall_now() - at);
      const double t0 = mono_now();
      exchange(out, incoming, sizes[k], data, sink,
               "round " + std::to_string(r + 1) + " of " + std::to_string(sizes[k]) + " bytes");
      seconds.push_back(late + (mono_now() - t0));
      lateness.push_back(late);
      at += gaps[k];
    }
    json.append(k ? ", " : "")
        .append("{\"bytes_per_pair\": ")
        .append(std::to_string(sizes[k]))
        .append(", \"seconds\": ")
        .append(list(seconds))
        .append(", \"late_s\": ")
        .append(list(lateness))
        .append("}");
  }
  json += "]}";
  std::printf("%s\n", json.c_str());
  for (int fd : out) close(fd);
  for (int fd : incoming) close(fd);
  close(lst);
  return 0;
}

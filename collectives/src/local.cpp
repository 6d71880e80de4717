#include "clbo/collectives/local.hpp"

#include <compare>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "clbo/core/error.hpp"

namespace clbo {

namespace {

// Thrown on ranks whose communication was cut short because the world was aborted (another
// rank failed, or every running rank waits on a message that can never come). run_local
// prefers the original failure over these.
class LocalAborted : public Error {
 public:
  using Error::Error;
};

std::string describe(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "a non-standard exception";
  }
}

}  // namespace

// Mailboxes keyed by receiver, then (sender, tag), each a FIFO of copied payloads. One mutex
// guards the whole world: messages are few and large relative to the locking, and a single
// lock makes deadlock detection (every running rank blocked in recv) exact.
class LocalWorld {
 public:
  explicit LocalWorld(int p) : p_(p), boxes_(static_cast<size_t>(p)), running_(p) {}
  int size() const { return p_; }

  void send(int src, int dst, const void* data, size_t bytes, int tag) {
    check_peer(src, dst, "sends to");
    std::vector<char> payload(bytes);
    if (bytes > 0) std::memcpy(payload.data(), data, bytes);
    std::lock_guard lock(mu_);
    if (aborted_) throw LocalAborted(abort_reason_);
    Mailbox& box = boxes_[static_cast<size_t>(dst)];
    const Key key{src, tag};
    box.queues[key].push_back(std::move(payload));
    if (box.waiting_for == key) {
      // Unblock the receiver here rather than when it wakes, so a third rank checking for
      // deadlock in between never counts it as blocked.
      box.waiting_for.reset();
      --blocked_;
      box.cv.notify_one();
    }
  }

  void recv(int src, int dst, void* data, size_t bytes, int tag) {
    check_peer(dst, src, "receives from");
    std::unique_lock lock(mu_);
    Mailbox& box = boxes_[static_cast<size_t>(dst)];
    const Key key{src, tag};
    std::deque<std::vector<char>>& queue = box.queues[key];
    while (queue.empty()) {
      if (aborted_) {
        if (box.waiting_for) {
          box.waiting_for.reset();
          --blocked_;
        }
        throw LocalAborted(abort_reason_);
      }
      if (!box.waiting_for) {
        box.waiting_for = key;
        ++blocked_;
        check_deadlock();
        continue;  // re-test: check_deadlock may have aborted the world
      }
      box.cv.wait(lock);
    }
    std::vector<char> payload = std::move(queue.front());
    queue.pop_front();
    lock.unlock();
    if (payload.size() != bytes) {
      throw Error("local backend: rank " + std::to_string(dst) + " expected " +
                  std::to_string(bytes) + " bytes from rank " + std::to_string(src) + " with tag " +
                  std::to_string(tag) + ", but the message sent has " +
                  std::to_string(payload.size()) + " bytes");
    }
    if (bytes > 0) std::memcpy(data, payload.data(), bytes);
  }

  void abort(const std::string& reason) {
    std::lock_guard lock(mu_);
    abort_locked(reason);
  }

  void rank_finished(int rank) {
    std::lock_guard lock(mu_);
    boxes_[static_cast<size_t>(rank)].finished = true;
    --running_;
    check_deadlock();
  }

  // Messages that were sent but never received, described; "" when there are none.
  std::string leftover_messages() const {
    std::lock_guard lock(mu_);
    std::string out;
    size_t count = 0;
    for (int dst = 0; dst < p_; ++dst) {
      for (const auto& [key, queue] : boxes_[static_cast<size_t>(dst)].queues) {
        for (const std::vector<char>& msg : queue) {
          if (++count <= 8) {
            out += (out.empty() ? "" : "; ") + std::to_string(msg.size()) + " bytes from rank " +
                   std::to_string(key.src) + " to rank " + std::to_string(dst) + " with tag " +
                   std::to_string(key.tag);
          }
        }
      }
    }
    if (count > 8) out += "; and " + std::to_string(count - 8) + " more";
    return count == 0 ? "" : std::to_string(count) + " message(s) never received: " + out;
  }

 private:
  struct Key {
    int src = 0, tag = 0;
    auto operator<=>(const Key&) const = default;
  };
  struct Mailbox {
    std::map<Key, std::deque<std::vector<char>>> queues;
    std::condition_variable cv;
    std::optional<Key> waiting_for;  // set while the owner is blocked in recv
    bool finished = false;
  };

  void check_peer(int self, int peer, const char* verb) const {
    if (peer < 0 || peer >= p_) {
      throw Error("local backend: rank " + std::to_string(self) + " " + verb + " rank " +
                  std::to_string(peer) + ", outside the world of " + std::to_string(p_) + " ranks");
    }
  }

  void abort_locked(const std::string& reason) {
    if (aborted_) return;
    aborted_ = true;
    abort_reason_ = reason;
    for (Mailbox& box : boxes_) box.cv.notify_all();
  }

  // Called with mu_ held whenever a rank blocks or finishes.
  void check_deadlock() {
    if (aborted_ || running_ == 0 || blocked_ < running_) return;
    std::string why = "local backend: deadlock, every running rank waits for a message:";
    for (int r = 0; r < p_; ++r) {
      const Mailbox& box = boxes_[static_cast<size_t>(r)];
      if (box.finished) {
        why += " rank " + std::to_string(r) + " has returned;";
      } else if (box.waiting_for) {
        why += " rank " + std::to_string(r) + " waits for rank " +
               std::to_string(box.waiting_for->src) + " (tag " +
               std::to_string(box.waiting_for->tag) + ");";
      }
    }
    why.pop_back();
    abort_locked(why);
  }

  const int p_;
  mutable std::mutex mu_;
  std::vector<Mailbox> boxes_;  // indexed by receiving rank
  int running_;                 // ranks whose function has not returned
  int blocked_ = 0;             // running ranks waiting in recv with nothing to take
  bool aborted_ = false;
  std::string abort_reason_;
};

LocalCommunicator::LocalCommunicator(std::shared_ptr<LocalWorld> world, int rank)
    : world_(std::move(world)), rank_(rank) {
  if (rank_ < 0 || rank_ >= world_->size()) {
    throw Error("local backend: rank " + std::to_string(rank_) + " outside the world of " +
                std::to_string(world_->size()) + " ranks");
  }
}

int LocalCommunicator::size() const {
  return world_->size();
}

void LocalCommunicator::send(int peer, const void* data, size_t bytes, int tag) {
  world_->send(rank_, peer, data, bytes, tag);
}

void LocalCommunicator::recv(int peer, void* data, size_t bytes, int tag) {
  world_->recv(peer, rank_, data, bytes, tag);
}

void run_local(int p, const std::function<void(Communicator&)>& fn) {
  if (p < 1) {
    throw InputError("run_local", "p", std::to_string(p), "the world size must be at least 1");
  }
  auto world = std::make_shared<LocalWorld>(p);
  std::mutex errors_mu;
  std::exception_ptr first_error, first_abort;

  auto run_rank = [&](int r) {
    try {
      LocalCommunicator comm(world, r);
      fn(comm);
    } catch (const LocalAborted&) {
      std::lock_guard lock(errors_mu);
      if (!first_abort) first_abort = std::current_exception();
    } catch (...) {
      const std::exception_ptr e = std::current_exception();
      {
        std::lock_guard lock(errors_mu);
        if (!first_error) first_error = e;
      }
      world->abort("local backend: aborted because rank " + std::to_string(r) +
                   " threw: " + describe(e));
    }
    world->rank_finished(r);
  };

  // Rank 0 runs on the calling thread; ranks 1..p−1 get their own.
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(p - 1));
  try {
    for (int r = 1; r < p; ++r) threads.emplace_back(run_rank, r);
  } catch (...) {
    world->abort("local backend: could not start a thread for every rank");
    for (std::thread& t : threads) t.join();
    throw;
  }
  run_rank(0);
  for (std::thread& t : threads) t.join();

  if (first_error) std::rethrow_exception(first_error);
  if (first_abort) std::rethrow_exception(first_abort);
  const std::string leftover = world->leftover_messages();
  if (!leftover.empty()) throw Error("local backend: every rank returned but " + leftover);
}

}  // namespace clbo

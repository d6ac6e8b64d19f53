#pragma once

// An epoll set with an eventfd in it, so that another thread can wake the one blocked in
// epoll_wait: what rm_load's event loop and its simulated node managers' listener both wait
// on. Every descriptor is registered with a 64-bit tag, which epoll_wait hands back.

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace tide::bench {

class WakeableEpoll {
 public:
  // `wakeTag` is what epoll_wait reports after a wake().
  explicit WakeableEpoll(uint64_t wakeTag)
      : epoll_(::epoll_create1(EPOLL_CLOEXEC)), wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    add(wake_, wakeTag);
  }
  ~WakeableEpoll() {
    ::close(wake_);
    ::close(epoll_);
  }
  WakeableEpoll(const WakeableEpoll&) = delete;
  WakeableEpoll& operator=(const WakeableEpoll&) = delete;

  int fd() const { return epoll_; }
  void add(int fd, uint64_t tag, uint32_t events = EPOLLIN) const {
    epoll_event event{};
    event.events = events;
    event.data.u64 = tag;
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event);
  }
  // Thread-safe.
  void wake() const {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t written = ::write(wake_, &one, sizeof one);
  }
  // After the wake tag was reported: clears it (else it is reported again at once).
  void clearWakes() const {
    uint64_t count = 0;
    [[maybe_unused]] ssize_t read = ::read(wake_, &count, sizeof count);
  }

 private:
  int epoll_;
  int wake_;
};

}  // namespace tide::bench

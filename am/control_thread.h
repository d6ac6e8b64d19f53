#pragma once

// One thread at normal CPU priority that runs work handed to it and lets the caller wait for
// the result. The status port's threads run at idle priority (status_handlers.cc); the few
// requests that must take the AM's mutex (jobs, bounds, cache) run here instead, because a holder
// of that mutex preempted at idle priority would stall the loops and every executor (priority
// inversion).

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace tide::am {

class ControlThread {
 public:
  ControlThread() : thread_([this] { loop(); }) {}
  ~ControlThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  ControlThread(const ControlThread&) = delete;
  ControlThread& operator=(const ControlThread&) = delete;

  // Runs `work` on the control thread and waits; its exception, if any, is rethrown here.
  void run(const std::function<void()>& work) {
    std::packaged_task<void()> task(work);
    std::future<void> done = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(task));
    }
    wake_.notify_one();
    done.get();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      std::packaged_task<void()> task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace tide::am

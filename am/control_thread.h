#pragma once

// One thread at normal CPU priority that runs work handed to it and lets the caller wait for
// the result. The status port's threads run at idle priority (status_handlers.cc); the few
// requests that must take the AM's mutex (jobs, bounds, cache) run here instead, because a holder
// of that mutex preempted at idle priority would stall the loops and every executor (priority
// inversion).

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
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
    Call call{work, nullptr, false};
    std::unique_lock<std::mutex> lock(mu_);
    // The loop serves what is queued before it stops, and nothing after.
    if (stopping_) throw std::runtime_error("the AM is stopping");
    queue_.push_back(&call);
    wake_.notify_all();
    ended_.wait(lock, [&] { return call.done; });
    lock.unlock();
    if (call.error) std::rethrow_exception(call.error);
  }

 private:
  // A call waiting on its caller's stack. Not std::packaged_task: a future's completion is
  // signalled inside libstdc++, where ThreadSanitizer cannot see it, so it reported the caller
  // reading the exception while this thread freed the task's state. Here the caller learns of
  // the end through mu_, after which this thread touches nothing of the call.
  struct Call {
    const std::function<void()>& work;
    std::exception_ptr error;
    bool done = false;
  };

  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      Call* call = queue_.front();
      queue_.pop_front();
      lock.unlock();
      std::exception_ptr error;
      try {
        call->work();
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      call->error = std::move(error);
      call->done = true;
      ended_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable ended_;
  std::deque<Call*> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace tide::am

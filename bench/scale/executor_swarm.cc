#include "bench/scale/executor_swarm.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <utility>

#include "rest/json.h"
#include "rest/messages/executor.h"

namespace tide::bench {
namespace {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

constexpr Millis kFirstBackoff{100};
constexpr Millis kMaxBackoff{2000};
constexpr Millis kGiveUpAfter{120000};  // network.timeout's default
constexpr size_t kMaxErrors = 20;
constexpr uint64_t kWakeUp = ~uint64_t{0};  // the eventfd's epoll data; sockets carry shard|fd

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

size_t collect(char* data, size_t size, size_t count, void* target) {
  static_cast<std::string*>(target)->append(data, size * count);
  return size * count;
}

}  // namespace

// The executors of one node: their multi handle and its timer.
struct ExecutorSwarm::Shard {
  ExecutorSwarm* swarm = nullptr;
  uint32_t index = 0;  // in shards_, and the high half of its sockets' epoll data
  CURLM* multi = nullptr;
  Clock::time_point timer = Clock::time_point::max();
};

struct ExecutorSwarm::Sim {
  SimulatedExecutor spec;
  Shard* shard = nullptr;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  bool registered = false;
  bool gone = false;
  bool inRequest = false;
  int slots = 1;
  int64_t heartbeatMs = 1000;
  std::vector<int64_t> done;      // noop tasks finished, not reported yet
  std::vector<int64_t> inFlight;  // reported by the request being sent
  bool held = false;              // the request in flight is a poll the AM may hold
  std::string body;
  std::string response;
  Clock::time_point sentAt;
  int failures = 0;
  Clock::time_point failingSince;
  Clock::time_point timerAt = Clock::time_point::max();  // max: none
};

ExecutorSwarm::ExecutorSwarm(std::function<void(const std::string&, int)> onExit)
    : onExit_(std::move(onExit)) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_ < 0 || wake_ < 0) throw std::runtime_error("swarm: no epoll or eventfd");
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = kWakeUp;
  ::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &event);
}

ExecutorSwarm::Shard& ExecutorSwarm::shardFor(const std::string& host) {
  auto found = shardByHost_.find(host);
  if (found != shardByHost_.end()) return *found->second;
  auto shard = std::make_unique<Shard>();
  shard->swarm = this;
  shard->index = static_cast<uint32_t>(shards_.size());
  shard->multi = curl_multi_init();
  if (shard->multi == nullptr) throw std::runtime_error("swarm: no curl multi handle");
  curl_multi_setopt(shard->multi, CURLMOPT_SOCKETFUNCTION, &ExecutorSwarm::onSocket);
  curl_multi_setopt(shard->multi, CURLMOPT_SOCKETDATA, shard.get());
  curl_multi_setopt(shard->multi, CURLMOPT_TIMERFUNCTION, &ExecutorSwarm::onTimer);
  curl_multi_setopt(shard->multi, CURLMOPT_TIMERDATA, shard.get());
  // Every executor keeps its connection: the cache must hold them all.
  curl_multi_setopt(shard->multi, CURLMOPT_MAXCONNECTS, 100000L);
  Shard& added = *shard;
  shardByHost_[host] = shard.get();
  shards_.push_back(std::move(shard));
  return added;
}

ExecutorSwarm::~ExecutorSwarm() {
  for (auto& sim : sims_) {
    if (sim->inRequest) curl_multi_remove_handle(sim->shard->multi, sim->easy);
    curl_easy_cleanup(sim->easy);
    curl_slist_free_all(sim->headers);
  }
  for (auto& shard : shards_) curl_multi_cleanup(shard->multi);
  ::close(epoll_);
  ::close(wake_);
}

void ExecutorSwarm::add(SimulatedExecutor executor) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    toAdd_.push_back(std::move(executor));
  }
  const uint64_t one = 1;
  (void)!::write(wake_, &one, sizeof(one));
}

void ExecutorSwarm::stop(const std::string& containerId) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    toStop_.push_back(containerId);
  }
  const uint64_t one = 1;
  (void)!::write(wake_, &one, sizeof(one));
}

void ExecutorSwarm::quit() {
  quit_ = true;
  const uint64_t one = 1;
  (void)!::write(wake_, &one, sizeof(one));
}

SwarmStats ExecutorSwarm::takeStats() {
  std::lock_guard<std::mutex> lock(mutex_);
  SwarmStats taken = std::move(stats_);
  stats_ = SwarmStats();
  return taken;
}

void ExecutorSwarm::error(const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stats_.errors.size() < kMaxErrors) stats_.errors.push_back(message);
}

int ExecutorSwarm::onSocket(CURL*, curl_socket_t fd, int what, void* self, void* socketData) {
  auto* shard = static_cast<Shard*>(self);
  ExecutorSwarm* swarm = shard->swarm;
  if (what == CURL_POLL_REMOVE) {
    ::epoll_ctl(swarm->epoll_, EPOLL_CTL_DEL, fd, nullptr);
    curl_multi_assign(shard->multi, fd, nullptr);
    return 0;
  }
  epoll_event event{};
  event.data.u64 = (uint64_t{shard->index} << 32) | static_cast<uint32_t>(fd);
  if (what & CURL_POLL_IN) event.events |= EPOLLIN;
  if (what & CURL_POLL_OUT) event.events |= EPOLLOUT;
  if (socketData == nullptr) {
    if (::epoll_ctl(swarm->epoll_, EPOLL_CTL_ADD, fd, &event) != 0) {
      ::epoll_ctl(swarm->epoll_, EPOLL_CTL_MOD, fd, &event);
    }
    curl_multi_assign(shard->multi, fd, shard);  // any non-null: known to epoll
  } else {
    ::epoll_ctl(swarm->epoll_, EPOLL_CTL_MOD, fd, &event);
  }
  return 0;
}

int ExecutorSwarm::onTimer(CURLM*, long timeoutMs, void* self) {
  auto* shard = static_cast<Shard*>(self);
  shard->timer = timeoutMs < 0 ? Clock::time_point::max() : Clock::now() + Millis(timeoutMs);
  return 0;
}

void ExecutorSwarm::drainCommands() {
  std::vector<SimulatedExecutor> adds;
  std::vector<std::string> stops;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    adds.swap(toAdd_);
    stops.swap(toStop_);
  }
  for (SimulatedExecutor& spec : adds) {
    auto sim = std::make_unique<Sim>();
    sim->spec = std::move(spec);
    sim->shard = &shardFor(sim->spec.host);
    sim->easy = curl_easy_init();
    sim->headers = curl_slist_append(sim->headers, "Content-Type: application/json");
    sim->headers =
        curl_slist_append(sim->headers, ("Authorization: Bearer " + sim->spec.appSecret).c_str());
    sim->headers = curl_slist_append(sim->headers, "Expect:");  // no 100-continue round trip
    curl_easy_setopt(sim->easy, CURLOPT_HTTPHEADER, sim->headers);
    curl_easy_setopt(sim->easy, CURLOPT_PRIVATE, sim.get());
    curl_easy_setopt(sim->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(sim->easy, CURLOPT_WRITEFUNCTION, &collect);
    curl_easy_setopt(sim->easy, CURLOPT_WRITEDATA, &sim->response);
    curl_easy_setopt(sim->easy, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
    // From its node's address, as an executor on that node would connect.
    if (!sim->spec.host.empty()) {
      curl_easy_setopt(sim->easy, CURLOPT_INTERFACE, ("host!" + sim->spec.host).c_str());
    }
    Sim& added = *sim;
    byContainer_[added.spec.containerId] = sim.get();
    sims_.push_back(std::move(sim));
    ++live_;
    send(added);
  }
  for (const std::string& containerId : stops) {
    auto it = byContainer_.find(containerId);
    if (it == byContainer_.end() || it->second->gone) continue;
    Sim& sim = *it->second;
    if (sim.inRequest) {
      curl_multi_remove_handle(sim.shard->multi, sim.easy);
      sim.inRequest = false;
    }
    sim.gone = true;
    --live_;
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.exited;
  }
}

void ExecutorSwarm::schedule(Sim& sim, Clock::time_point at) {
  sim.timerAt = at;
  timers_.emplace(at, &sim);
}

void ExecutorSwarm::send(Sim& sim) {
  if (sim.gone) return;
  sim.timerAt = Clock::time_point::max();
  std::string path;
  if (!sim.registered) {
    rest::ExecutorRegistration registration;
    registration.executorId = sim.spec.executorId;
    registration.containerId = sim.spec.containerId;
    registration.host = sim.spec.host;
    registration.node = sim.spec.nodeId;
    registration.cores = sim.spec.cores;
    registration.pid = ::getpid();
    sim.body = rest::toJson(registration);
    path = "/api/v1/executors/register";
    sim.held = false;
  } else {
    rest::ExecutorSync sync;
    // A retried sync carries what the failed one did, as the executor's does.
    for (int64_t id : sim.done) sim.inFlight.push_back(id);
    sim.done.clear();
    sync.updates.reserve(sim.inFlight.size());
    for (int64_t id : sim.inFlight) {
      rest::TaskStatusUpdate update;
      update.taskId = id;
      update.state = rest::TaskState::kFinished;
      sync.updates.push_back(std::move(update));
    }
    sync.freeSlots = sim.slots;  // noop tasks are done at once: every slot is free
    sim.held = sync.updates.empty();
    sync.maxWaitMs = sim.held ? sim.heartbeatMs : 0;
    sim.body = rest::toJson(sync);
    path = "/api/v1/executors/" + sim.spec.executorId + "/sync";
  }
  sim.response.clear();
  curl_easy_setopt(sim.easy, CURLOPT_URL, (sim.spec.amAddress + path).c_str());
  curl_easy_setopt(sim.easy, CURLOPT_POSTFIELDS, sim.body.c_str());
  curl_easy_setopt(sim.easy, CURLOPT_POSTFIELDSIZE, static_cast<long>(sim.body.size()));
  curl_easy_setopt(sim.easy, CURLOPT_TIMEOUT_MS,
                   static_cast<long>((sim.held ? sim.heartbeatMs : 0) + kGiveUpAfter.count()));
  sim.sentAt = Clock::now();
  sim.inRequest = true;
  curl_multi_add_handle(sim.shard->multi, sim.easy);
}

void ExecutorSwarm::exitSim(Sim& sim, int status, const std::string& why) {
  sim.gone = true;
  --live_;
  if (status != 0) error(sim.spec.executorId + ": " + why);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.exited;
  }
  onExit_(sim.spec.containerId, status);
}

void ExecutorSwarm::finished(CURL* easy, CURLcode code) {
  Sim* found = nullptr;
  curl_easy_getinfo(easy, CURLINFO_PRIVATE, &found);
  Sim& sim = *found;
  curl_multi_remove_handle(sim.shard->multi, easy);
  sim.inRequest = false;
  if (sim.gone) return;
  const double elapsedMs = msSince(sim.sentAt);
  long status = 0;
  if (code == CURLE_OK) curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);

  if (code != CURLE_OK || status == 502 || status == 503 || status == 504) {
    const Clock::time_point now = Clock::now();
    if (sim.failures == 0) sim.failingSince = now;
    if (now - sim.failingSince > kGiveUpAfter) {
      exitSim(sim, 1,
              "the AM unreachable for 120 s: " + (code != CURLE_OK
                                                      ? std::string(curl_easy_strerror(code))
                                                      : "HTTP " + std::to_string(status)));
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.retries;
      if (stats_.errors.size() < kMaxErrors) {
        stats_.errors.push_back(sim.spec.executorId + " retries: " +
                                (code != CURLE_OK ? std::string(curl_easy_strerror(code))
                                                  : "HTTP " + std::to_string(status) + " " +
                                                        sim.response.substr(0, 200)));
      }
    }
    const Millis ceiling =
        std::min<Millis>(kMaxBackoff, kFirstBackoff * (int64_t{1} << std::min(sim.failures, 10)));
    static thread_local std::mt19937_64 jitter(std::random_device{}());
    const Millis delay = Millis(
        std::uniform_int_distribution<int64_t>(ceiling.count() / 2, ceiling.count())(jitter));
    ++sim.failures;
    schedule(sim, now + delay);
    return;
  }
  sim.failures = 0;
  if (status != 200) {
    exitSim(sim, 1,
            (sim.registered ? "sync: HTTP " : "register: HTTP ") + std::to_string(status) + " " +
                sim.response.substr(0, 300));
    return;
  }
  try {
    if (!sim.registered) {
      const rest::ExecutorRegistered reply =
          rest::executorRegisteredFromJson(rest::parseJson(sim.response));
      sim.registered = true;
      sim.slots = reply.taskSlots;
      sim.heartbeatMs = reply.heartbeatIntervalMs;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.registered;
      }
      send(sim);
      return;
    }
    const rest::ExecutorSyncReply reply =
        rest::executorSyncReplyFromJson(rest::parseJson(sim.response));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.syncs;
      (sim.held ? stats_.pollMs : stats_.syncMs).push_back(elapsedMs);
      stats_.tasksReported += static_cast<int64_t>(sim.inFlight.size());
    }
    sim.inFlight.clear();
    if (reply.shutdown) {
      exitSim(sim, 0, "released");
      return;
    }
    for (const rest::TaskLaunch& launch : reply.launches) sim.done.push_back(launch.taskId);
    if (!sim.done.empty()) {
      send(sim);
      return;
    }
    // Idle: after an early empty answer to a poll, wait out the interval rather than spin.
    const bool answeredEarly = Clock::now() < sim.sentAt + Millis(sim.heartbeatMs);
    if (sim.held && answeredEarly && reply.kills.empty()) {
      schedule(sim, sim.sentAt + Millis(sim.heartbeatMs));
    } else {
      send(sim);
    }
  } catch (const std::exception& e) {
    exitSim(sim, 1, std::string("unreadable answer: ") + e.what());
  }
}

void ExecutorSwarm::run() {
  std::vector<epoll_event> events(1024);
  int running = 0;
  while (!quit_) {
    drainCommands();
    Clock::time_point now = Clock::now();
    while (!timers_.empty() && timers_.begin()->first <= now) {
      Sim* sim = timers_.begin()->second;
      const Clock::time_point at = timers_.begin()->first;
      timers_.erase(timers_.begin());
      if (sim->timerAt == at && !sim->gone && !sim->inRequest) send(*sim);
    }
    Clock::time_point next = Clock::time_point::max();
    for (const auto& shard : shards_) next = std::min(next, shard->timer);
    if (!timers_.empty()) next = std::min(next, timers_.begin()->first);
    now = Clock::now();
    int waitMs = 100;
    if (next != Clock::time_point::max()) {
      waitMs = next <= now ? 0
                           : static_cast<int>(std::min<int64_t>(
                                 100, std::chrono::duration_cast<Millis>(next - now).count() + 1));
    }
    const int n = ::epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), waitMs);
    for (int i = 0; i < n; ++i) {
      const uint64_t data = events[i].data.u64;
      if (data == kWakeUp) {
        uint64_t value = 0;
        (void)!::read(wake_, &value, sizeof(value));
        continue;
      }
      int flags = 0;
      if (events[i].events & EPOLLIN) flags |= CURL_CSELECT_IN;
      if (events[i].events & EPOLLOUT) flags |= CURL_CSELECT_OUT;
      if (events[i].events & (EPOLLERR | EPOLLHUP)) flags |= CURL_CSELECT_ERR;
      Shard& shard = *shards_[data >> 32];
      curl_multi_socket_action(shard.multi, static_cast<curl_socket_t>(data & 0xffffffffu), flags,
                               &running);
    }
    now = Clock::now();
    for (const auto& shard : shards_) {
      if (now >= shard->timer) {
        shard->timer = Clock::time_point::max();
        curl_multi_socket_action(shard->multi, CURL_SOCKET_TIMEOUT, 0, &running);
      }
      int left = 0;
      while (CURLMsg* message = curl_multi_info_read(shard->multi, &left)) {
        if (message->msg == CURLMSG_DONE) finished(message->easy_handle, message->data.result);
      }
    }
  }
}

}  // namespace tide::bench

// rm_load: tide-rm under a load shaped like YARN's Scheduler Load Simulator (issue 16 item 3).
//
// It starts a real tide-rm (its REST server, cluster-secret authentication and a state store
// on), then plays N node managers and M application masters against it over HTTP:
// - each simulated node registers with the node credential and heartbeats every
//   heartbeatIntervalMs the RM hands out (1 s), listing every container it holds, RUNNING or
//   COMPLETE until the RM has seen the completion, as tide-nm does; it stops what the answer's
//   containersToStop names, and answers the RM's AM launches and DELETEs on its own address
//   (127.a.b.c:port, see node_listener.h; connections to the RM come from that address too);
// - M applications are submitted through the client API; each AM container the RM launches
//   on a simulated node becomes a simulated AM, which registers and calls allocate every
//   --am-interval-ms asking for --executors-per-am 1-core containers in all. Each container it
//   gets "starts" on its node, lives a random --lifetime-ms, then either exits by itself (its
//   node reports it COMPLETE, exit 0) or is released by its AM (the RM stops it through the
//   heartbeat or a DELETE); the AM asks for a replacement, so containers churn all the time.
// All HTTP of the simulation runs on one thread (libcurl multi), so the generator's own cost
// is one core at most; it reports its CPU beside tide-rm's, and how late it started
// heartbeats, so that it is plain which side saturates.
//
// Reported over a window after warm-up: allocations/s, heartbeats/s and their latency
// p50/p99/max (curl's total time: connection, request, answer), allocate latency, errors,
// tide-rm's CPU (utime+stime from /proc/PID/stat) and RSS and threads, the generator's CPU.
//
// Run: build/bin/rm_load --nodes=1000 --ams=100 [--seconds=20] [--warmup=5] (see --help)

#include <curl/curl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <queue>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bench/common/load_report.h"
#include "bench/common/option_fields.h"
#include "bench/rm/node_listener.h"
#include "bench/rm/wakeable_epoll.h"
#include "rest/http_client.h"
#include "rest/json.h"
#include "rest/messages/cluster.h"
#include "rest/messages/credentials.h"
#include "rest/messages/node.h"

namespace tide::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

int64_t nowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             SteadyClock::now().time_since_epoch())
      .count();
}

struct Options {
  std::string rmBinary;
  int nodes = 1000;
  int ams = 100;
  int executorsPerAm = 20;
  int nodeCores = 8;
  int64_t nodeMemoryMb = 16384;
  int seconds = 20;
  int warmup = 5;
  int64_t amIntervalMs = 1000;
  int64_t lifetimeMinMs = 2000;
  int64_t lifetimeMaxMs = 8000;
  std::vector<std::string> rmConf;  // extra --conf for tide-rm
  std::string workDir;              // default: a fresh directory under /tmp
  std::string jsonOut;              // also write the figures here as JSON
};

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << (problem.empty() ? "" : "rm_load: " + problem + "\n")
            << "usage: rm_load [--nodes=N] [--ams=M] [--executors-per-am=E] [--seconds=S]\n"
               "               [--warmup=S] [--node-cores=C] [--node-memory-mb=MB]\n"
               "               [--am-interval-ms=MS] [--lifetime-ms=MIN:MAX] [--rm=PATH]\n"
               "               [--conf=k=v]... [--work-dir=DIR] [--json=FILE]\n";
  std::exit(problem.empty() ? 0 : 2);
}

// The --name=VALUE options that set one field, by the field's type.
const OptionField<Options, int> kIntOptions[] = {{"nodes", &Options::nodes},
                                                 {"ams", &Options::ams},
                                                 {"executors-per-am", &Options::executorsPerAm},
                                                 {"node-cores", &Options::nodeCores},
                                                 {"seconds", &Options::seconds},
                                                 {"warmup", &Options::warmup}};
const OptionField<Options, int64_t> kInt64Options[] = {{"node-memory-mb", &Options::nodeMemoryMb},
                                                       {"am-interval-ms", &Options::amIntervalMs}};
const OptionField<Options, std::string> kStringOptions[] = {
    {"rm", &Options::rmBinary}, {"work-dir", &Options::workDir}, {"json", &Options::jsonOut}};

Options parseOptions(int argc, char** argv) {
  Options options;
  char self[4096] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : "";
  options.rmBinary = dir.substr(0, dir.rfind('/') + 1) + "tide-rm";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") usage("");
    const size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) usage("unknown argument " + arg);
    const std::string key = arg.substr(2, eq - 2);
    const std::string value = arg.substr(eq + 1);
    try {
      if (assignOption(kIntOptions, key, value, options) ||
          assignOption(kInt64Options, key, value, options) ||
          assignOption(kStringOptions, key, value, options)) {
        continue;
      }
      if (key == "lifetime-ms") {
        const size_t colon = value.find(':');
        options.lifetimeMinMs = std::stoll(value.substr(0, colon));
        options.lifetimeMaxMs = colon == std::string::npos ? options.lifetimeMinMs
                                                           : std::stoll(value.substr(colon + 1));
      } else if (key == "conf") {
        options.rmConf.push_back(value);
      } else {
        usage("unknown option --" + key);
      }
    } catch (const std::logic_error&) {
      usage("--" + key + ": not a number: " + value);
    }
  }
  if (options.nodes < 1 || options.nodes > 60000) usage("--nodes: 1..60000");
  if (options.ams < 0 || options.lifetimeMinMs < 1 || options.lifetimeMaxMs < options.lifetimeMinMs)
    usage("--ams >= 0 and --lifetime-ms=MIN:MAX with 1 <= MIN <= MAX");
  return options;
}

// ---------------------------------------------------------------------------------------------
// tide-rm as a child process, and what /proc says of it.

struct RmProcess {
  pid_t pid = 0;
  int port = 0;
  std::string secret;
};

RmProcess startRm(const Options& options) {
  const std::string portFile = options.workDir + "/rm.port";
  std::vector<std::string> args = {options.rmBinary,
                                   "--conf",
                                   "rm.port=0",
                                   "--conf",
                                   "rm.secretFile=" + options.workDir + "/rm.secret",
                                   "--conf",
                                   "rm.stateStore.dir=" + options.workDir + "/rm-state",
                                   "--port-file",
                                   portFile};
  for (const std::string& conf : options.rmConf) {
    args.push_back("--conf");
    args.push_back(conf);
  }
  RmProcess rm;
  rm.pid = ::fork();
  if (rm.pid == 0) {
    const std::string log = options.workDir + "/rm.log";
    std::FILE* out = std::freopen(log.c_str(), "w", stderr);
    if (out == nullptr) std::_Exit(127);
    ::dup2(::fileno(stderr), STDOUT_FILENO);
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::_Exit(127);
  }
  const auto deadline = SteadyClock::now() + std::chrono::seconds(20);
  while (SteadyClock::now() < deadline) {
    std::ifstream in(portFile);
    if (in >> rm.port && rm.port > 0) break;
    int status = 0;
    if (::waitpid(rm.pid, &status, WNOHANG) == rm.pid) {
      throw std::runtime_error("tide-rm exited at start; see " + options.workDir + "/rm.log");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (rm.port <= 0) throw std::runtime_error("tide-rm did not write its port within 20 s");
  rm.secret = rest::readSecretFile(options.workDir + "/rm.secret");
  return rm;
}

void stopRm(const RmProcess& rm) {
  ::kill(rm.pid, SIGTERM);
  int status = 0;
  for (int i = 0; i < 500 && ::waitpid(rm.pid, &status, WNOHANG) != rm.pid; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

double loadAverage() {
  double load[1] = {0};
  return ::getloadavg(load, 1) == 1 ? load[0] : -1;
}

// ---------------------------------------------------------------------------------------------
// The simulation

// The latencies of `micros`, in ms.
Latencies latenciesMs(const std::vector<int64_t>& micros) {
  std::vector<double> ms;
  ms.reserve(micros.size());
  for (const int64_t us : micros) ms.push_back(static_cast<double>(us) / 1000.0);
  return latenciesOf(std::move(ms));
}

struct Stats {
  std::vector<int64_t> heartbeatUs;
  std::vector<int64_t> allocateUs;
  std::vector<int64_t> lateUs;  // how long after its due time each heartbeat went out
  int64_t heartbeatErrors = 0;
  int64_t allocateErrors = 0;
  int64_t allocations = 0;
  int64_t releases = 0;
  int64_t completionsSeen = 0;  // completed containers AMs were told of
  int64_t reRegisters = 0;
  std::map<std::string, int64_t> errorKinds;
};

// One HTTP call in flight; every node and AM has one easy handle, reused.
struct Call {
  CURL* easy = nullptr;
  std::string base;  // http://<own name for tide-rm>:port
  curl_slist* resolve = nullptr;
  std::string url;
  std::string body;
  std::string response;
  curl_slist* headers = nullptr;
  int64_t startedUs = 0;
  int64_t dueUs = 0;
  bool inFlight = false;
};

struct SimContainer {
  bool running = true;
  int exitStatus = 0;
  rest::Resource resource;
  int64_t endsAtUs = 0;  // it exits by itself then (0: never)
};

struct SimNode {
  std::string address;  // 127.a.b.c
  std::string nodeId;
  std::string secret;
  bool registered = false;
  bool ready = false;  // heartbeated once after registering
  std::map<std::string, SimContainer> containers;
  std::vector<std::string> completionsSent;
  Call call;
};

struct SimExecutor {
  size_t node = 0;
  int64_t endsAtUs = 0;
  bool releasedByAm = false;
  bool released = false;
};

struct SimAm {
  std::string attemptId;
  std::string token;
  size_t node = 0;
  bool registered = false;
  int64_t responseId = 0;
  std::map<std::string, SimExecutor> held;  // granted, completion not yet heard of
  std::vector<std::string> releasesSent;
  Call call;
};

size_t writeBody(char* data, size_t size, size_t count, void* target) {
  static_cast<std::string*>(target)->append(data, size * count);
  return size * count;
}

class Simulation {
 public:
  Simulation(const Options& options, const RmProcess& rm)
      : options_(options), rm_(rm), rng_(12345) {
    rmUrl_ = "http://127.0.0.1:" + std::to_string(rm.port);
    nodeCredential_ = rest::nodeCredentialOf(rm.secret);
    multi_ = curl_multi_init();
    // Every simulated node keeps its own connection, as tide-nm does.
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS,
                      static_cast<long>(options.nodes + options.ams + 16));
    // curl's socket interface over epoll: each event touches only the transfer it is for
    // (curl_multi_perform walks every transfer in flight, which made the generator the
    // bottleneck once responses slowed down and transfers piled up).
    curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &Simulation::onSocket);
    curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &Simulation::onTimer);
    curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
    std::vector<std::string> addresses;
    for (int i = 0; i < options.nodes; ++i) {
      SimNode node;
      // 127.0.0.1 is tide-rm's own; nodes take 127.10.0.1 onwards.
      node.address = "127." + std::to_string(10 + i / 62500) + "." +
                     std::to_string((i / 250) % 250) + "." + std::to_string(i % 250 + 1);
      addresses.push_back(node.address);
      nodes_.push_back(std::move(node));
    }
    listener_ = std::make_unique<NodeListener>(
        addresses, [this](const NodeRequest& request) { return onNodeRequest(request); });
    for (size_t i = 0; i < nodes_.size(); ++i) {
      nodeIndex_[nodes_[i].address + ":" + std::to_string(listener_->port())] = i;
      initCall(nodes_[i].call, nodes_[i].address, kNode, i);
      // Node managers come up over the first second.
      schedule(kNode, i, nowUs() + static_cast<int64_t>(i) * 1000000 / options.nodes);
    }
    listener_->start();
  }

  ~Simulation() {
    listener_->stop();
    for (SimNode& node : nodes_) freeCall(node.call);
    for (SimAm& am : ams_) freeCall(am.call);
    curl_multi_cleanup(multi_);
  }

  // Runs the simulation until `untilUs` or until `done()` (asked about every 100 ms) holds;
  // returns whether it did.
  template <typename Done>
  bool runUntil(int64_t untilUs, Done&& done) {
    int64_t nextCheck = 0;
    epoll_event events[256];
    int running = 0;
    while (nowUs() < untilUs) {
      takeNodeEvents();
      startDueCalls();
      int64_t now = nowUs();
      if (curlDeadlineUs_ >= 0 && now >= curlDeadlineUs_) {
        curlDeadlineUs_ = -1;
        curl_multi_socket_action(multi_, CURL_SOCKET_TIMEOUT, 0, &running);
      }
      finishCalls();
      now = nowUs();
      if (now >= nextCheck) {
        if (done()) return true;
        nextCheck = now + 100000;
      }
      int64_t waitUs = 100000;
      if (!due_.empty()) waitUs = std::min(waitUs, due_.top().atUs - now);
      if (curlDeadlineUs_ >= 0) waitUs = std::min(waitUs, curlDeadlineUs_ - now);
      const int ready =
          ::epoll_wait(epoll_.fd(), events, 256,
                       static_cast<int>(std::clamp<int64_t>((waitUs + 999) / 1000, 0, 100)));
      for (int i = 0; i < ready; ++i) {
        if (events[i].data.u64 == kWakeTag) {
          epoll_.clearWakes();
          continue;
        }
        const int fd = static_cast<int>(events[i].data.u64);
        const uint32_t what = events[i].events;
        const int mask = ((what & EPOLLIN) ? CURL_CSELECT_IN : 0) |
                         ((what & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
                         ((what & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
        curl_multi_socket_action(multi_, fd, mask, &running);
      }
      finishCalls();
    }
    return false;
  }

  int readyNodes() const { return readyNodes_; }
  int registeredAms() const { return registeredAms_; }
  Stats& stats() { return stats_; }
  void resetStats() { stats_ = Stats{}; }
  int liveExecutors() const {
    int live = 0;
    for (const SimAm& am : ams_) live += static_cast<int>(am.held.size());
    return live;
  }

 private:
  enum Kind { kNode, kAm };
  struct Due {
    int64_t atUs;
    Kind kind;
    size_t index;
    bool operator>(const Due& other) const { return atUs > other.atUs; }
  };

  static int onSocket(CURL*, curl_socket_t sock, int what, void* self, void*) {
    const int epoll = static_cast<Simulation*>(self)->epoll_.fd();
    if (what == CURL_POLL_REMOVE) {
      ::epoll_ctl(epoll, EPOLL_CTL_DEL, sock, nullptr);
      return 0;
    }
    epoll_event event{};
    event.events =
        ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
    event.data.u64 = static_cast<uint64_t>(sock);
    if (::epoll_ctl(epoll, EPOLL_CTL_MOD, sock, &event) != 0) {
      ::epoll_ctl(epoll, EPOLL_CTL_ADD, sock, &event);
    }
    return 0;
  }

  static int onTimer(CURLM*, long timeoutMs, void* self) {
    static_cast<Simulation*>(self)->curlDeadlineUs_ =
        timeoutMs < 0 ? -1 : nowUs() + timeoutMs * 1000;
    return 0;
  }

  void initCall(Call& call, const std::string& fromAddress, Kind kind, size_t index) {
    call.easy = curl_easy_init();
    curl_easy_setopt(call.easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(call.easy, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(call.easy, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(call.easy, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
    // Each simulated host connects from its own address, as real node managers do.
    const std::string interface = "host!" + fromAddress;
    curl_easy_setopt(call.easy, CURLOPT_INTERFACE, interface.c_str());
    // Each caller reaches tide-rm under a name of its own (resolved to 127.0.0.1), so that
    // curl keeps its connection apart: all under one host name, curl looked through (and
    // polled) every cached connection to that host for each request, which made the generator
    // quadratic in nodes.
    const std::string name = std::string(kind == kNode ? "n" : "a") + std::to_string(index) + ".rm";
    const std::string port = std::to_string(rm_.port);
    call.base = "http://" + name + ":" + port;
    call.resolve = curl_slist_append(nullptr, (name + ":" + port + ":127.0.0.1").c_str());
    curl_easy_setopt(call.easy, CURLOPT_RESOLVE, call.resolve);
    // Those names never expire: otherwise curl walks its whole DNS cache (a name per caller)
    // to prune it at every request.
    curl_easy_setopt(call.easy, CURLOPT_DNS_CACHE_TIMEOUT, -1L);
    curl_easy_setopt(call.easy, CURLOPT_WRITEFUNCTION, writeBody);
    curl_easy_setopt(call.easy, CURLOPT_WRITEDATA, &call.response);
    // Whose call it is: the kind in the top bit, the index below (a pointer would move).
    const uintptr_t owner = (static_cast<uintptr_t>(kind) << 63) | index;
    curl_easy_setopt(call.easy, CURLOPT_PRIVATE, reinterpret_cast<char*>(owner));
  }

  static void freeCall(Call& call) {
    curl_slist_free_all(call.headers);
    curl_slist_free_all(call.resolve);
    curl_easy_cleanup(call.easy);
  }

  void schedule(Kind kind, size_t index, int64_t atUs) {
    (kind == kNode ? nodes_[index].call : ams_[index].call).dueUs = atUs;
    due_.push({atUs, kind, index});
  }

  void post(Call& call, const std::string& path, std::string body, const std::string& token) {
    call.url = call.base + path;
    call.body = std::move(body);
    call.response.clear();
    curl_slist_free_all(call.headers);
    call.headers = curl_slist_append(nullptr, "Content-Type: application/json");
    call.headers = curl_slist_append(call.headers, ("Authorization: Bearer " + token).c_str());
    call.headers = curl_slist_append(call.headers, "Expect:");
    curl_easy_setopt(call.easy, CURLOPT_URL, call.url.c_str());
    curl_easy_setopt(call.easy, CURLOPT_HTTPHEADER, call.headers);
    curl_easy_setopt(call.easy, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(call.body.size()));
    curl_easy_setopt(call.easy, CURLOPT_POSTFIELDS, call.body.data());
    call.startedUs = nowUs();
    call.inFlight = true;
    curl_multi_add_handle(multi_, call.easy);
  }

  void startDueCalls() {
    const int64_t now = nowUs();
    while (!due_.empty() && due_.top().atUs <= now) {
      const Due due = due_.top();
      due_.pop();
      if (due.kind == kNode) {
        SimNode& node = nodes_[due.index];
        if (node.call.inFlight || node.call.dueUs != due.atUs) continue;
        if (node.registered) stats_.lateUs.push_back(now - due.atUs);
        startNodeCall(node, now);
      } else {
        SimAm& am = ams_[due.index];
        if (am.call.inFlight || am.call.dueUs != due.atUs) continue;
        startAmCall(am, now);
      }
    }
  }

  void startNodeCall(SimNode& node, int64_t now) {
    if (!node.registered) {
      rest::NodeRegistration registration;
      registration.host = node.address;
      registration.port = listener_->port();
      registration.capability = rest::Resource{options_.nodeMemoryMb, options_.nodeCores};
      post(node.call, "/ws/v1/nm/register", rest::toJson(registration), nodeCredential_);
      return;
    }
    rest::NodeHeartbeat beat;
    node.completionsSent.clear();
    for (auto& [id, container] : node.containers) {
      if (container.running && container.endsAtUs != 0 && container.endsAtUs <= now) {
        container.running = false;  // the executor's process exited by itself
        container.exitStatus = 0;
      }
      rest::ContainerStatus status;
      status.containerId = id;
      status.state = container.running ? "RUNNING" : "COMPLETE";
      status.exitStatus = container.exitStatus;
      status.resource = container.resource;
      if (!container.running) node.completionsSent.push_back(id);
      beat.containers.push_back(std::move(status));
    }
    post(node.call, "/ws/v1/nm/" + node.nodeId + "/heartbeat", rest::toJson(beat), node.secret);
  }

  void startAmCall(SimAm& am, int64_t now) {
    if (!am.registered) {
      rest::RegisterApplicationMasterRequest request;
      request.host = nodes_[am.node].address;
      request.port = 4040;
      post(am.call, "/ws/v1/am/" + am.attemptId + "/register", rest::toJson(request), am.token);
      return;
    }
    rest::AllocateRequest request;
    request.responseId = am.responseId;
    for (auto& [id, executor] : am.held) {
      if (executor.releasedByAm && !executor.released && executor.endsAtUs <= now) {
        request.releases.push_back(id);
      }
    }
    am.releasesSent = request.releases;
    rest::ResourceRequest ask;
    ask.priority = 1;
    ask.resource = rest::Resource{1024, 1};
    ask.numContainers = std::max(0, options_.executorsPerAm - static_cast<int>(am.held.size()));
    request.asks.push_back(ask);
    post(am.call, "/ws/v1/am/" + am.attemptId + "/allocate", rest::toJson(request), am.token);
  }

  void finishCalls() {
    int left = 0;
    while (CURLMsg* message = curl_multi_info_read(multi_, &left)) {
      if (message->msg != CURLMSG_DONE) continue;
      CURL* easy = message->easy_handle;
      const CURLcode result = message->data.result;
      char* ownerTag = nullptr;
      curl_easy_getinfo(easy, CURLINFO_PRIVATE, &ownerTag);
      const uintptr_t owner = reinterpret_cast<uintptr_t>(ownerTag);
      const Kind kind = (owner >> 63) != 0 ? kAm : kNode;
      const size_t index = static_cast<size_t>(owner & ~(uintptr_t{1} << 63));
      Call* call = kind == kNode ? &nodes_[index].call : &ams_[index].call;
      long status = 0;
      curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
      curl_multi_remove_handle(multi_, easy);
      call->inFlight = false;
      const int64_t now = nowUs();
      const int64_t tookUs = now - call->startedUs;
      const std::string error = result != CURLE_OK
                                    ? std::string("transport: ") + curl_easy_strerror(result)
                                : status != 200 ? "HTTP " + std::to_string(status)
                                                : "";
      if (kind == kNode) {
        finishNodeCall(index, error, tookUs, now);
      } else {
        finishAmCall(index, error, tookUs, now);
      }
    }
  }

  void countError(const std::string& what, const std::string& error, const std::string& body) {
    std::string key = what + ": " + error;
    if (error.rfind("HTTP", 0) == 0) key += " " + body.substr(0, 120);
    ++stats_.errorKinds[key];
  }

  void finishNodeCall(size_t index, const std::string& error, int64_t tookUs, int64_t now) {
    SimNode& node = nodes_[index];
    const int64_t interval = heartbeatIntervalUs_;
    if (!node.registered) {
      if (!error.empty()) {
        countError("register", error, node.call.response);
        schedule(kNode, index, now + interval);
        return;
      }
      const rest::NodeRegistrationResponse answer =
          rest::nodeRegistrationResponseFromJson(rest::parseJson(node.call.response));
      node.nodeId = answer.nodeId;
      node.secret = answer.nodeSecret;
      heartbeatIntervalUs_ = answer.heartbeatIntervalMs * 1000;
      node.registered = true;
      schedule(kNode, index, now);  // heartbeat at once, as tide-nm
      return;
    }
    stats_.heartbeatUs.push_back(tookUs);
    if (!error.empty()) {
      ++stats_.heartbeatErrors;
      countError("heartbeat", error, node.call.response);
      schedule(kNode, index, now + interval);
      return;
    }
    const rest::NodeHeartbeatResponse answer =
        rest::nodeHeartbeatResponseFromJson(rest::parseJson(node.call.response));
    if (answer.reRegister) {
      ++stats_.reRegisters;
      if (node.ready) --readyNodes_;
      node.registered = node.ready = false;
      schedule(kNode, index, now);
      return;
    }
    if (!node.ready) {
      node.ready = true;
      ++readyNodes_;
    }
    for (const std::string& id : node.completionsSent) node.containers.erase(id);
    for (const std::string& id : answer.containersToStop) stopContainer(node, id);
    schedule(kNode, index, now + interval);
  }

  static void stopContainer(SimNode& node, const std::string& id) {
    auto found = node.containers.find(id);
    if (found == node.containers.end() || !found->second.running) return;
    found->second.running = false;
    found->second.exitStatus = rest::exit_status::kKilledByAppMaster;
  }

  void finishAmCall(size_t index, const std::string& error, int64_t tookUs, int64_t now) {
    SimAm& am = ams_[index];
    if (!error.empty()) {
      ++stats_.allocateErrors;
      countError(am.registered ? "allocate" : "register AM", error, am.call.response);
      schedule(kAm, index, now + options_.amIntervalMs * 1000);
      return;
    }
    if (!am.registered) {
      am.registered = true;
      ++registeredAms_;
      schedule(kAm, index, now);
      return;
    }
    stats_.allocateUs.push_back(tookUs);
    const rest::AllocateResponse answer =
        rest::allocateResponseFromJson(rest::parseJson(am.call.response));
    am.responseId = answer.responseId;
    for (const std::string& id : am.releasesSent) {
      auto found = am.held.find(id);
      if (found != am.held.end()) found->second.released = true;
    }
    stats_.releases += static_cast<int64_t>(am.releasesSent.size());
    std::uniform_int_distribution<int64_t> lifetime(options_.lifetimeMinMs * 1000,
                                                    options_.lifetimeMaxMs * 1000);
    for (const rest::Container& granted : answer.allocatedContainers) {
      ++stats_.allocations;
      auto node = nodeIndex_.find(granted.nodeId);
      if (node == nodeIndex_.end()) continue;
      SimExecutor executor;
      executor.node = node->second;
      executor.endsAtUs = now + lifetime(rng_);
      executor.releasedByAm = (rng_() & 1) != 0;
      // The AM starts it on its node at once (that call goes to the node, not to tide-rm).
      SimContainer container;
      container.resource = granted.resource;
      if (!executor.releasedByAm) container.endsAtUs = executor.endsAtUs;
      nodes_[executor.node].containers[granted.id] = container;
      am.held[granted.id] = executor;
    }
    for (const rest::CompletedContainer& done : answer.completedContainers) {
      ++stats_.completionsSeen;
      am.held.erase(done.containerId);
    }
    schedule(kAm, index, now + options_.amIntervalMs * 1000);
  }

  // On the listener's thread: the RM launching an AM container, or stopping a container.
  int onNodeRequest(const NodeRequest& request) {
    std::lock_guard<std::mutex> lock(eventsMutex_);
    events_.push_back(request);
    epoll_.wake();
    return request.method == "POST" ? 201 : 200;
  }

  void takeNodeEvents() {
    std::vector<NodeRequest> events;
    {
      std::lock_guard<std::mutex> lock(eventsMutex_);
      events.swap(events_);
    }
    for (const NodeRequest& request : events) {
      SimNode& node = nodes_[request.node];
      if (request.method == "DELETE") {
        stopContainer(node, request.path.substr(request.path.rfind('/') + 1));
        continue;
      }
      const rest::ContainerLaunchRequest launch =
          rest::containerLaunchRequestFromJson(rest::parseJson(request.body));
      SimContainer container;
      container.resource = launch.resource;
      node.containers[launch.containerId] = container;
      // A reallocation would move the response buffers curl writes into.
      if (ams_.size() == ams_.capacity()) continue;
      SimAm am;
      am.attemptId = launch.environment.at("TIDE_APP_ATTEMPT_ID");
      am.token = launch.environment.at("TIDE_AM_TOKEN");
      am.node = request.node;
      ams_.push_back(std::move(am));
      initCall(ams_.back().call, node.address, kAm, ams_.size() - 1);
      schedule(kAm, ams_.size() - 1, nowUs());
    }
  }

 public:
  void reserveAms(size_t count) { ams_.reserve(count); }

 private:
  const Options& options_;
  const RmProcess& rm_;
  std::string rmUrl_;
  std::string nodeCredential_;
  std::mt19937_64 rng_;
  CURLM* multi_ = nullptr;
  // Epoll tags: a curl socket's is its descriptor; the wake's (the listener has news) is none.
  static constexpr uint64_t kWakeTag = UINT64_MAX;
  WakeableEpoll epoll_{kWakeTag};
  int64_t curlDeadlineUs_ = -1;  // when curl wants CURL_SOCKET_TIMEOUT (-1: no time-out set)
  std::vector<SimNode> nodes_;
  std::vector<SimAm> ams_;
  std::unordered_map<std::string, size_t> nodeIndex_;
  std::unique_ptr<NodeListener> listener_;
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_;
  int64_t heartbeatIntervalUs_ = 1000000;
  int readyNodes_ = 0;
  int registeredAms_ = 0;
  Stats stats_;
  std::mutex eventsMutex_;
  std::vector<NodeRequest> events_;
};

// Submits `count` applications through the client API (on its own thread: each is two
// blocking calls).
void submitApplications(const std::string& rmUrl, const std::string& adminToken, int count) {
  rest::HttpClientOptions clientOptions;
  clientOptions.defaultHeaders = {{"Authorization", "Bearer " + adminToken}};
  rest::HttpClient client(rmUrl, clientOptions);
  for (int i = 0; i < count; ++i) {
    const rest::NewApplicationResponse created = rest::newApplicationResponseFromJson(
        client.postJson("/ws/v1/cluster/apps/new-application", "{}"));
    rest::ApplicationSubmission submission;
    submission.applicationId = created.applicationId;
    submission.applicationName = "sls-" + std::to_string(i);
    submission.command = "simulated";
    submission.resource = rest::Resource{1024, 1};
    submission.environment = {{"TIDE_APP_SECRET", std::string(64, 'a' + i % 26)}};
    client.request("POST", "/ws/v1/cluster/apps", rest::toJson(submission),
                   {{"Content-Type", "application/json"}});
  }
}

// `name`P50Ms, `name`P99Ms and `name`MaxMs, flat, as rm_load_sweep.sh reads them.
void writeLatencyFields(rest::JsonWriter& w, const std::string& name, const Latencies& latencies) {
  w.field(name + "P50Ms", latencies.p50)
      .field(name + "P99Ms", latencies.p99)
      .field(name + "MaxMs", latencies.max);
}

void printReport(const Options& options, const Simulation& sim, const Stats& stats,
                 double windowSeconds, const ProcessSample& rmBefore, const ProcessSample& rmAfter,
                 double generatorCpu, double loadBefore, double loadAfter) {
  const Latencies heartbeat = latenciesMs(stats.heartbeatUs);
  const Latencies allocate = latenciesMs(stats.allocateUs);
  const Latencies late = latenciesMs(stats.lateUs);
  const double rmCpu = (rmAfter.cpuSeconds - rmBefore.cpuSeconds) / windowSeconds;
  const double heartbeatsPerSecond = static_cast<double>(stats.heartbeatUs.size()) / windowSeconds;
  const double allocationsPerSecond = static_cast<double>(stats.allocations) / windowSeconds;
  // What one request costs tide-rm, whatever else runs on the machine: its capacity.
  const double requests = static_cast<double>(stats.heartbeatUs.size() + stats.allocateUs.size());
  const double rmCpuPerRequestUs =
      requests > 0 ? (rmAfter.cpuSeconds - rmBefore.cpuSeconds) / requests * 1e6 : 0;
  char line[2048];
  std::snprintf(
      line, sizeof line,
      "nodes=%d ams=%d ready_nodes=%d registered_ams=%d live_executors=%d window=%.1fs\n"
      "  allocations/s=%.1f releases/s=%.1f completions_seen/s=%.1f\n"
      "  heartbeats/s=%.1f heartbeat_ms p50=%.2f p99=%.2f max=%.2f errors=%lld reregisters=%lld\n"
      "  allocate_ms p50=%.2f p99=%.2f max=%.2f errors=%lld\n"
      "  tide-rm cpu=%.0f%% of a core (%.0f us per request) rss=%lld MiB peak_rss=%lld MiB "
      "threads=%d\n"
      "  generator cpu=%.0f%% of a core, heartbeat start lateness p50=%.2f p99=%.2f ms\n"
      "  load average %.2f -> %.2f (2 cores)\n",
      options.nodes, options.ams, sim.readyNodes(), sim.registeredAms(), sim.liveExecutors(),
      windowSeconds, allocationsPerSecond, static_cast<double>(stats.releases) / windowSeconds,
      static_cast<double>(stats.completionsSeen) / windowSeconds, heartbeatsPerSecond,
      heartbeat.p50, heartbeat.p99, heartbeat.max, static_cast<long long>(stats.heartbeatErrors),
      static_cast<long long>(stats.reRegisters), allocate.p50, allocate.p99, allocate.max,
      static_cast<long long>(stats.allocateErrors), rmCpu * 100, rmCpuPerRequestUs,
      static_cast<long long>(rmAfter.rssKib / 1024),
      static_cast<long long>(rmAfter.peakRssKib / 1024), rmAfter.threads,
      generatorCpu / windowSeconds * 100, late.p50, late.p99, loadBefore, loadAfter);
  std::cout << line;
  for (const auto& [kind, count] : stats.errorKinds) {
    std::cout << "  error x" << count << ": " << kind << "\n";
  }
  if (options.jsonOut.empty()) return;
  std::ofstream json(options.jsonOut, std::ios::app);
  rest::JsonWriter w;
  w.startObject()
      .field("nodes", options.nodes)
      .field("ams", options.ams)
      .field("windowSeconds", windowSeconds)
      .field("allocationsPerSecond", allocationsPerSecond)
      .field("heartbeatsPerSecond", heartbeatsPerSecond);
  writeLatencyFields(w, "heartbeat", heartbeat);
  w.field("heartbeatErrors", stats.heartbeatErrors);
  writeLatencyFields(w, "allocate", allocate);
  w.field("rmCpuCores", rmCpu)
      .field("rmCpuPerRequestUs", rmCpuPerRequestUs)
      .field("rmRssMiB", rmAfter.rssKib / 1024)
      .field("rmThreads", rmAfter.threads)
      .field("generatorCpuCores", generatorCpu / windowSeconds)
      .field("loadAverage", loadBefore)
      .endObject();
  json << w.str() << "\n";
}

int run(const Options& givenOptions) {
  Options options = givenOptions;
  if (options.workDir.empty()) {
    char pattern[] = "/tmp/rm_load.XXXXXX";
    if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    options.workDir = pattern;
  } else {
    ::mkdir(options.workDir.c_str(), 0700);
  }
  // Two sockets per node (its connection to tide-rm, its listener) and tide-rm's side.
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &files);

  curl_global_init(CURL_GLOBAL_DEFAULT);
  const RmProcess rm = startRm(options);
  std::cout << "tide-rm pid " << rm.pid << " on port " << rm.port << ", work dir "
            << options.workDir << std::endl;
  const auto secondsFromNow = [](double seconds) {
    return nowUs() + static_cast<int64_t>(seconds * 1e6);
  };
  const auto never = [] { return false; };
  int exitCode = 0;
  try {
    Simulation sim(options, rm);
    sim.reserveAms(static_cast<size_t>(options.ams) * 4 + 4);  // later attempts too
    if (!sim.runUntil(secondsFromNow(60), [&] { return sim.readyNodes() == options.nodes; })) {
      std::cout << "only " << sim.readyNodes() << " of " << options.nodes
                << " nodes ready after 60 s\n";
    }
    std::exception_ptr submitFailure;
    std::thread submitter([&] {
      try {
        submitApplications("http://127.0.0.1:" + std::to_string(rm.port), rm.secret, options.ams);
      } catch (...) {
        submitFailure = std::current_exception();
      }
    });
    const bool amsUp =
        sim.runUntil(secondsFromNow(60), [&] { return sim.registeredAms() == options.ams; });
    submitter.join();
    if (submitFailure) std::rethrow_exception(submitFailure);
    if (!amsUp) std::cout << "only " << sim.registeredAms() << " AMs registered after 60 s\n";
    sim.runUntil(secondsFromNow(options.warmup), never);

    sim.resetStats();
    const double loadBefore = loadAverage();
    const ProcessSample before = sampleProcess(rm.pid);
    const double generatorBefore = selfCpuSeconds();
    const int64_t windowStart = nowUs();
    sim.runUntil(secondsFromNow(options.seconds), never);
    const double window = static_cast<double>(nowUs() - windowStart) / 1e6;
    const ProcessSample after = sampleProcess(rm.pid);
    const double generatorCpu = selfCpuSeconds() - generatorBefore;
    printReport(options, sim, sim.stats(), window, before, after, generatorCpu, loadBefore,
                loadAverage());
  } catch (const std::exception& error) {
    std::cerr << "rm_load: " << error.what() << "\n";
    exitCode = 1;
  }
  stopRm(rm);
  return exitCode;
}

}  // namespace
}  // namespace tide::bench

int main(int argc, char** argv) {
  const tide::bench::Options options = tide::bench::parseOptions(argc, argv);
  try {
    return tide::bench::run(options);
  } catch (const std::exception& error) {
    std::cerr << "rm_load: " << error.what() << "\n";
    return 1;
  }
}

// Many executors per AM (issue 16, bench/README.md "Scale"): a real tide-rm with one real
// tide-nm that runs the real tide-am, and --nodes simulated node managers (fake_node.h) whose
// containers are simulated executors (executor_swarm.h): --executors of them, --cores task slots
// each, running builtin noop tasks. The AM is submitted in session mode with a one-task job and
// a fixed executor count (dynamicAllocation.enabled=false, executor.instances=--executors); once
// every executor has registered it measures
//   idle: --idle-seconds with every executor long-polling, nothing to run;
//   busy: --busy-seconds of a stage of --tasks noop tasks (after --warmup-seconds of it);
// and for each: the executors' sync round trip p50/p99 (syncs that report tasks; polls apart),
// tasks/s acknowledged by the AM, the AM's CPU (utime+stime from /proc/<pid>/stat) and VmRSS and
// threads, the allocation tick from the AM's /metrics histogram, this generator's own CPU, and the
// load average. Prints one JSON document. Not a test: run it by hand (see bench/README.md).
//
//   build/bin/executor_load [--executors 2000] [--cores 4] [--nodes 50] [--tasks 100000000]
//       [--idle-seconds 10] [--busy-seconds 20] [--warmup-seconds 3] [--conf KEY=VALUE ...]

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/load_report.h"
#include "bench/common/option_fields.h"
#include "bench/scale/executor_swarm.h"
#include "bench/scale/fake_node.h"
#include "common/child_process.h"
#include "common/config.h"
#include "deploy/am_submission.h"
#include "deploy/cluster_client.h"
#include "deploy/embedded_cluster.h"
#include "rest/json.h"
#include "rest/messages/credentials.h"

namespace tide::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int executors = 2000;
  int cores = 4;
  int nodes = 50;
  int64_t tasks = 100000000;
  int idleSeconds = 10;
  int busySeconds = 20;
  int warmupSeconds = 3;
  std::vector<std::pair<std::string, std::string>> conf;
};

// The --name VALUE options that set one field, by the field's type.
const OptionField<Options, int> kIntOptions[] = {{"executors", &Options::executors},
                                                 {"cores", &Options::cores},
                                                 {"nodes", &Options::nodes},
                                                 {"idle-seconds", &Options::idleSeconds},
                                                 {"busy-seconds", &Options::busySeconds},
                                                 {"warmup-seconds", &Options::warmupSeconds}};
const OptionField<Options, int64_t> kInt64Options[] = {{"tasks", &Options::tasks}};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::string key = arg.rfind("--", 0) == 0 ? arg.substr(2) : "";
    if (key != "conf" && !hasOption(kIntOptions, key) && !hasOption(kInt64Options, key)) {
      throw std::invalid_argument("unknown argument " + arg +
                                  " (see the header of executor_load.cc)");
    }
    if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
    const std::string value = argv[++i];
    if (key == "conf") {
      const size_t eq = value.find('=');
      if (eq == std::string::npos) throw std::invalid_argument("--conf wants KEY=VALUE: " + value);
      o.conf.emplace_back(value.substr(0, eq), value.substr(eq + 1));
    } else if (!assignOption(kIntOptions, key, value, o)) {
      assignOption(kInt64Options, key, value, o);
    }
  }
  if (o.nodes < 1 || o.nodes > 240 || o.executors < 1 || o.cores < 1) {
    throw std::invalid_argument("--nodes 1..240, --executors and --cores at least 1");
  }
  return o;
}

std::string loadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

// The AM's allocation tick histogram: cumulative bucket counts by upper bound, sum and count.
struct TickHistogram {
  std::map<double, double> buckets;
  double sum = 0;
  double count = 0;
};

TickHistogram tickHistogram(rest::HttpClient& am) {
  TickHistogram h;
  const std::string text = am.request("GET", "metrics").body;
  std::istringstream lines(text);
  const std::string name = "tide_allocation_tick_duration_seconds";
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name, 0) != 0) continue;
    const double value = std::stod(line.substr(line.rfind(' ') + 1));
    if (line.rfind(name + "_bucket", 0) == 0) {
      const size_t le = line.find("le=\"") + 4;
      const std::string bound = line.substr(le, line.find('"', le) - le);
      h.buckets[bound == "+Inf" ? INFINITY : std::stod(bound)] = value;
    } else if (line.rfind(name + "_sum", 0) == 0) {
      h.sum = value;
    } else if (line.rfind(name + "_count", 0) == 0) {
      h.count = value;
    }
  }
  return h;
}

// Over the window between two scrapes: ticks, their mean, and the bucket bound below which 99%
// of them fell.
void writeTicks(rest::JsonWriter& w, const TickHistogram& before, const TickHistogram& after) {
  const double count = after.count - before.count;
  double p99Bound = NAN;
  for (const auto& [bound, cumulative] : after.buckets) {
    const double inWindow =
        cumulative - (before.buckets.count(bound) ? before.buckets.at(bound) : 0);
    if (count > 0 && inWindow >= 0.99 * count) {
      p99Bound = bound;
      break;
    }
  }
  w.key("tick").startObject().field("count", static_cast<int64_t>(count));
  w.field("meanMs", count > 0 ? (after.sum - before.sum) / count * 1000 : 0.0);
  w.field("p99AtMostMs", std::isinf(p99Bound) ? -1.0 : p99Bound * 1000).endObject();
}

struct Window {
  Clock::time_point start;
  ProcessSample am;
  double selfCpu = 0;
  TickHistogram ticks;
};

class Bench {
 public:
  explicit Bench(Options options) : options_(std::move(options)) {}

  int run() {
    char pattern[] = "/tmp/tide-executor-load-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    work_ = pattern;
    try {
      measure();
    } catch (...) {
      teardown();
      throw;
    }
    teardown();
    std::filesystem::remove_all(work_);
    return 0;
  }

 private:
  void measure() {
    deploy::EmbeddedClusterOptions cluster;
    cluster.binDir = selfDirectory();
    cluster.workDir = work_ + "/cluster";
    cluster.nodes = 1;
    // The real node holds the AM and nothing else: 1 GiB is the AM's, and its 4 cores make it
    // as large as an executor (the AM checks that some node can hold one).
    cluster.nmConf = {{"nm.cores", std::to_string(options_.cores)}, {"nm.memory", "1g"}};
    cluster_ = std::make_unique<deploy::EmbeddedCluster>(cluster);
    client_ =
        std::make_unique<deploy::ClusterClient>(cluster_->rmAddress(), cluster_->adminToken());

    const std::string jobFile = work_ + "/warm.json";
    std::ofstream(jobFile)
        << R"({"name": "warm", "stages": [{"id": "one", "tasks": 1, "builtin": "noop"}]})";
    std::vector<std::pair<std::string, std::string>> conf = {
        {"am.memory", "1g"},
        {"executor.memory", "256m"},
        {"executor.cores", std::to_string(options_.cores)},
        {"dynamicAllocation.enabled", "false"},
        {"executor.instances", std::to_string(options_.executors)},
        {"ui.port", "0"},
        {"history.dir", work_ + "/history"},
        // The journal's fsyncs measure the disk, not the AM (bench/am_restart measures them).
        {"am.stagingDir", "none"}};
    for (const auto& kv : options_.conf) conf.push_back(kv);
    Properties props;
    for (const auto& [key, value] : conf) props.set(key, value);
    deploy::AmSubmission submission;
    submission.jobFile = jobFile;
    submission.jobName = "executor-load";
    submission.conf = conf;
    submission.session = true;
    submission.binDir = selfDirectory();
    appId_ = deploy::submitApplicationMaster(*client_, submission, props, &controlToken_);

    std::string trackingUrl;
    waitFor("the AM to run", std::chrono::seconds(60), [&] {
      const rest::ApplicationReport report = client_->application(appId_);
      if (deploy::isFinal(report)) throw std::runtime_error("the AM ended: " + report.diagnostics);
      trackingUrl = report.trackingUrl;
      return report.state == "RUNNING" && !trackingUrl.empty();
    });
    rest::HttpClientOptions withToken;
    withToken.defaultHeaders = {{"Authorization", "Bearer " + controlToken_}};
    withToken.requestTimeout = std::chrono::milliseconds(30000);
    am_ = std::make_unique<rest::HttpClient>(trackingUrl, withToken);
    waitFor("the AM's status", std::chrono::seconds(30), [&] {
      amPid_ = static_cast<pid_t>(am_->getJson("api/v1/status")["pid"].GetInt64());
      return amPid_ > 0;
    });

    // The simulated nodes join only now, so that the AM's container is on the real node.
    swarm_ = std::make_unique<ExecutorSwarm>([this](const std::string& container, int status) {
      FakeNode* node = nodeOf(container);
      if (node != nullptr) node->containerExited(container, status);
    });
    swarmThread_ = std::thread([this] { swarm_->run(); });
    std::string secret;
    std::ifstream(cluster_->secretFile()) >> secret;
    const std::string credential = rest::nodeCredentialOf(secret);
    const int perNode = (options_.executors + options_.nodes - 1) / options_.nodes;
    for (int i = 0; i < options_.nodes; ++i) {
      const std::string host = "127.0.0." + std::to_string(10 + i);
      nodes_.push_back(std::make_unique<FakeNode>(
          host, rest::Resource{int64_t{perNode} * 256, perNode * options_.cores},
          cluster_->rmAddress(), credential,
          [this](const rest::ContainerLaunchRequest& launch, const std::string& nodeId,
                 const std::string& nodeHost) { onLaunch(launch, nodeId, nodeHost); },
          [this](const std::string& container) { swarm_->stop(container); }));
    }
    heartbeats_ = std::thread([this] { heartbeatLoop(); });

    const auto joinStart = Clock::now();
    waitFor("every executor to register", std::chrono::seconds(300), [&] {
      accumulate();
      return registered_ >= options_.executors;
    });
    const double joinSeconds = std::chrono::duration<double>(Clock::now() - joinStart).count();
    std::cerr << "executor_load: " << registered_ << " executors registered with the AM (pid "
              << amPid_ << ") in " << joinSeconds << " s; idle window" << std::endl;
    // The one-task warm-up job ran on the first executors; let its end settle.
    std::this_thread::sleep_for(std::chrono::seconds(1));

    rest::JsonWriter w;
    w.startObject()
        .field("executors", options_.executors)
        .field("coresPerExecutor", options_.cores)
        .field("nodes", options_.nodes)
        .field("secondsUntilAllRegistered", joinSeconds);

    // Idle: every executor long-polls.
    Window idle = open();
    std::this_thread::sleep_for(std::chrono::seconds(options_.idleSeconds));
    close(w, "idle", idle);

    const std::string job = R"({"name": "noop", "stages": [{"id": "many", "tasks": )" +
                            std::to_string(options_.tasks) + R"(, "builtin": "noop"}]})";
    const rest::HttpResponse posted =
        am_->request("POST", "api/v1/jobs", job, {{"Content-Type", "application/json"}});
    if (posted.status != 201) {
      throw std::runtime_error("POST /api/v1/jobs: HTTP " + std::to_string(posted.status) + " " +
                               posted.body);
    }
    std::this_thread::sleep_for(std::chrono::seconds(options_.warmupSeconds));
    std::cerr << "executor_load: busy window" << std::endl;
    Window busy = open();
    std::this_thread::sleep_for(std::chrono::seconds(options_.busySeconds));
    close(w, "busy", busy);
    w.field("loadAverageAtEnd", loadAverage());
    w.key("errors").startArray();
    for (const std::string& e : errors_) w.value(e);
    w.endArray().endObject();
    std::cout << w.str() << std::endl;
  }

  void onLaunch(const rest::ContainerLaunchRequest& launch, const std::string& nodeId,
                const std::string& host) {
    auto env = [&](const char* key) {
      auto it = launch.environment.find(key);
      return it == launch.environment.end() ? std::string() : it->second;
    };
    SimulatedExecutor e;
    e.executorId = env("TIDE_EXECUTOR_ID");
    e.containerId = launch.containerId;
    e.amAddress = env("TIDE_AM_ADDRESS");
    e.appSecret = env("TIDE_APP_SECRET");
    e.nodeId = env("TIDE_NODE_ID").empty() ? nodeId : env("TIDE_NODE_ID");
    e.host = host;
    e.cores = options_.cores;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& node : nodes_) {
        if (node->nodeId() == nodeId) containerNode_[launch.containerId] = node.get();
      }
    }
    swarm_->add(std::move(e));
  }

  FakeNode* nodeOf(const std::string& container) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = containerNode_.find(container);
    return it == containerNode_.end() ? nullptr : it->second;
  }

  void heartbeatLoop() {
    while (!stopping_) {
      const auto start = Clock::now();
      for (auto& node : nodes_) {
        try {
          node->heartbeat();
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lock(mutex_);
          if (errors_.size() < 20) errors_.push_back(std::string("node heartbeat: ") + e.what());
        }
      }
      const auto interval = std::chrono::milliseconds(nodes_.front()->heartbeatIntervalMs());
      while (!stopping_ && Clock::now() < start + interval) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }

  // Folds the swarm's new stats into the totals.
  SwarmStats accumulate() {
    SwarmStats s = swarm_->takeStats();
    registered_ += s.registered;
    std::lock_guard<std::mutex> lock(mutex_);
    for (const std::string& e : s.errors) {
      if (errors_.size() < 20) errors_.push_back(e);
    }
    return s;
  }

  Window open() {
    accumulate();
    Window window;
    window.start = Clock::now();
    window.am = sampleProcess(amPid_);
    window.selfCpu = selfCpuSeconds();
    window.ticks = tickHistogram(*am_);
    return window;
  }

  void close(rest::JsonWriter& w, const char* name, const Window& start) {
    const SwarmStats s = accumulate();
    const ProcessSample am = sampleProcess(amPid_);
    const double seconds = std::chrono::duration<double>(Clock::now() - start.start).count();
    const double self = selfCpuSeconds() - start.selfCpu;
    const TickHistogram ticks = tickHistogram(*am_);
    w.key(name).startObject();
    w.field("seconds", seconds)
        .field("loadAverage", loadAverage())
        .field("liveExecutors", swarm_->live())
        .field("tasksPerSecond", static_cast<double>(s.tasksReported) / seconds)
        .field("syncsPerSecond", static_cast<double>(s.syncs) / seconds)
        .field("retries", s.retries)
        .field("exited", s.exited);
    writeLatencies(w, "syncMs", latenciesOf(s.syncMs));
    writeLatencies(w, "pollMs", latenciesOf(s.pollMs));
    w.key("am")
        .startObject()
        .field("cpuCoresUsed", (am.cpuSeconds - start.am.cpuSeconds) / seconds)
        .field("rssMiB", static_cast<double>(am.rssKib) / 1024)
        .field("threads", am.threads)
        .endObject();
    w.field("generatorCpuCoresUsed", self / seconds);
    writeTicks(w, start.ticks, ticks);
    w.endObject();
  }

  template <typename Check>
  void waitFor(const std::string& what, std::chrono::seconds bound, Check check) {
    const auto deadline = Clock::now() + bound;
    std::string last;
    while (Clock::now() < deadline) {
      try {
        if (check()) return;
      } catch (const std::runtime_error& e) {
        last = e.what();
        if (last.rfind("the AM ended", 0) == 0) throw;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    throw std::runtime_error("timed out waiting for " + what + (last.empty() ? "" : ": " + last) +
                             " (registered " + std::to_string(registered_) + ")");
  }

  void teardown() {
    if (client_ && !appId_.empty()) {
      try {
        client_->kill(appId_);
      } catch (const std::exception&) {
      }
    }
    stopping_ = true;
    if (heartbeats_.joinable()) heartbeats_.join();
    if (swarm_) swarm_->quit();
    if (swarmThread_.joinable()) swarmThread_.join();
    nodes_.clear();
    if (cluster_) cluster_->stop();
  }

  Options options_;
  std::string work_;
  std::unique_ptr<deploy::EmbeddedCluster> cluster_;
  std::unique_ptr<deploy::ClusterClient> client_;
  std::unique_ptr<rest::HttpClient> am_;
  std::string appId_;
  std::string controlToken_;
  pid_t amPid_ = 0;
  std::unique_ptr<ExecutorSwarm> swarm_;
  std::thread swarmThread_;
  std::vector<std::unique_ptr<FakeNode>> nodes_;
  std::thread heartbeats_;
  std::atomic<bool> stopping_{false};
  int64_t registered_ = 0;
  std::mutex mutex_;
  std::map<std::string, FakeNode*> containerNode_;  // guarded by mutex_
  std::vector<std::string> errors_;                 // guarded by mutex_
};

}  // namespace
}  // namespace tide::bench

int main(int argc, char** argv) {
  try {
    tide::bench::Bench bench(tide::bench::parse(argc, argv));
    return bench.run();
  } catch (const std::exception& e) {
    std::cerr << "executor_load: " << e.what() << "\n";
    return 1;
  }
}

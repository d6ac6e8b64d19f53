// Container allocations per second through tide-rm's `allocate`, with 100 registered nodes
// (issue 3; the aim is 50,000/s in-process).
//
// Each iteration is one AM heartbeat: it releases the containers it got last time and asks
// for `batch` new ones (numContainers replaces the ask); then the simulated node managers that
// held the released containers heartbeat, which frees them. So the cluster never fills up
// and every figure includes the release and node-heartbeat work an allocation causes.
//   BM_AllocateInProcess  calls ClusterState directly (the scheduler and state machine alone);
//   BM_AllocateOverRest   sends the allocate through the real REST endpoint of an in-process
//                         ResourceManagerServer on loopback (HTTP + JSON + lock included); the
//                         node heartbeats stay in-process.
// Run: build/bin/rm_bench  (allocations/s is the `allocations` counter)

#include <benchmark/benchmark.h>

#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/logging.h"
#include "deploy/rm/cluster_state.h"
#include "deploy/rm/rm_server.h"
#include "rest/http_client.h"
#include "rest/http_server.h"
#include "rest/json.h"
#include "rest/messages/cluster.h"

namespace tide::rm {
namespace {

constexpr int kNodes = 100;
constexpr int kNodeCores = 64;
constexpr int64_t kNodeMemoryMb = 256 * 1024;

rest::AllocateRequest nextRequest(int64_t responseId, int batch,
                                  const std::vector<rest::Container>& previous) {
  rest::AllocateRequest request;
  request.responseId = responseId;
  rest::ResourceRequest ask;
  ask.priority = 1;
  ask.resource = rest::Resource{1024, 1};
  ask.numContainers = batch;
  request.asks.push_back(ask);
  for (const rest::Container& container : previous) request.releases.push_back(container.id);
  return request;
}

// The node managers that held `released` report in (they never started them), freeing them.
void heartbeatHolders(ClusterState& state, const std::vector<rest::Container>& released) {
  std::set<std::string> nodes;
  for (const rest::Container& container : released) nodes.insert(container.nodeId);
  for (const std::string& node : nodes) state.nodeHeartbeat(node, {});
}

// Fixed seeds and cluster timestamp, so that every run places the same containers.
ClusterStateOptions benchOptions() {
  ClusterStateOptions options;
  options.clusterTimestamp = 1700000000000;
  options.placementSeed = 1;
  return options;
}

// Registers `nodes` nodes of `capacity` and heartbeats each once, so that they take containers.
void addReadyNodes(ClusterState& state, int nodes, rest::Resource capacity) {
  for (int i = 0; i < nodes; ++i) {
    const auto node = state.registerNode({"node" + std::to_string(i), 8042, capacity});
    state.nodeHeartbeat(node.nodeId, {});
  }
}

std::string submitAndRegister(ClusterState& state) {
  const std::string app = state.newApplication().applicationId;
  rest::ApplicationSubmission submission;
  submission.applicationId = app;
  submission.command = "am";
  submission.resource = rest::Resource{1024, 1};
  state.submitApplication(submission);
  const std::string attempt = state.applicationReport(app).currentAppAttemptId;
  state.registerApplicationMaster(attempt, {"127.0.0.1", 0, ""});
  return attempt;
}

// Containers allocated per second, over the cluster's nodes.
void reportAllocations(benchmark::State& bench, int64_t allocations) {
  bench.counters["allocations"] =
      benchmark::Counter(static_cast<double>(allocations), benchmark::Counter::kIsRate);
  bench.counters["nodes"] = kNodes;
}

// Asks of 1, 10 and 100 containers per allocate call. Real time: over REST the server's threads
// do much of the work, which the client's CPU time misses.
void batchSizes(benchmark::internal::Benchmark* bench) {
  bench->Arg(1)->Arg(10)->Arg(100)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

void BM_AllocateInProcess(benchmark::State& bench) {
  initLogging(LogOptions{Severity::kWarn, LogFormat::kText});
  const int batch = static_cast<int>(bench.range(0));
  ManualClock clock(0);
  ClusterState state(benchOptions(), clock, seededSecretGenerator(1));
  addReadyNodes(state, kNodes, rest::Resource{kNodeMemoryMb, kNodeCores});
  const std::string attempt = submitAndRegister(state);
  state.takeOutbox();

  int64_t responseId = 0;
  int64_t allocations = 0;
  std::vector<rest::Container> previous;
  for (auto _ : bench) {
    rest::AllocateResponse response =
        state.allocate(attempt, nextRequest(responseId, batch, previous));
    responseId = response.responseId;
    allocations += static_cast<int64_t>(response.allocatedContainers.size());
    heartbeatHolders(state, previous);
    previous = std::move(response.allocatedContainers);
    state.takeOutbox();
  }
  reportAllocations(bench, allocations);
}
BENCHMARK(BM_AllocateInProcess)->Apply(batchSizes);

void BM_AllocateOverRest(benchmark::State& bench) {
  initLogging(LogOptions{Severity::kWarn, LogFormat::kText});
  const int batch = static_cast<int>(bench.range(0));
  // A stand-in node manager that accepts the AM container launch, so the attempt lives.
  rest::HttpServerOptions quiet;
  quiet.log = [](const std::string&) {};
  rest::HttpServer fakeNodeManager(quiet);
  fakeNodeManager.post(
      "/ws/v1/node/containers",
      [](const httplib::Request&, httplib::Response& res) { rest::replyJson(res, "{}", 201); });
  const int nodeManagerPort = fakeNodeManager.start();

  ResourceManagerServerOptions options;
  options.config.port = 0;
  options.placementSeed = 1;
  options.secrets = seededSecretGenerator(1);
  options.serverThreads = 4;
  ResourceManagerServer server(options);
  server.start();
  const std::string attempt = server.withState([&](ClusterState& state) {
    // The AM goes to the one reachable node; the other 99 join afterwards.
    const auto first = state.registerNode(
        {"127.0.0.1", nodeManagerPort, rest::Resource{kNodeMemoryMb, kNodeCores}});
    state.nodeHeartbeat(first.nodeId, {});  // ready for containers
    const std::string id = submitAndRegister(state);
    for (int i = 1; i < kNodes; ++i) {
      const auto node = state.registerNode(
          {"node" + std::to_string(i), 8042, rest::Resource{kNodeMemoryMb, kNodeCores}});
      state.nodeHeartbeat(node.nodeId, {});
    }
    return id;
  });
  const std::string token = server.withState([&](ClusterState& s) { return s.amToken(attempt); });
  rest::HttpClientOptions clientOptions;
  clientOptions.defaultHeaders = {{"Authorization", "Bearer " + token}};
  rest::HttpClient client(server.baseUrl(), clientOptions);
  const std::string path = "/ws/v1/am/" + attempt + "/allocate";

  int64_t responseId = 0;
  int64_t allocations = 0;
  std::vector<rest::Container> previous;
  for (auto _ : bench) {
    rest::AllocateResponse response = rest::allocateResponseFromJson(
        client.postJson(path, toJson(nextRequest(responseId, batch, previous))));
    responseId = response.responseId;
    allocations += static_cast<int64_t>(response.allocatedContainers.size());
    server.withState([&](ClusterState& state) { heartbeatHolders(state, previous); });
    previous = std::move(response.allocatedContainers);
  }
  reportAllocations(bench, allocations);
}
BENCHMARK(BM_AllocateOverRest)->Apply(batchSizes);

// One scheduling pass, which every node heartbeat that frees something and every allocate call
// runs, on a cluster of `nodes` nodes (8 cores each) with 100 running applications:
//   BM_ScheduleSaturated  every node is full and every application still asks for more (a busy
//                         cluster: each pass finds no room);
//   BM_ScheduleIdle       the applications hold what they asked for and ask for nothing more.
// Passes per second is the figure (issue 16 item 3: tide-rm under SLS-style load).
void scheduleBench(benchmark::State& bench, bool saturated) {
  initLogging(LogOptions{Severity::kWarn, LogFormat::kText});
  const int nodes = static_cast<int>(bench.range(0));
  constexpr int kApplications = 100;
  ManualClock clock(0);
  ClusterState state(benchOptions(), clock, seededSecretGenerator(1));
  addReadyNodes(state, nodes, Resource{16384, 8});
  const int freeCores = nodes * 8 - kApplications;
  std::vector<std::string> attempts;
  for (int a = 0; a < kApplications; ++a) attempts.push_back(submitAndRegister(state));
  for (const std::string& attempt : attempts) {
    rest::AllocateRequest request;
    rest::ResourceRequest ask;
    ask.priority = 1;
    ask.resource = rest::Resource{1024, 1};
    // Saturated: together they ask for twice the cluster; idle: for a tenth of it.
    ask.numContainers =
        saturated ? 2 * freeCores / kApplications + 1 : std::max(1, freeCores / kApplications / 10);
    request.asks.push_back(ask);
    state.allocate(attempt, request);
  }
  state.takeOutbox();
  for (auto _ : bench) state.schedule();
  bench.counters["passes"] =
      benchmark::Counter(static_cast<double>(bench.iterations()), benchmark::Counter::kIsRate);
  bench.counters["nodes"] = nodes;
}

void BM_ScheduleSaturated(benchmark::State& bench) {
  scheduleBench(bench, true);
}
void BM_ScheduleIdle(benchmark::State& bench) {
  scheduleBench(bench, false);
}
BENCHMARK(BM_ScheduleSaturated)->Arg(250)->Arg(1000)->Arg(4000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ScheduleIdle)->Arg(250)->Arg(1000)->Arg(4000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tide::rm

BENCHMARK_MAIN();

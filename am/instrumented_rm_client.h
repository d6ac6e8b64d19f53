#pragma once

// A ResourceManagerClient that counts and times every call of the one it wraps, for
// tide_rm_requests_total and tide_rm_request_duration_seconds. Whatever the backend (tide-rm,
// Slurm), the AM sees the same calls, so the metrics mean the same thing.

#include <chrono>
#include <memory>

#include "am/containers/resource_manager_client.h"
#include "am/status/metrics.h"

namespace tide::am {

class InstrumentedResourceManagerClient final : public ResourceManagerClient {
 public:
  InstrumentedResourceManagerClient(std::unique_ptr<ResourceManagerClient> inner,
                                    AmMetrics& metrics)
      : inner_(std::move(inner)), metrics_(metrics) {}

  void setExecutorTemplate(const ExecutorTemplate& executorTemplate) override {
    inner_->setExecutorTemplate(executorTemplate);
  }
  rest::RegisterApplicationMasterResponse registerAm(const AmEndpoint& endpoint) override {
    return measured("register", [&] { return inner_->registerAm(endpoint); });
  }
  HeartbeatResult heartbeat(const ContainerAsk& ask) override {
    return measured("allocate", [&] { return inner_->heartbeat(ask); });
  }
  void launchExecutor(const rest::Container& container, const ExecutorLaunch& launch) override {
    measured("launch", [&] {
      inner_->launchExecutor(container, launch);
      return 0;
    });
  }
  void unregister(const std::string& finalStatus, const std::string& diagnostics) override {
    measured("unregister", [&] {
      inner_->unregister(finalStatus, diagnostics);
      return 0;
    });
  }

  // Not an RM call: a node manager's, for the status page.
  Status readContainerLog(const rest::Container& container, const std::string& applicationId,
                          const std::string& path, std::optional<int64_t> tailBytes,
                          std::string* content) override {
    return inner_->readContainerLog(container, applicationId, path, tailBytes, content);
  }

  ResourceManagerClient& inner() { return *inner_; }

 private:
  template <typename Call>
  auto measured(const char* call, Call&& body) -> decltype(body()) {
    const auto start = std::chrono::steady_clock::now();
    auto finish = [&](const char* outcome) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      metrics_.rmRequestDuration.labels({call}).observe(seconds);
      metrics_.rmRequests.labels({call, outcome}).inc();
    };
    try {
      auto result = body();
      finish("ok");
      return result;
    } catch (...) {
      finish("error");
      throw;
    }
  }

  std::unique_ptr<ResourceManagerClient> inner_;
  AmMetrics& metrics_;
};

}  // namespace tide::am

#pragma once

// A MasterControl (am/master_control.h) of the first attempt of application_1_0001 that answers
// every read with an empty document and takes every control request, for tests and harnesses
// that drive the AM's HTTP handlers without an AM: a stand-in overrides only what it is about.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "am/master_control.h"

namespace tide::testing_support {

class StandInMasterControl : public am::MasterControl {
 public:
  StandInMasterControl() {
    info_.applicationId = "application_1_0001";
    info_.attemptId = "appattempt_1_0001_000001";
  }

  const am::MasterInfo& info() const override { return info_; }
  TimeMs nowMs() const override { return 0; }
  std::shared_ptr<const am::StatusSnapshot> status() override {
    return std::make_shared<am::StatusSnapshot>();
  }
  std::optional<am::JobSummary> job(const std::string&) override { return std::nullopt; }
  std::vector<am::JobSummary> jobs() override { return {}; }
  std::vector<am::CachedStageSummary> cachedStages() override { return {}; }
  std::vector<am::DecisionRecord> decisions(size_t) override { return {}; }
  const am::AllocationHistory& history() const override { return history_; }
  std::string metricsText() const override { return ""; }
  std::string submitJob(am::Job) override { return ""; }
  Status unpersist(const std::string&) override { return Status(); }
  Status changeBounds(std::optional<int>, std::optional<int>, std::optional<int>,
                      const std::string&, allocation::Bounds*) override {
    return Status();
  }
  Status registerExecutor(const rest::ExecutorRegistration&, const std::string&,
                          rest::ExecutorRegistered*) override {
    return Status();
  }
  Status syncExecutor(const std::string&, const rest::ExecutorSync&,
                      rest::ExecutorSyncReply*) override {
    return Status();
  }
  rest::CommitDecision decideCommit(const std::string&, const rest::CommitRequest&) override {
    return {};
  }

 protected:
  am::MasterInfo info_;
  am::AllocationHistory history_;
};

}  // namespace tide::testing_support

#pragma once

// An in-memory slurmrestd for the Slurm backend's unit tests: the v0.0.38 endpoints tide
// uses, answering in the shapes recorded from the real one (tests/slurm/data/). Tests move
// jobs between states by hand and look at what was submitted and cancelled.

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "rest/http_server.h"
#include "rest/json.h"
#include "tests/support/locked.h"

namespace tide::testing_support {

class FakeSlurmrestd {
 public:
  struct Job {
    int64_t id = 0;
    std::string name;
    std::string state = "PENDING";
    int64_t exitCode = 0;
    std::string batchHost;
    std::string comment;
    std::string body;  // the submission as received
  };

  explicit FakeSlurmrestd(const std::string& unixSocket = "") {
    rest::HttpServerOptions options;
    options.unixSocketPath = unixSocket;
    options.log = [](const std::string&) {};
    server_ = std::make_unique<rest::HttpServer>(options);
    server_->post("/slurm/v0.0.38/job/submit", [this](const auto& req, auto& res) {
      std::lock_guard<std::mutex> lock(mu_);
      tokens_.push_back(req.get_header_value("X-SLURM-USER-TOKEN"));
      users_.push_back(req.get_header_value("X-SLURM-USER-NAME"));
      if (unavailableSubmits_ > 0) {
        --unavailableSubmits_;
        reply(res, 500, R"([{"error_code": 1007, "error": "Protocol authentication error"}])", "");
        return;
      }
      auto body = rest::parseJson(req.body);
      const auto& job = body["job"];
      if (job.HasMember("partition") && std::string(job["partition"].GetString()) == "nope") {
        reply(res, 500, R"([{"error_code": 2000, "error": "Invalid partition name specified"}])",
              "");
        return;
      }
      Job created;
      created.id = nextId_++;
      created.name = job["name"].GetString();
      created.body = req.body;
      jobs_[created.id] = created;
      reply(res, 200, "[]",
            R"("job_id": )" + std::to_string(created.id) + R"(, "step_id": "BATCH")");
    });
    server_->get("/slurm/v0.0.38/jobs", [this](const auto& req, auto& res) {
      std::lock_guard<std::mutex> lock(mu_);
      tokens_.push_back(req.get_header_value("X-SLURM-USER-TOKEN"));
      ++listings_;
      if (unavailableListings_ > 0) {
        --unavailableListings_;
        reply(res, 500, R"([{"error_number": -1, "error": "Unspecified error"}])", R"("jobs": [])");
        return;
      }
      std::string list;
      for (const auto& [id, job] : jobs_) {
        if (!list.empty()) list += ",";
        rest::JsonWriter w;
        w.startObject()
            .field("job_id", job.id)
            .field("name", job.name)
            .field("job_state", job.state)
            .field("state_reason", job.state == "PENDING" ? "Resources" : "None")
            .field("exit_code", job.exitCode)
            .field("batch_host", job.batchHost)
            .field("comment", job.comment)
            .endObject();
        list += w.str();
      }
      reply(res, 200, "[]", R"("jobs": [)" + list + "]");
    });
    server_->del(R"(/slurm/v0.0.38/job/(\d+))", [this](const auto& req, auto& res) {
      std::lock_guard<std::mutex> lock(mu_);
      const int64_t id = std::stoll(req.matches[1]);
      auto it = jobs_.find(id);
      if (it == jobs_.end()) {
        reply(res, 500, R"([{"error_number": 2017, "error": "Invalid job id specified"}])", "");
        return;
      }
      cancelled_.push_back(id);
      if (it->second.state == "PENDING" || it->second.state == "RUNNING") {
        it->second.state = "CANCELLED";
        it->second.exitCode = 15;
      }
      reply(res, 200, "[]", "");
    });
    server_->post(R"(/slurm/v0.0.38/job/(\d+))", [this](const auto& req, auto& res) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = jobs_.find(std::stoll(req.matches[1]));
      auto body = rest::parseJson(req.body);
      if (it == jobs_.end() || !body.HasMember("comment")) {
        reply(res, 500, R"([{"error_number": 2017, "error": "Invalid job id specified"}])", "");
        return;
      }
      it->second.comment = body["comment"].GetString();
      reply(res, 200, "[]", "");
    });
    server_->start();
  }

  std::string url() const { return server_->baseUrl(); }

  // Adds a job that is not ours (another user's), or the AM's own.
  int64_t addJob(const std::string& name, const std::string& state) {
    std::lock_guard<std::mutex> lock(mu_);
    Job job;
    job.id = nextId_++;
    job.name = name;
    job.state = state;
    jobs_[job.id] = job;
    return job.id;
  }
  void setState(int64_t id, const std::string& state, int64_t exitCode = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    Job& job = jobs_.at(id);
    job.state = state;
    job.exitCode = exitCode;
    if (state != "PENDING") job.batchHost = "node1";
  }
  Job job(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    return jobs_.at(id);
  }
  std::vector<Job> jobs() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Job> all;
    for (const auto& [id, job] : jobs_) all.push_back(job);
    return all;
  }
  std::vector<int64_t> cancelled() { return testing_support::lockedCopy(mu_, cancelled_); }
  std::vector<std::string> tokens() { return testing_support::lockedCopy(mu_, tokens_); }
  std::vector<std::string> users() { return testing_support::lockedCopy(mu_, users_); }
  int listings() { return testing_support::lockedCopy(mu_, listings_); }
  void failSubmits(int count) {
    std::lock_guard<std::mutex> lock(mu_);
    unavailableSubmits_ = count;
  }
  void failListings(int count) {
    std::lock_guard<std::mutex> lock(mu_);
    unavailableListings_ = count;
  }

 private:
  // slurmrestd's envelope: meta, errors, then the call's own fields.
  static void reply(httplib::Response& res, int status, const std::string& errors,
                    const std::string& fields) {
    std::string body = R"({"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "errors": )" + errors;
    if (!fields.empty()) body += ", " + fields;
    body += "}";
    res.status = status;
    res.set_content(body, "application/json");
  }

  std::mutex mu_;
  std::map<int64_t, Job> jobs_;
  std::vector<int64_t> cancelled_;
  std::vector<std::string> tokens_;
  std::vector<std::string> users_;
  int64_t nextId_ = 100;
  int unavailableSubmits_ = 0;
  int unavailableListings_ = 0;
  int listings_ = 0;
  std::unique_ptr<rest::HttpServer> server_;
};

}  // namespace tide::testing_support
